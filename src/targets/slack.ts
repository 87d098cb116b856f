// Slack `chat.postMessage` in the source message's thread (or, when the bot asks, in the channel),
// with the answer's blocks. Slack has no idempotency key, so every post carries our effect id in
// message metadata and `lookup` finds it again in the thread or channel.
import type { KnownBlock, WebClient, WebClientOptions } from '@slack/web-api';
import type { StepPlan } from '../model';
import { slackWebApi } from '../provider-sdks';
import { quietSlackLogger } from '../tenants/slack-oauth';
import { TargetError } from './errors';
import { installationTokenFix, type SlackTokens } from './slack-tokens';
import { type LookupRequest, messageText, type TargetAdapter } from './types';

/** The metadata every reply carries (docs/targets.md), so that a lookup can recognise it. */
export const SLACK_METADATA_EVENT_TYPE = 'replyflow_effect';

/** Slack documents no read-after-write delay for history; we look twice, this far apart. */
const SLACK_CONSISTENCY_DELAY_MS = 10_000;

/** The gap Slack asks for between two posts to one channel. */
const SLACK_CHANNEL_INTERVAL_MS = 1000;

/** Pages read per lookup (up to 999 messages each): a bound, not an expectation. */
const MAX_LOOKUP_PAGES = 50;
const PAGE_LIMIT = 200;

/**
 * `ok:false` errors that say the post was refused (not applied), with what an operator should fix.
 * https://api.slack.com/methods/chat.postMessage#errors
 */
const PERMANENT_ERRORS: Record<string, string> = {
  invalid_auth: 'check SLACK_BOT_TOKEN (the token is invalid)',
  not_authed: 'set SLACK_BOT_TOKEN',
  account_inactive: 'the bot user or workspace is deactivated: issue a new SLACK_BOT_TOKEN',
  token_revoked: 'the token was revoked: issue a new SLACK_BOT_TOKEN',
  token_expired: 'the token expired: refresh SLACK_BOT_TOKEN',
  no_permission: 'grant the app the chat:write scope and reinstall it',
  missing_scope: 'grant the app the chat:write scope (and *:history for lookups) and reinstall it',
  ekm_access_denied: 'the workspace administrators suspended posting',
  team_access_not_granted: 'the token has no access to this workspace',
  channel_not_found: 'check the channel id, and that the app can see the channel',
  not_in_channel: 'invite the app to the channel (/invite @app)',
  is_archived: 'the channel is archived: unarchive it or discard the reply',
  msg_too_long: 'the reply is too long for Slack (40,000 characters): shorten the answer',
  no_text: 'the reply is empty: check the responder',
  invalid_blocks:
    "Slack refused the answer's blocks: check them in Block Kit Builder, fix the bot, then reprocess",
  invalid_blocks_format:
    "Slack refused the answer's blocks: check them in Block Kit Builder, fix the bot, then reprocess",
  restricted_action: 'a workspace preference forbids this post',
  restricted_action_read_only_channel: 'the channel is read-only for the app',
  restricted_action_thread_only_channel: 'the channel only accepts thread replies',
  restricted_action_non_threadable_channel: 'the channel does not accept thread replies',
  cannot_reply_to_message: 'this message cannot be replied to in a thread',
  // Our metadata is fixed (event_type + effect id): Slack refusing it means SLACK_API_URL is not Slack.
  invalid_metadata_format: 'Slack refused the effect metadata: check that SLACK_API_URL points at Slack',
  invalid_metadata_schema: 'Slack refused the effect metadata: check that SLACK_API_URL points at Slack',
  metadata_too_large: 'Slack refused the effect metadata: check that SLACK_API_URL points at Slack',
};

/**
 * `ok:false` errors after which Slack itself says the post may have happened.
 * https://api.slack.com/methods/chat.postMessage#errors (`internal_error`, `fatal_error`)
 */
const MAYBE_APPLIED_ERRORS = new Set(['internal_error', 'fatal_error']);

/** `ok:false` errors that mean "not processed, try later". */
const RETRYABLE_ERRORS = new Set(['ratelimited', 'service_unavailable', 'request_timeout']);

