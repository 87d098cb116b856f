// LINE Messaging API (`/webhooks/line`): the channel-secret signature, the console's verify request,
// and one InboundEvent per event of a request (the receiver acknowledges only when all are durable).
// With several channels (TENANTS_FILE, LINE_CHANNELS=tenants) the body's `destination` — the bot's
// user id, read before verifying — chooses whose secret verifies; LINE_CHANNEL_SECRET answers for any
// destination without a channel of its own.
import { z } from 'zod';
import { lineSdk } from '../provider-sdks';
import { channelFix, type LineChannel, type LineChannels } from '../tenants/line-channels';
import { tenantOf } from '../tenants/tenant-id';
import { ProviderUnavailableError, WebhookVerificationError } from './errors';
import { epochMillis, epochToIso, parseJson, validate } from './parse';
import {
  header,
  type InboundEvent,
  type ProviderResult,
  type RequestContext,
  type WebhookProvider,
} from './types';

/** A reply token is single-use and valid for about a minute after the event. */
const LINE_REPLY_TOKEN_TTL_MS = 60_000;

/**
 * Verifies `x-line-signature` (base64 HMAC-SHA256 of the raw body with the channel secret) with
 * `@line/bot-sdk`'s `validateSignature`, which compares in constant time. LINE signs no timestamp, so
 * there is no replay window: redeliveries are caught by the event id instead.
 *
 * `validateSignature` decodes the header with `Buffer.from(…, 'base64')`, which skips characters that
 * are not base64 and stops at padding, so the signature with junk appended (or spaces, base64url, set
 * spare bits) still passed. LINE's Python SDK (line-bot-sdk-python `SignatureValidator.validate`,
 * checked Nov 2026) compares the header with the encoded digest as strings; we are as strict: only
 * a header in canonical base64 is compared at all.
 */
export function verifyLineRequest(
  channelSecret: string,
  ctx: RequestContext,
  whose = 'check LINE_CHANNEL_SECRET (the channel secret, not the access token)',
): void {
  const signature = header(ctx.headers, 'x-line-signature');
  if (!signature) throw new WebhookVerificationError('missing x-line-signature header');
  if (!isCanonicalBase64(signature) || !lineSdk().validateSignature(ctx.rawBody, channelSecret, signature)) {
    throw new WebhookVerificationError(`x-line-signature does not match the raw body; ${whose}`);
  }
}

/**
 * The destination an unverified body names, if it names one the way LINE does: only to choose the
 * secret that verifies it. Anything else (not JSON, no destination) is left to the shortcut secret.
 */
function claimedTenant(rawBody: Buffer): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return undefined;
  }
  const destination = (body as { destination?: unknown } | null)?.destination;
  return typeof destination === 'string' ? tenantOf('line', destination) : undefined;
}

/**
 * Verifies with the channel of the body's destination, else with the shortcut. A destination that has
 * a channel is never verified with another channel's secret. A secret that fails is asked for once
 * more, fresh from the store: the admin may have rotated it since it was cached.
 */
async function verifyByDestination(
  channels: LineChannels,
  shortcut: string | undefined,
  ctx: RequestContext,
): Promise<void> {
  const tenant = claimedTenant(ctx.rawBody);
  const lookup = async (options?: { fresh?: boolean }): Promise<LineChannel | undefined> => {
    if (!tenant) return undefined;
    try {
      return await channels.channel(tenant, options);
    } catch (err) {
      throw new ProviderUnavailableError('the LINE channels (tenant store) cannot be read', { cause: err });
    }
  };
  const channel = await lookup();
  if (!channel) {
    if (shortcut) return verifyLineRequest(shortcut, ctx);
    throw new WebhookVerificationError(
      tenant
        ? `no LINE channel for destination ${tenant} and no LINE_CHANNEL_SECRET: add the channel (\`replyflow tenant add ${tenant}\`, or TENANTS_FILE)`
        : 'the body names no destination, and without LINE_CHANNEL_SECRET only a destination with its own channel is verified',
    );
  }
  const verifyWith = (found: LineChannel) => {
    // Said to the sender: no admin's reason; the shortcut does not stand in for a channel's own secret.
    if (!found.secret)
      throw new WebhookVerificationError(
        `the LINE channel ${found.tenant} is ${found.unusable}, and LINE_CHANNEL_SECRET does not stand in for it`,
      );
    verifyLineRequest(
      found.secret.channelSecret,
      ctx,
      `check the channel secret of ${found.tenant} (${channelFix(found)}; not LINE_CHANNEL_SECRET)`,
    );
  };
  try {
    verifyWith(channel);
  } catch (err) {
    if (channel.source === 'file' || !(err instanceof WebhookVerificationError)) throw err;
    const again = await lookup({ fresh: true });
    if (!again?.secret || again.secret.channelSecret === channel.secret?.channelSecret) throw err;
    verifyWith(again);
  }
}

/** True when `value` is exactly what encoding its decoded bytes gives back: nothing skipped or ignored. */
function isCanonicalBase64(value: string): boolean {
  return Buffer.from(value, 'base64').toString('base64') === value;
}

