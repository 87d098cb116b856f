// A fake of Slack's Web API (https://api.slack.com/web): chat.postMessage, conversations.replies and
// conversations.history under /api/, with Slack's shapes: HTTP 200 `{ok:false,error}` for refusals,
// 429 + Retry-After for rate limits, message metadata only with include_all_metadata, cursor pages.
// And Slack's OAuth v2 (https://docs.slack.dev/authentication/installing-with-oauth and
// /reference/methods/oauth.v2.access, checked Nov 2026): the authorize page at /oauth/v2/authorize
// (the installer approves at once, for the workspace named by `team`, and is sent back to the
// redirect URL with a code and the state), oauth.v2.access for a one-time code (each team its own
// bot token; token rotation: a refresh token and expires_in) and for `grant_type=refresh_token`, and
// the tokens an uninstall revokes. Every request keeps its Authorization header: `tokenOf` says which
// token a post used.
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { type Answer, FakeApi, type Fault, type Recorded, send } from './base';

/** How long Slack's rotating tokens last (https://docs.slack.dev/authentication/using-token-rotation). */
const ROTATED_TOKEN_SECONDS = 43_200;

/** A workspace the fake can install the app in. */
interface FakeTeam {
  id: string;
  name: string;
  /** Set: an org-wide install of this Enterprise Grid organisation (team is then null). */
  enterpriseId?: string;
  /**
   * Token rotation on: the installation's token lasts this many seconds and comes with a refresh
   * token; refreshed tokens last Slack's 12 hours.
   */
  expiresIn?: number;
}

interface IssuedToken {
  team: string;
  /** ms since epoch; undefined: does not expire. */
  expiresAt?: number;
  revoked?: boolean;
}

interface SlackMessage {
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

  /** The app's OAuth credentials, as its Basic Information page shows them. */
  readonly clientId = `${Date.now()}.${randomBytes(4).readUInt32BE()}`;
  readonly clientSecret = randomBytes(16).toString('hex');
  /** The app's Redirect URL (its OAuth settings): where the authorize page sends installers by default. */
  redirectUri = '';
  private readonly teams = new Map<string, FakeTeam>();
  private readonly tokens = new Map<string, IssuedToken>();
  private readonly codes = new Map<string, { team: string; redirectUri?: string }>();
  private readonly refreshTokens = new Map<string, FakeTeam>();
  /** Successful `grant_type=refresh_token` exchanges, by team. */
  readonly refreshes: string[] = [];
  /**
   * Set to act as Slack's chat.postMessage limit: "1 message per second to a specific channel"
   * (https://api.slack.com/methods/chat.postMessage#rate_limiting): a post sooner than this after the
   * channel's last accepted one is refused 429 `ratelimited` with Retry-After: 1, and counted.
   */
  channelIntervalMs?: number;
  /** Posts refused by `channelIntervalMs`, by channel. */
  readonly rateLimited = new Map<string, number>();
  private readonly lastPost = new Map<string, number>();

  constructor(readonly token = 'xoxb-test-token') {
    super();
  }

  /** A workspace that may install the app (through /oauth/v2/authorize?team=<id>). */
  team(team: FakeTeam): this {
    this.teams.set(team.id, team);
    return this;
  }

  /** What Slack does when a workspace uninstalls the app: every token it issued there stops working. */
  uninstall(team: string): void {
    for (const issued of this.tokens.values()) if (issued.team === team) issued.revoked = true;
    for (const [refresh, owner] of this.refreshTokens)
      if ((owner.enterpriseId ?? owner.id) === team) this.refreshTokens.delete(refresh);
  }

  /** Makes a team's live tokens expire now (as if their 12 hours were up). */
  expire(team: string): void {
    for (const issued of this.tokens.values()) if (issued.team === team) issued.expiresAt = Date.now() - 1;
  }

  /** The bot tokens issued to a team, oldest first. */
  tokensOf(team: string): string[] {
    return [...this.tokens].filter(([, issued]) => issued.team === team).map(([token]) => token);
  }

