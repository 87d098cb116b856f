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

export function sandboxProvider(secret: string): WebhookProvider {
  return {
    name: 'sandbox',
    contentTypes: ['application/json'],
    verify(ctx) {
      verifyStandardWebhook(secret, ctx);
    },
    parse(ctx): ProviderResult {
      const id = readWebhookId(ctx);
      const body = validate(sandboxEventSchema, parseJson(ctx.rawBody));
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
