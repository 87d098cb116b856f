// LINE Messaging API: reply with the event's reply token while it is fresh, else push with
// `X-Line-Retry-Key` = our effect id. Only the push dedupes, so only a push may be resent blindly.
//
// How this adapter tells the send protocol which of its requests are safe to resend:
// - the reply token is tried only on the effect's first attempt; every later attempt (a retry, an
//   approved resend, a reprocess) pushes with the retry key;
// - `resendSafe(step, 1)` is false when the step has a reply token, so a first attempt that may have
//   been applied and left no answer (worker died) is held for a person, never resent;
// - an unknown outcome says exactly what was sent (`details.resendSafe`): a reply-token request → held;
//   a push → resent with the same key, and LINE answers 409 if the first one was accepted.
//
// One answer is one request: its LINE message objects (up to five, `body.line`) go together, because a
// reply token answers once; the push that stands in for it carries the same objects under one key.
//
// Whose access token: the channel of the step's `destination.tenant` (`line:<destination>`, from
// TENANTS_FILE or the tenant store), else LINE_CHANNEL_ACCESS_TOKEN. A stored token LINE refuses (401)
// is asked for once more, fresh: an admin may have rotated it; nothing was sent, so asking again is safe.
import type { messagingApi } from '@line/bot-sdk';
import type { StepPlan } from '../model';
import { lineSdk } from '../provider-sdks';
import { channelFix, type LineChannel, type LineChannels } from '../tenants/line-channels';
import { TargetError } from './errors';
import { classifyTransportError } from './http-errors';
import { messageText, parseRetryAfter, type SendRequest, type TargetAdapter } from './types';

/** LINE takes at most five message objects per reply or push. */
const MESSAGES_PER_REQUEST = 5;

/** A reply token this close to its expiry is not worth the round trip: push instead. */
const REPLY_TOKEN_MARGIN_MS = 2000;

interface LineTargetOptions {
  /** LINE_CHANNEL_ACCESS_TOKEN: the one channel, or the one for destinations without their own. */
  channelAccessToken?: string;
  /** The channels by destination (TENANTS_FILE, the tenant store). */
  channels?: LineChannels;
  /** LINE_API_URL, e.g. `https://api.line.me`. */
  apiUrl: string;
  now?: () => number;
}

type Sent = { sentMessages?: { id?: string }[] } | null;

/** The access token a send uses, and where it came from (for a fix that names it). */
interface Credential {
  token: string;
  channel?: LineChannel;
}

