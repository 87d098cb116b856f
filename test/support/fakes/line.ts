// A fake of the LINE Messaging API (https://developers.line.biz/en/reference/messaging-api/): reply
// (single-use, expiring reply tokens; 400 "Invalid reply token"; the retry key refused with 400) and
// push (X-Line-Retry-Key: 409 with x-line-accepted-request-id once a key was accepted), and LINE's
// 400 with `details` for message objects it refuses (a subset of its checks: count, text, flex, quick reply).
// It serves several channels at once, each with its access token (401 for any other), and records which
// token each delivery carried.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { type Answer, FakeApi, type Recorded, send } from './base';

interface LineDelivery {
  to: string;
  via: 'reply' | 'push';
  /** The first message object's text ('' when it has none). */
  text: string;
  /** Every message object of the request, in order. */
  messages: Record<string, unknown>[];
  messageId: string;
  retryKey?: string;
  /** The channel access token the request carried (Authorization: Bearer). */
  accessToken: string;
}

export class FakeLine extends FakeApi {
  readonly deliveries: LineDelivery[] = [];
  private readonly tokens = new Map<string, { to: string; expiresAt: number; used: boolean }>();
  private readonly acceptedKeys = new Map<string, { requestId: string; messageId: string }>();
  private seq = 0;
  private readonly accessTokens = new Set<string>();

  constructor(readonly channelAccessToken = 'line-test-token') {
    super();
    this.accessTokens.add(channelAccessToken);
  }

  /** Another channel's access token, accepted from now on (a channel added, or a token reissued). */
  allowToken(token: string): this {
    this.accessTokens.add(token);
    return this;
  }

  /** A token LINE no longer accepts (revoked, or replaced by a reissue): 401 from now on. */
  refuseToken(token: string): this {
    this.accessTokens.delete(token);
    return this;
  }

  /** A reply token as a webhook event would carry it. */
  replyToken(to: string, validForMs = 60_000): { replyToken: string; replyTokenExpiresAt: string } {
    const replyToken = randomUUID().replace(/-/g, '');
    const expiresAt = Date.now() + validForMs;
    this.tokens.set(replyToken, { to, expiresAt, used: false });
    return { replyToken, replyTokenExpiresAt: new Date(expiresAt).toISOString() };
  }

  /** Uses a token up, as if someone else had replied with it. */
  spend(replyToken: string): void {
    this.tokens.get(replyToken)!.used = true;
  }

  deliveredTo(to: string): LineDelivery[] {
    return this.deliveries.filter((d) => d.to === to);
  }

  replies(): Recorded[] {
    return this.to('/v2/bot/message/reply');
  }

  pushes(): Recorded[] {
    return this.to('/v2/bot/message/push');
  }

  protected errorBody(status: number): unknown {
    return { message: status === 429 ? 'Too many requests' : 'An error occurred in the backend' };
  }

  protected handle(request: Recorded, res: http.ServerResponse) {
    const accessToken = bearerOf(request.headers.authorization);
    if (!accessToken || !this.accessTokens.has(accessToken))
      return send(res, {
        status: 401,
        body: {
          message:
            'Authentication failed. Confirm that the access token in the authorization header is valid.',
        },
      });
    const retryKey = request.headers['x-line-retry-key'] as string | undefined;
    const refused = refusals(request.body.messages);
    if (refused.length > 0)
      return send(res, {
        status: 400,
        body: { message: `The request body has ${refused.length} error(s)`, details: refused },
      });
    if (request.path === '/v2/bot/message/reply') {
      // Only push, multicast, narrowcast and broadcast accept a retry key.
      if (retryKey) return send(res, { status: 400, body: { message: 'The retry key is not supported' } });
      const token = this.tokens.get(String(request.body.replyToken));
      if (!token || token.used || token.expiresAt <= Date.now())
        return send(res, { status: 400, body: { message: 'Invalid reply token' } });
      return this.write(res, () => {
        token.used = true;
        return this.deliver(token.to, 'reply', request.body, accessToken);
      });
    }
    if (request.path === '/v2/bot/message/push') {
      const accepted = retryKey ? this.acceptedKeys.get(retryKey) : undefined;
      if (accepted)
        return send(res, {
          status: 409,
          body: {
            message: 'The retry key is already accepted',
            sentMessages: [{ id: accepted.messageId, quoteToken: 'q' }],
          },
          headers: { 'x-line-accepted-request-id': accepted.requestId },
        });
      return this.write(res, () => {
        const answer = this.deliver(String(request.body.to), 'push', request.body, accessToken, retryKey);
        if (retryKey)
          this.acceptedKeys.set(retryKey, {
            requestId: answer.headers!['x-line-request-id']!,
            messageId: this.lastMessageId(),
          });
        return answer;
      });
    }
    send(res, { status: 404, body: { message: 'Not found' } });
  }

  private lastMessageId(): string {
    return this.deliveries.at(-1)!.messageId;
  }

  private deliver(
    to: string,
    via: LineDelivery['via'],
    body: Record<string, unknown>,
    accessToken: string,
    retryKey?: string,
  ): Answer {
    this.seq += 1;
    const messageId = String(500000 + this.seq);
    const messages = body.messages as Record<string, unknown>[];
    const text = typeof messages[0]?.text === 'string' ? messages[0].text : '';
    this.deliveries.push({ to, via, text, messages, messageId, retryKey, accessToken });
    return {
      status: 200,
      body: { sentMessages: [{ id: messageId, quoteToken: 'q' }] },
      headers: { 'x-line-request-id': randomUUID() },
    };
  }
}

function bearerOf(authorization: string | undefined): string | undefined {
  return authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined;
}

/** What LINE says of message objects it refuses (https://developers.line.biz/en/reference/messaging-api/#error-responses). */
function refusals(messages: unknown): { message: string; property: string }[] {
  if (!Array.isArray(messages) || messages.length < 1 || messages.length > 5)
    return [{ message: 'Size must be between 1 and 5', property: 'messages' }];
  return messages.flatMap((m: Record<string, unknown>, i) => {
    const at = `messages[${i}]`;
    const problems: { message: string; property: string }[] = [];
    if (m.type === 'text' && (typeof m.text !== 'string' || m.text === ''))
      problems.push({ message: 'May not be empty', property: `${at}.text` });
    if (m.type === 'flex') {
      if (!m.altText) problems.push({ message: 'May not be empty', property: `${at}.altText` });
      if (!m.contents) problems.push({ message: 'must be specified', property: `${at}.contents` });
    }
    const items = (m.quickReply as { items?: unknown[] } | undefined)?.items;
    if (items && items.length > 13)
      problems.push({ message: 'Size must be between 1 and 13', property: `${at}.quickReply.items` });
    return problems;
  });
}