const source = z.looseObject({
  type: z.string().min(1),
  userId: z.string().min(1).optional(),
  groupId: z.string().min(1).optional(),
  roomId: z.string().min(1).optional(),
});

const lineEvent = z.looseObject({
  type: z.string().min(1),
  webhookEventId: z.string().regex(/^[\w.:-]{1,200}$/, 'must be 1-200 letters, digits, or . _ : -'),
  timestamp: epochMillis,
  mode: z.string().optional(),
  source: source.optional(),
  deliveryContext: z.looseObject({ isRedelivery: z.boolean() }).optional(),
});

const lineBody = z.looseObject({ destination: z.string().min(1), events: z.array(lineEvent) });

/** The fields of a `message` event that a reply needs. */
const messageEvent = z.object({
  replyToken: z.string().min(1).optional(),
  source: source,
  message: z.looseObject({ id: z.string().min(1), text: z.string().optional() }),
});

/** The fields of a `postback` event (a button, quick reply, rich menu or date picker) that a reply needs. */
const postbackEvent = z.object({
  replyToken: z.string().min(1).optional(),
  source: source,
  // `params` (date picker, rich menu switch) is the bot's to read, not needed to answer.
  postback: z.looseObject({ data: z.string() }),
});

type LineEvent = z.infer<typeof lineEvent>;

function normalise(destination: string, event: LineEvent, ctx: RequestContext): InboundEvent {
  // The channel the webhook is for, by its bot's user id: whose access token answers.
  const tenant = tenantOf('line', destination);
  const normalised: InboundEvent = {
    provider: 'line',
    eventId: event.webhookEventId,
    workflowId: `webhook:line:${event.webhookEventId}`,
    eventType: event.type,
    occurredAt: epochToIso(event.timestamp, 'ms'),
    receivedAt: ctx.receivedAt.toISOString(),
    correlationId: ctx.correlationId,
    ...(tenant ? { tenant } : {}),
    payload: { destination, events: [event] },
  };
  if (event.deliveryContext) normalised.redelivery = { isRedelivery: event.deliveryContext.isRedelivery };
  // In standby mode another module owns the chat and "the bot server … shouldn't send any messages"
  // (@line/bot-sdk EventBase.mode, checked Nov 2026): the event is recorded but not answered.
  if (event.mode === 'standby') return normalised;
  const said = whatWasSaid(event);
  if (!said) return normalised;
  const { replyToken, source } = said;
  // A group or room is the conversation (and where the answer goes); a 1:1 chat is the user.
  const chat = source.groupId ?? source.roomId ?? source.userId;
  if (!chat) return normalised;
  return {
    ...normalised,
    conversation: { id: `${destination}:${chat}`, version: String(event.timestamp) },
    message: { id: said.id, text: said.text, user: source.userId },
    replyTo: {
      target: 'line',
      kind: 'answer',
      destination: {
        to: chat,
        ...(tenant ? { tenant } : {}),
        ...(replyToken
          ? {
              replyToken,
              replyTokenExpiresAt: epochToIso(event.timestamp + LINE_REPLY_TOKEN_TTL_MS, 'ms'),
            }
          : {}),
      },
    },
  };
}

/**
 * What the default route answers (DESIGN.md §2): a user's message, and a postback, which is a person
 * pressing one of the bot's buttons. A postback carries no message, so its event id stands in for the
 * message id (one answer per event) and its `data` is the text the bot's logic reads; the date
 * picker's or rich menu's `params` stay in the raw event (and in BotEvent `line.postback`). Other
 * events (follow, join, unsend, …) are recorded and left to routes.
 */
function whatWasSaid(
  event: LineEvent,
): { id: string; text: string; replyToken?: string; source: z.infer<typeof source> } | undefined {
  if (event.type === 'message') {
    const parsed = messageEvent.safeParse(event);
    if (!parsed.success) return undefined;
    const { message, ...rest } = parsed.data;
    return { id: message.id, text: message.text ?? '', ...rest };
  }
  if (event.type === 'postback') {
    const parsed = postbackEvent.safeParse(event);
    if (!parsed.success) return undefined;
    const { postback, ...rest } = parsed.data;
    return { id: event.webhookEventId, text: postback.data, ...rest };
  }
  return undefined;
}

/**
 * @param channelSecret LINE_CHANNEL_SECRET: the one channel, or the one for destinations without their own
 * @param channels the channels by destination (TENANTS_FILE, the tenant store)
 */
export function lineProvider(
  channelSecret: string | undefined,
  channels?: LineChannels,
): WebhookProvider<ProviderResult> {
  return {
    name: 'line',
    contentTypes: ['application/json'],
    verify(ctx) {
      if (channels) return verifyByDestination(channels, channelSecret, ctx);
      if (!channelSecret) throw new WebhookVerificationError('no LINE channel is configured');
      verifyLineRequest(channelSecret, ctx);
    },
    parse(ctx): ProviderResult {
      // Every event must carry its id before any is started: one bad event fails the whole request.
      const body = validate(lineBody, parseJson(ctx.rawBody));
      if (body.events.length === 0) return { kind: 'answer', status: 200, body: {} };
      return { kind: 'events', events: body.events.map((event) => normalise(body.destination, event, ctx)) };
    },
  };
}