export function lineTarget({
  channelAccessToken,
  channels,
  apiUrl,
  now = Date.now,
}: LineTargetOptions): TargetAdapter {
  // The SDK does not retry on its own, and exposes the retry key and, through HTTPFetchError, the
  // status, headers and body of a 409 or 400. It takes no AbortSignal: see `untilAborted`.
  const clientOf = (token: string) =>
    new (lineSdk().messagingApi.MessagingApiClient)({ channelAccessToken: token, baseURL: apiUrl });

  const credentialFor = async (tenant: string | undefined, fresh = false): Promise<Credential> => {
    let channel: LineChannel | undefined;
    try {
      channel = tenant && channels ? await channels.channel(tenant, { fresh }) : undefined;
    } catch {
      // Nothing was sent: the store is down, the next attempt asks again.
      throw new TargetError('retryable', 'line: the channel’s credential could not be read (tenant store)');
    }
    if (channel?.secret) return { token: channel.secret.accessToken, channel };
    if (channel)
      throw new TargetError(
        'permanent',
        `line: the channel ${channel.tenant} is ${channel.unusable}${channel.revokedReason ? ` (${channel.revokedReason})` : ''}`,
        { fix: `give it a credential again (${channelFix(channel)}), then reprocess` },
      );
    if (channelAccessToken) return { token: channelAccessToken };
    throw new TargetError(
      'permanent',
      `line: no channel for ${tenant ?? 'this destination'} and no LINE_CHANNEL_ACCESS_TOKEN`,
      {
        fix: `add the channel (\`replyflow tenant add ${tenant ?? 'line:<destination>'} --channel-secret-env … --access-token-env …\` with LINE_CHANNELS=tenants, or TENANTS_FILE), then reprocess`,
      },
    );
  };

  /**
   * Runs `request` with the step's token; a stored token LINE refuses (401) is read again, fresh, and
   * the request made once more with the new one, if it is new.
   */
  const withToken = async <T>(
    step: StepPlan,
    request: (client: messagingApi.MessagingApiClient) => Promise<T>,
  ): Promise<{ result: T } | { error: unknown; credential: Credential }> => {
    const tenant = step.destination.tenant;
    const credential = await credentialFor(tenant);
    try {
      return { result: await request(clientOf(credential.token)) };
    } catch (err) {
      const refused = err instanceof lineSdk().HTTPFetchError && err.status === 401;
      if (!refused || !credential.channel || credential.channel.source === 'file')
        return { error: err, credential };
      const again = await credentialFor(tenant, true);
      if (again.token === credential.token) return { error: err, credential };
      try {
        return { result: await request(clientOf(again.token)) };
      } catch (retried) {
        return { error: retried, credential: again };
      }
    }
  };

  const replyTokenUsable = (step: StepPlan, attempt: number) => {
    const { replyToken, replyTokenExpiresAt } = step.destination;
    if (attempt !== 1 || !replyToken || !replyTokenExpiresAt) return false;
    return Date.parse(replyTokenExpiresAt) - now() > REPLY_TOKEN_MARGIN_MS;
  };

  return {
    name: 'line',
    capabilities: { idempotencyKey: true, lookup: false, consistencyDelayMs: 0 },

    resendSafe: (step, attempt) => attempt > 1 || !step.destination.replyToken,

    async send({ effectId, step, body, signal, attempt }) {
      const messages = messagesOf(body);

      if (replyTokenUsable(step, attempt)) {
        const replied = await withToken(step, (client) =>
          untilAborted(
            client.replyMessageWithHttpInfo({ replyToken: step.destination.replyToken!, messages }),
            signal,
          ),
        );
        if ('result' in replied) return { externalId: externalIdOf(replied.result.body, 'reply') };
        // Used or expired token (400 "Invalid reply token"): nothing was sent, so push instead.
        if (!isInvalidReplyToken(replied.error))
          throw classifyLineError(replied.error, signal, false, messages, whose(replied.credential));
      }

      const to = step.destination.to;
      if (!to)
        throw new TargetError('permanent', 'line: no push destination (`to`) and no usable reply token', {
          fix: 'check the route destination',
        });
      const pushed = await withToken(step, (client) =>
        untilAborted(client.pushMessageWithHttpInfo({ to, messages }, effectId), signal),
      );
      if ('result' in pushed) {
        const { body: sent, httpResponse } = pushed.result;
        return { externalId: externalIdOf(sent, httpResponse.headers.get('x-line-request-id') ?? 'push') };
      }
      const err = pushed.error;
      // A reused retry key after acceptance: this push already happened.
      if (err instanceof lineSdk().HTTPFetchError && err.status === 409) {
        return {
          externalId: externalIdOf(parse(err.body), err.headers.get('x-line-accepted-request-id') ?? 'push'),
        };
      }
      throw classifyLineError(err, signal, true, messages, whose(pushed.credential));
    },
  };
}

/** Which access token LINE refused, as a fix names it. */
function whose(credential: Credential): string {
  return credential.channel
    ? `check the access token of ${credential.channel.tenant} (${channelFix(credential.channel)})`
    : 'check LINE_CHANNEL_ACCESS_TOKEN';
}

/**
 * What one request sends: the answer's LINE message objects (src/responders/answer.ts checked them),
 * else one text message. The same objects on every attempt, reply or push.
 */
function messagesOf(body: SendRequest['body']): messagingApi.Message[] {
  if (body.line && body.line.length > 0) {
    if (body.line.length > MESSAGES_PER_REQUEST)
      throw new TargetError('permanent', `line: ${body.line.length} message objects in one answer`, {
        fix: `answer with at most ${MESSAGES_PER_REQUEST} LINE messages (one reply carries five)`,
      });
    return body.line as unknown as messagingApi.Message[];
  }
  const text = messageText(body);
  if (!text)
    throw new TargetError('permanent', 'line: nothing to send', { fix: 'check the route or responder' });
  return [{ type: 'text', text }];
}

