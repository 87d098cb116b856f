// A fake of Slack's Web API (https://api.slack.com/web): chat.postMessage, conversations.replies and
// conversations.history under /api/, with Slack's shapes: HTTP 200 `{ok:false,error}` for refusals,
// 429 + Retry-After for rate limits, message metadata only with include_all_metadata, cursor pages.
import type http from 'node:http';
import { type Answer, FakeApi, type Fault, type Recorded, send } from './base';

export interface SlackMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  text: string;
  bot_id?: string;
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
}

/** A Slack-style refusal: HTTP 200 with `{ ok: false, error }`. */
export function slackError(error: string): Fault {
  return { status: 200, body: { ok: false, error } };
}

export class FakeSlack extends FakeApi {
  readonly messages: SlackMessage[] = [];
  /** Set false to act like an app whose reads come back without metadata (history "without our metadata"). */
  metadataVisible = true;
  /** Slack returns at most `limit` messages a page; a smaller cap here makes tests page. */
  pageSize = 1000;
  private seq = 0;

  constructor(readonly token = 'xoxb-test-token') {
    super();
  }

  /** Posts that reached chat.postMessage (accepted or not). */
  posts(): Recorded[] {
    return this.to('/api/chat.postMessage');
  }

  postsFor(effectId: string): Recorded[] {
    return this.posts().filter((p) => metadataOf(p.body)?.event_payload.effect_id === effectId);
  }

  /** What the channel actually shows for our effect id. */
  delivered(effectId: string): SlackMessage[] {
    return this.messages.filter((m) => m.metadata?.event_payload.effect_id === effectId);
  }

  /** Other people's messages in a thread or channel, so that lookups have to page past them. */
  seed(channel: string, count: number, threadTs?: string): void {
    for (let i = 0; i < count; i++)
      this.messages.push({ channel, ts: this.nextTs(), thread_ts: threadTs, text: 'noise' });
  }

  protected errorBody(status: number): unknown {
    return { ok: false, error: status === 429 ? 'ratelimited' : 'fatal_error' };
  }

  private nextTs(): string {
    this.seq += 1;
    return `${Math.floor(Date.now() / 1000)}.${String(this.seq).padStart(6, '0')}`;
  }

  protected handle(request: Recorded, res: http.ServerResponse) {
    if (request.headers.authorization !== `Bearer ${this.token}`)
      return send(res, { status: 200, body: { ok: false, error: 'invalid_auth' } });
    switch (request.path) {
      case '/api/chat.postMessage':
        return this.write(res, () => this.post(request.body));
      // A thread reads oldest first (parent, then replies); a channel's history newest first.
      case '/api/conversations.replies':
        return send(
          res,
          this.read(request.body, 1, (m) => m.ts === request.body.ts || m.thread_ts === request.body.ts),
        );
      case '/api/conversations.history':
        return send(
          res,
          this.read(request.body, -1, (m) => !m.thread_ts || m.thread_ts === m.ts),
        );
      default:
        return send(res, { status: 404, body: { ok: false, error: 'unknown_method' } });
    }
  }

  private post(body: Record<string, unknown>): Answer {
    const message: SlackMessage = {
      channel: String(body.channel),
      ts: this.nextTs(),
      thread_ts: body.thread_ts ? String(body.thread_ts) : undefined,
      text: String(body.text ?? ''),
      bot_id: 'B0FAKE',
      metadata: metadataOf(body),
    };
    this.messages.push(message);
    return { status: 200, body: { ok: true, channel: message.channel, ts: message.ts, message } };
  }

  /** One page of a channel's or thread's messages in `order` of ts, from `oldest`, by cursor. */
  private read(body: Record<string, unknown>, order: 1 | -1, belongs: (m: SlackMessage) => boolean): Answer {
    const oldest = Number(body.oldest ?? 0);
    const limit = Math.min(Number(body.limit ?? 100), this.pageSize);
    const offset = body.cursor ? Number(Buffer.from(String(body.cursor), 'base64').toString()) : 0;
    const withMetadata = this.metadataVisible && String(body.include_all_metadata) === 'true';
    const all = this.messages
      .filter((m) => m.channel === body.channel && belongs(m) && Number(m.ts) >= oldest)
      .sort((a, b) => order * (Number(a.ts) - Number(b.ts)));
    const page = all
      .slice(offset, offset + limit)
      .map(({ metadata, ...m }) => (withMetadata ? { ...m, metadata } : m));
    const more = offset + limit < all.length;
    return {
      status: 200,
      body: {
        ok: true,
        messages: page,
        has_more: more,
        response_metadata: {
          next_cursor: more ? Buffer.from(String(offset + limit)).toString('base64') : '',
        },
      },
    };
  }
}

/** @slack/web-api sends form fields and JSON-encodes objects such as `metadata`. */
function metadataOf(body: Record<string, unknown>): SlackMessage['metadata'] {
  const raw = body.metadata;
  if (!raw) return undefined;
  return (typeof raw === 'string' ? JSON.parse(raw) : raw) as SlackMessage['metadata'];
}