interface SlackTargetOptions {
  /** Which bot token each call uses (src/targets/slack-tokens.ts): the step's team's, or SLACK_BOT_TOKEN. */
  tokens: SlackTokens;
  /** SLACK_API_URL, e.g. `https://slack.com/api/`. */
  apiUrl: string;
}

/** Slack's refusals of the token itself: for an installation's token, the fix is about that workspace. */
const TOKEN_ERRORS = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
]);

interface SlackMessage {
  ts?: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
}

export function slackTarget({ tokens, apiUrl }: SlackTargetOptions): TargetAdapter {
  /**
   * One client per call so that the call carries the attempt's abort signal and its team's token.
   * Retries are off and rate-limited calls are rejected rather than queued: Temporal owns retries and
   * their timing.
   */
  const client = (token: string, signal: AbortSignal) =>
    new (slackWebApi().WebClient)(token, {
      slackApiUrl: apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      logger: quietSlackLogger,
      requestInterceptor: (config) => Object.assign(config, { signal }),
    } satisfies WebClientOptions);

  /**
   * Runs `call` with the step's token. Slack's `token_expired` (a rotating token that expired before
   * we refreshed it) is a refusal, not a post: the call runs once more with a refreshed token. A
   * refused installation token whose revocation was recorded meanwhile fails with that.
   */
  async function withToken<T>(step: StepPlan, signal: AbortSignal, call: (c: WebClient) => Promise<T>) {
    let token = await tokens.forTenant(step.destination.tenant, signal);
    for (let round = 0; ; round++) {
      // A refresh may have used up the attempt: without time left to write the request, nothing is sent.
      if (signal.aborted) throw new TargetError('retryable', 'slack: no time left to post: nothing was sent');
      try {
        return await call(client(token.token, signal));
      } catch (err) {
        const code = platformCode(err);
        if (code === 'token_expired' && round === 0) {
          const refreshed = await tokens.afterExpired(token, signal);
          if (refreshed) {
            token = refreshed;
            continue;
          }
        }
        if (code && TOKEN_ERRORS.has(code) && token.kind === 'installation') {
          throw (
            (await tokens.whyRefused(token)) ??
            new TargetError('permanent', `slack: ${code}`, { fix: installationTokenFix(token.tenant) })
          );
        }
        throw classifySlackError(err);
      }
    }
  }

  return {
    name: 'slack',
    capabilities: { idempotencyKey: false, lookup: true, consistencyDelayMs: SLACK_CONSISTENCY_DELAY_MS },
    // chat.postMessage "will generally allow an app to post 1 message per second to a specific
    // channel" (https://api.slack.com/methods/chat.postMessage#rate_limiting): per workspace and channel.
    pace: ({ destination: { tenant, channel } }) =>
      channel ? { key: `${tenant ?? 'slack'}/${channel}`, intervalMs: SLACK_CHANNEL_INTERVAL_MS } : undefined,

    async send({ effectId, step, body, signal }) {
      const { channel, threadTs } = destinationOf(step);
      const text = messageText(body);
      const blocks = body.slack?.blocks as KnownBlock[] | undefined;
      if (!text && !blocks?.length)
        throw new TargetError('permanent', 'slack: nothing to post', { fix: 'check the route or responder' });
      const answer = await withToken(step, signal, (slack) =>
        slack.chat.postMessage({
          channel,
          // With blocks, the text is the notification's fallback (Slack asks for one).
          text: text ?? '',
          ...(blocks?.length ? { blocks } : {}),
          ...(threadTs ? { thread_ts: threadTs } : {}),
          metadata: { event_type: SLACK_METADATA_EVENT_TYPE, event_payload: { effect_id: effectId } },
        }),
      );
      return { externalId: `${answer.channel ?? channel}/${answer.ts}` };
    },

    async lookup(request) {
      const found = await withToken(request.step, request.signal, (slack) => findOurMessage(slack, request));
      return found
        ? { found: true, externalId: `${destinationOf(request.step).channel}/${found}` }
        : { found: false };
    },
  };
}

/** Slack's `ok:false` error code, when the failure is one. */
function platformCode(err: unknown): string | undefined {
  const e = err as { code?: string; data?: { error?: string } };
  return e?.code === slackWebApi().ErrorCode.PlatformError ? e.data?.error : undefined;
}