/**
 * The SDK's fetch cannot be aborted, so when the attempt's lease runs out we stop waiting and call the
 * outcome unknown; the request, if written, finishes or fails on its own and changes nothing here.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error('aborted'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function parse(body: string): Sent {
  try {
    return JSON.parse(body) as Sent;
  } catch {
    return null;
  }
}

function externalIdOf(sent: Sent, fallback: string): string {
  return sent?.sentMessages?.[0]?.id ?? fallback;
}

function isInvalidReplyToken(err: unknown): boolean {
  return (
    err instanceof lineSdk().HTTPFetchError && err.status === 400 && /invalid reply token/i.test(err.body)
  );
}

/**
 * https://developers.line.biz/en/reference/messaging-api/#status-codes and
 * https://developers.line.biz/en/docs/messaging-api/retrying-api-request/
 * `pushed`: the failed request was a push with our retry key (safe to resend on unknown outcome).
 * `messages`: the objects it sent, so that a 400 can name the one LINE refused.
 */
function classifyLineError(
  err: unknown,
  signal: AbortSignal,
  pushed: boolean,
  messages: readonly messagingApi.Message[] = [],
  tokenFix = 'check LINE_CHANNEL_ACCESS_TOKEN',
): TargetError {
  if (err instanceof TargetError) return err;
  if (!(err instanceof lineSdk().HTTPFetchError)) {
    const classified = classifyTransportError(err, signal);
    return new TargetError(classified.errorClass, `line: ${classified.message}`, {
      ...classified.details,
      resendSafe: pushed,
    });
  }
  const { status } = err;
  const message = (parse(err.body) as { message?: string } | null)?.message;
  if (status === 429) {
    // The monthly message quota is also a 429, but waiting minutes will not lift it.
    if (message && /monthly limit/i.test(message))
      return new TargetError('permanent', 'line: monthly message limit reached (429)', {
        fix: 'raise the LINE plan limit, then reprocess',
      });
    return new TargetError('retryable', 'line: rate limited (429)', {
      retryAfterMs: parseRetryAfter(err.headers.get('retry-after')),
    });
  }
  if (status >= 500)
    return new TargetError('unknown', `line: server error (${status}): the message may have been sent`, {
      resendSafe: pushed,
    });
  if (status === 401) return new TargetError('permanent', 'line: not authorised (401)', { fix: tokenFix });
  if (status === 403)
    return new TargetError('permanent', 'line: forbidden (403)', {
      fix: 'the channel is not allowed to use this API (plan or permission)',
    });
  const refused = status === 400 ? refusedMessages(err.body, messages) : [];
  if (refused.length > 0)
    return new TargetError('permanent', 'line: a message object was refused (400)', {
      fix: `fix the answer (docs/targets.md, LINE): ${refused.join('; ')}`,
    });
  return new TargetError('permanent', `line: rejected (${status})`, {
    fix: 'check the destination (user, group or room id) and the message',
  });
}

/** LINE's 400 body: `details` name each refused property, e.g. `messages[1].contents`. */
type Refusal = { details?: { message?: unknown; property?: unknown }[] } | null;

/**
 * The message objects a 400 refused, each named by its property and type with LINE's reason, e.g.
 * `messages[1].altText (a flex message): May not be empty`. LINE's reasons are its own words, but one
 * that repeats any string the bot sent is left out: the bot's text stays out of errors.
 */
function refusedMessages(body: string, messages: readonly messagingApi.Message[]): string[] {
  const details = (parse(body) as Refusal)?.details;
  if (!Array.isArray(details)) return [];
  const sent = stringsIn(messages);
  return details.flatMap((detail) => {
    const property = typeof detail.property === 'string' ? detail.property : '';
    const at = /^messages(?:\[(\d{1,2})\])?/.exec(property);
    if (!at) return [];
    const type = at[1] === undefined ? undefined : messages[Number(at[1])]?.type;
    const reason = typeof detail.message === 'string' ? detail.message.slice(0, 200) : '';
    const quotes = sent.some((value) => reason.includes(value));
    return [
      `${safeProperty(property)}${type ? ` (a ${type} message)` : ''}${reason && !quotes ? `: ${reason}` : ''}`,
    ];
  });
}

/** A property path as LINE names it (`messages[0].quickReply.items[3].action.uri`), nothing else. */
function safeProperty(property: string): string {
  return /^[\w.[\]]{1,200}$/.test(property) ? property : '(property)';
}

/**
 * Every string the bot wrote into the sent objects, of three characters or more (shorter ones match
 * by chance); `type` values are LINE's vocabulary, which its reasons name (`must be one of [text, …]`).
 */
function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return value.length >= 3 ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([key, inner]) => (key === 'type' ? [] : stringsIn(inner)));
  return [];
}