  /** The bearer token a request carried. */
  tokenOf(request: Recorded): string | undefined {
    return /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
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
    if (request.method === 'GET' && request.path === '/oauth/v2/authorize')
      return this.authorize(request, res);
    if (request.path === '/api/oauth.v2.access') return send(res, this.access(request));
    const refused = this.refusal(this.tokenOf(request));
    if (refused) return send(res, { status: 200, body: { ok: false, error: refused } });
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

  /** Why Slack would refuse this token, if it would. */
  private refusal(token: string | undefined): string | undefined {
    if (token === undefined) return 'not_authed';
    if (token === this.token) return undefined;
    const issued = this.tokens.get(token);
    if (!issued) return 'invalid_auth';
    if (issued.revoked) return 'token_revoked';
    if (issued.expiresAt !== undefined && issued.expiresAt <= Date.now()) return 'token_expired';
    return undefined;
  }

  /** The installer approves: back to the redirect URL with a one-time code and the state, untouched. */
  private authorize(request: Recorded, res: http.ServerResponse) {
    const q = request.query;
    const team = this.teams.get(q.get('team') ?? '');
    const redirect = q.get('redirect_uri') ?? this.redirectUri;
    if (q.get('client_id') !== this.clientId || !team || !redirect || !q.get('scope')) {
      res.writeHead(400, { 'content-type': 'text/plain' });
      return res.end('invalid authorize request');
    }
    const back = new URL(redirect);
    if (q.get('deny') === 'true') back.searchParams.set('error', 'access_denied');
    else {
      const code = `code-${randomBytes(12).toString('hex')}`;
      this.codes.set(code, { team: team.id, redirectUri: q.get('redirect_uri') ?? undefined });
      back.searchParams.set('code', code);
    }
    if (q.has('state')) back.searchParams.set('state', q.get('state')!);
    res.writeHead(302, { location: back.toString() });
    res.end();
  }

  /** oauth.v2.access: client credentials in the body (or HTTP Basic), then a code or a refresh token. */
  private access(request: Recorded): Answer {
    const refuse = (error: string): Answer => ({ status: 200, body: { ok: false, error } });
    const basic = /^Basic (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const [basicId, basicSecret] = basic ? Buffer.from(basic, 'base64').toString().split(':') : [];
    const clientId = String(request.body.client_id ?? basicId ?? '');
    const clientSecret = String(request.body.client_secret ?? basicSecret ?? '');
    if (clientId !== this.clientId) return refuse('invalid_client_id');
    if (clientSecret !== this.clientSecret) return refuse('bad_client_secret');
    const grant = request.body.grant_type ?? 'authorization_code';
    if (grant === 'refresh_token') {
      const team = this.refreshTokens.get(String(request.body.refresh_token ?? ''));
      if (!team) return refuse('invalid_refresh_token');
      this.refreshTokens.delete(String(request.body.refresh_token));
      this.refreshes.push(team.enterpriseId ?? team.id);
      const { access_token, refresh_token, expires_in } = this.issue(team, ROTATED_TOKEN_SECONDS);
      return { status: 200, body: { ok: true, token_type: 'bot', access_token, refresh_token, expires_in } };
    }
    if (grant !== 'authorization_code') return refuse('invalid_grant_type');
    const code = this.codes.get(String(request.body.code ?? ''));
    if (!code) return refuse('invalid_code');
    // A code is good once, used or not.
    this.codes.delete(String(request.body.code));
    if (code.redirectUri !== undefined && request.body.redirect_uri !== code.redirectUri)
      return refuse('bad_redirect_uri');
    const team = this.teams.get(code.team)!;
    const org = team.enterpriseId;
    return {
      status: 200,
      body: {
        ok: true,
        app_id: 'A0FAKEAPP',
        authed_user: { id: 'U0INSTALLER' },
        scope:
          'app_mentions:read,commands,chat:write,channels:history,groups:history,im:history,mpim:history',
        token_type: 'bot',
        bot_user_id: `UBOT${team.id.slice(1)}`.slice(0, 11),
        team: org ? null : { id: team.id, name: team.name },
        enterprise: org ? { id: org, name: team.name } : null,
        is_enterprise_install: org !== undefined,
        ...this.issue(team, team.expiresIn),
      },
    };
  }

  /** A bot token for the team; with `seconds`, a rotating one and its refresh token. */
  private issue(team: FakeTeam, seconds?: number) {
    const access_token = `xoxb-${team.id}-${randomBytes(8).toString('hex')}`;
    const owner = team.enterpriseId ?? team.id;
    this.tokens.set(access_token, {
      team: owner,
      ...(seconds ? { expiresAt: Date.now() + seconds * 1000 } : {}),
    });
    if (!seconds) return { access_token };
    const refresh_token = `xoxe-1-${randomBytes(12).toString('hex')}`;
    this.refreshTokens.set(refresh_token, team);
    return { access_token, refresh_token, expires_in: seconds };
  }

  private post(body: Record<string, unknown>): Answer {
    const channel = String(body.channel);
    const last = this.lastPost.get(channel);
    if (
      this.channelIntervalMs !== undefined &&
      last !== undefined &&
      Date.now() - last < this.channelIntervalMs
    ) {
      this.rateLimited.set(channel, (this.rateLimited.get(channel) ?? 0) + 1);
      return { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'retry-after': '1' } };
    }
    this.lastPost.set(channel, Date.now());
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