function destinationOf(step: StepPlan): { channel: string; threadTs?: string } {
  const { channel, threadTs } = step.destination;
  if (!channel)
    throw new TargetError('permanent', 'slack: the step has no channel', {
      fix: 'check the route destination',
    });
  return { channel, threadTs: threadTs || undefined };
}

/**
 * Reads the thread (`conversations.replies`) or, for a top-level post, the channel history
 * (`conversations.history`) from the time the effect was claimed, with `include_all_metadata`,
 * and finds the message carrying our effect id. @returns its `ts`.
 */
async function findOurMessage(client: WebClient, { effectId, step, notBefore }: LookupRequest) {
  const { channel, threadTs } = destinationOf(step);
  // Slack timestamps are seconds; a minute of margin covers clock skew between us and Slack.
  const oldest = notBefore ? String(Math.floor(notBefore.getTime() / 1000) - 60) : undefined;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LOOKUP_PAGES; page++) {
    // Failures are classified by withToken, which first sees whether the token was refused.
    const query = {
      channel,
      include_all_metadata: true,
      limit: PAGE_LIMIT,
      ...(oldest ? { oldest } : {}),
      ...(cursor ? { cursor } : {}),
    };
    const answer: { messages?: unknown[]; response_metadata?: { next_cursor?: string } } = threadTs
      ? await client.conversations.replies({ ...query, ts: threadTs })
      : await client.conversations.history(query);
    const ours = (answer.messages as SlackMessage[] | undefined)?.find(
      (m) =>
        m.metadata?.event_type === SLACK_METADATA_EVENT_TYPE &&
        m.metadata.event_payload?.effect_id === effectId,
    );
    if (ours?.ts) return ours.ts;
    cursor = answer.response_metadata?.next_cursor || undefined;
    if (!cursor) return undefined;
  }
  return undefined;
}

/** Maps the Web API client's errors (ErrorCode) onto our classes. */
export function classifySlackError(err: unknown): TargetError {
  if (err instanceof TargetError) return err;
  const e = err as {
    code?: string;
    data?: { error?: string };
    retryAfter?: number;
    statusCode?: number;
    original?: { code?: string };
  };
  const { ErrorCode } = slackWebApi();
  switch (e?.code) {
    case ErrorCode.RateLimitedError:
      return new TargetError('retryable', 'slack: rate limited (429)', {
        retryAfterMs: (e.retryAfter ?? 1) * 1000,
      });
    case ErrorCode.PlatformError: {
      const code = e.data?.error ?? 'unknown_error';
      if (RETRYABLE_ERRORS.has(code)) return new TargetError('retryable', `slack: ${code}`);
      if (MAYBE_APPLIED_ERRORS.has(code))
        return new TargetError('unknown', `slack: ${code}: the post may have been applied`);
      return new TargetError('permanent', `slack: ${code}`, {
        fix: PERMANENT_ERRORS[code] ?? `see https://api.slack.com/methods/chat.postMessage#errors (${code})`,
      });
    }
    case ErrorCode.HTTPError: {
      const status = e.statusCode ?? 0;
      // Slack's Web API uses 200 and 429 only; anything else comes from a proxy or an outage.
      if (status === 503) return new TargetError('retryable', 'slack: unavailable (503)');
      if (status >= 500)
        return new TargetError('unknown', `slack: server error (${status}): the post may have been applied`);
      return new TargetError('permanent', `slack: unexpected HTTP ${status}`, { fix: 'check SLACK_API_URL' });
    }
    case ErrorCode.RequestError: {
      const code = e.original?.code;
      if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
        return new TargetError('retryable', `slack: unreachable (${code})`);
      return new TargetError(
        'unknown',
        `slack: ${code === 'ERR_CANCELED' ? 'no answer before the attempt timed out' : `connection lost (${code ?? 'reset'})`}: the post may have been applied`,
      );
    }
    default:
      // E.g. a 429 without a usable Retry-After, which the client reports as a plain Error.
      return new TargetError('unknown', 'slack: unexpected failure: the post may have been applied');
  }
}
