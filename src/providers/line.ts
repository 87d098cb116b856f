// LINE Messaging API (`/webhooks/line`): the channel-secret signature, the console's verify request,
// and one InboundEvent per event of a request (the receiver acknowledges only when all are durable).
import { createHmac } from 'node:crypto';
import { validateSignature } from '@line/bot-sdk';
import { z } from 'zod';
import { tenantOf } from '../tenants/tenant-id';
import { epochMillis, epochToIso, parseJson, validate } from './parse';
import {
  header,
  type InboundEvent,
  type ProviderResult,
  type RequestContext,
  type WebhookProvider,
  WebhookVerificationError,
} from './types';

/** A reply token is single-use and valid for about a minute after the event. */
export const LINE_REPLY_TOKEN_TTL_MS = 60_000;

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
export function verifyLineRequest(channelSecret: string, ctx: RequestContext): void {
  const signature = header(ctx.headers, 'x-line-signature');
  if (!signature) throw new WebhookVerificationError('missing x-line-signature header');
  if (!isCanonicalBase64(signature) || !validateSignature(ctx.rawBody, channelSecret, signature)) {
    throw new WebhookVerificationError(
      'x-line-signature does not match the raw body; check LINE_CHANNEL_SECRET (the channel secret, not the access token)',
    );
  }
}

/** True when `value` is exactly what encoding its decoded bytes gives back: nothing skipped or ignored. */
function isCanonicalBase64(value: string): boolean {
  return Buffer.from(value, 'base64').toString('base64') === value;
}

/** Signs a body the way LINE does, for tests and local senders. */
export function signLineRequest(channelSecret: string, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-line-signature': createHmac('sha256', channelSecret).update(body).digest('base64'),
  };
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

export function lineProvider(channelSecret: string): WebhookProvider<ProviderResult> {
  return {
    name: 'line',
    contentTypes: ['application/json'],
    verify(ctx) {
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
