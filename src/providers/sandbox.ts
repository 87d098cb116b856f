// The sandbox: the built-in demo channel. Its page posts chat messages that the server side signs
// Standard-Webhooks style with the sandbox secret, so they take exactly the path real webhooks take.
import { z } from 'zod';
import { SANDBOX_MODES } from '../model';
import { parseJson, validate } from './parse';
import { readWebhookId, verifyStandardWebhook } from './standard-webhooks';
import type { InboundEvent, ProviderResult, WebhookProvider } from './types';

const sandboxId = z.string().regex(/^[\w-]{1,64}$/, 'letters, digits, - and _, at most 64');

export const sandboxMessageSchema = z.object({
  type: z.literal('message'),
  conversationId: sandboxId,
  messageId: sandboxId,
  text: z.string().min(1).max(4000),
  user: z.string().max(64).optional(),
  /** Which flavour of the sandbox target answers (what it promises on an unknown outcome). */
  target: z.enum(SANDBOX_MODES).default('sandbox'),
  sentAt: z.iso.datetime(),
});

/** The person asks for a human (`handoff`) or ends the chat (`close`): state changes, no reply. */
export const sandboxConversationEventSchema = z.object({
  type: z.enum(['handoff', 'close']),
  conversationId: sandboxId,
  sentAt: z.iso.datetime(),
});

export const sandboxEventSchema = z.discriminatedUnion('type', [
  sandboxMessageSchema,
  sandboxConversationEventSchema,
]);

export type SandboxMessage = z.infer<typeof sandboxMessageSchema>;

/**
 * How far `sentAt` may stray from the time the event arrived. The conversation orders events by it, so
 * a far-future `sentAt` would make every later message look older and freeze the conversation.
 */
export const SANDBOX_CLOCK_SKEW_MS = 5 * 60_000;

/** `sentAt` held within SANDBOX_CLOCK_SKEW_MS of `receivedAt`, as ISO 8601. */
export function clampSentAt(sentAt: string, receivedAt: Date): string {
  const now = receivedAt.getTime();
  const clamped = Math.min(
    Math.max(Date.parse(sentAt), now - SANDBOX_CLOCK_SKEW_MS),
    now + SANDBOX_CLOCK_SKEW_MS,
  );
  return new Date(clamped).toISOString();
}

export function sandboxProvider(secret: string): WebhookProvider<ProviderResult> {
  return {
    name: 'sandbox',
    contentTypes: ['application/json'],
    verify(ctx) {
      verifyStandardWebhook(secret, ctx);
    },
    parse(ctx): ProviderResult {
      const id = readWebhookId(ctx);
      const parsed = validate(sandboxEventSchema, parseJson(ctx.rawBody));
      const body = { ...parsed, sentAt: clampSentAt(parsed.sentAt, ctx.receivedAt) };
      const event: InboundEvent = {
        provider: 'sandbox',
        eventId: id,
        workflowId: `webhook:sandbox:${id}`,
        eventType: body.type,
        occurredAt: body.sentAt,
        receivedAt: ctx.receivedAt.toISOString(),
        correlationId: ctx.correlationId,
        conversation: { id: body.conversationId, version: body.sentAt },
        payload: body,
      };
      if (body.type === 'message') {
        event.message = { id: body.messageId, text: body.text, user: body.user };
        event.replyTo = {
          target: body.target,
          kind: 'answer',
          destination: { conversationId: body.conversationId },
        };
      }
      return { kind: 'events', events: [event] };
    },
  };
}
