// The sandbox: the built-in demo channel. Its page posts chat messages that the server side signs
// Standard-Webhooks style with the sandbox secret, so they take exactly the path real webhooks take.
import { z } from 'zod';
import { SANDBOX_MODES } from '../model';
import { parseJson, validate } from './parse';
import { readWebhookId, verifyStandardWebhook } from './standard-webhooks';
import type { InboundEvent, ProviderResult, WebhookProvider } from './types';

const sandboxId = z.string().regex(/^[\w-]{1,64}$/, 'letters, digits, - and _, at most 64');

/**
 * Which provider's shape the sandbox plays: a Slack-style chat (the bot gets `slack` fields and may
 * answer with blocks) or a LINE-style one (`line` fields, quick replies). The sandbox shows both.
 */
export const SANDBOX_STYLES = ['slack', 'line'] as const;
type SandboxStyle = (typeof SANDBOX_STYLES)[number];

/** What every chat event of the page carries: the conversation and its own id, … */
const chatIds = { conversationId: sandboxId, messageId: sandboxId };
/** … and who wrote it, who answers, when. (Parsed in this order: the Web UI shows the text near the top.) */
const chatFields = {
  user: z.string().max(64).optional(),
  /** Which flavour of the sandbox target answers (what it promises on an unknown outcome). */
  target: z.enum(SANDBOX_MODES).default('sandbox'),
  sentAt: z.iso.datetime(),
};

const sandboxMessageSchema = z.object({
  type: z.literal('message'),
  ...chatIds,
  text: z.string().min(1).max(4000),
  ...chatFields,
  style: z.enum(SANDBOX_STYLES).default('slack'),
});

/** `/weather tokyo` typed in a Slack-style chat: Slack's slash command, `text` its arguments. */
const sandboxSlashCommandSchema = z.object({
  type: z.literal('slash_command'),
  ...chatIds,
  command: z.string().regex(/^\/[\w-]{1,32}$/, 'a slash and a name, e.g. /weather'),
  text: z.string().max(4000),
  ...chatFields,
});

/**
 * A click on a button the bot sent in blocks: Slack's interactivity `block_actions`; `text` is the
 * button's value, else its label, as src/providers/slack-interactions.ts gives it.
 */
export const sandboxBlockActionsSchema = z.object({
  type: z.literal('block_actions'),
  ...chatIds,
  text: z.string().max(4000).default(''),
  action: z.object({
    actionId: z.string().min(1).max(255),
    blockId: z.string().max(255).optional(),
    value: z.string().max(2000).optional(),
  }),
  ...chatFields,
});

/** A tap on a quick reply chip whose action is a postback: LINE's `postback` event. */
export const sandboxPostbackSchema = z.object({
  type: z.literal('postback'),
  ...chatIds,
  postback: z.object({
    data: z.string().min(1).max(300),
    params: z.record(z.string(), z.string()).optional(),
  }),
  ...chatFields,
});

/** The person asks for a human (`handoff`) or ends the chat (`close`): state changes, no reply. */
const sandboxConversationEventSchema = z.object({
  type: z.enum(['handoff', 'close']),
  conversationId: sandboxId,
  sentAt: z.iso.datetime(),
});

const sandboxEventSchema = z.discriminatedUnion('type', [
  sandboxMessageSchema,
  sandboxSlashCommandSchema,
  sandboxBlockActionsSchema,
  sandboxPostbackSchema,
  sandboxConversationEventSchema,
]);

export type SandboxEvent = z.infer<typeof sandboxEventSchema>;
/** The events a bot answers (every type but the conversation events). */
export type SandboxChatEvent = Exclude<SandboxEvent, { type: 'handoff' | 'close' }>;

/** Every event type the sandbox sends (src/providers/event-types.ts). */
export const SANDBOX_EVENT_TYPES = [
  sandboxMessageSchema.shape.type.value,
  sandboxSlashCommandSchema.shape.type.value,
  sandboxBlockActionsSchema.shape.type.value,
  sandboxPostbackSchema.shape.type.value,
  ...sandboxConversationEventSchema.shape.type.options,
] as const;

export function isChatEvent(event: SandboxEvent): event is SandboxChatEvent {
  return event.type !== 'handoff' && event.type !== 'close';
}

/** The style a chat event plays: a command and a button are Slack's, a postback LINE's. */
export function sandboxStyle(event: SandboxChatEvent): SandboxStyle {
  switch (event.type) {
    case 'message':
      return event.style;
    case 'postback':
      return 'line';
    default:
      return 'slack';
  }
}

/**
 * How far `sentAt` may stray from the time the event arrived. The conversation orders events by it, so
 * a far-future `sentAt` would make every later message look older and freeze the conversation.
 */
const SANDBOX_CLOCK_SKEW_MS = 5 * 60_000;

/** `sentAt` held within SANDBOX_CLOCK_SKEW_MS of `receivedAt`, as ISO 8601. */
function clampSentAt(sentAt: string, receivedAt: Date): string {
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
      if (isChatEvent(body)) {
        // As the real providers give them: a command's text is its arguments (Slack), a postback's
        // its data (src/providers/line.ts).
        const text = body.type === 'postback' ? body.postback.data : body.text;
        event.message = { id: body.messageId, text, user: body.user };
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
