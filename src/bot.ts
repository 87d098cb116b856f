// The reply contract: what a bot's logic is given (BotEvent) and what it answers (BotReply), the same
// JSON for a module (RESPONDER_MODULE) and a service (RESPONDER_URL). Published as a JSON Schema in
// schema/ (scripts/generate-bot-schema.ts) and described in docs/responders.md. A bot imports the
// types: `import type { BotEvent, BotReply } from 'replyflow'`.
import { z } from 'zod';

/** The provider's own event object, as it arrived (Slack's `event`, LINE's event, GitHub's payload). */
export type RawEvent = unknown;

/** One event, as the bot's logic sees it. Fields a provider does not have are absent. */
export interface BotEvent {
  /** The contract's version: fields are only ever added within one. */
  version: 1;
  /** `slack`, `line`, `github`, `sandbox`, `stripe` or `std.<source>`. */
  provider: string;
  /** The provider's own event id. */
  eventId: string;
  /**
   * The provider's event type: Slack `message`, `app_mention`, `slash_command`, `block_actions`,
   * `view_submission`, `view_closed`, `shortcut`, `message_action`; LINE `message`, `postback`; GitHub `issues.opened`; sandbox `message`.
   */
  eventType: string;
  occurredAt?: string;
  /** The conversation replyflow keeps in order: Slack `team:channel`, LINE `destination:chat`, GitHub `owner/repo#n`. */
  conversationId?: string;
  /** The message this event carries (Slack `ts`, LINE message id), when it carries one. */
  messageId?: string;
  /** The message's text; a slash command's arguments; a LINE postback's `data`; "" when there is none. */
  text: string;
  /** Who wrote it (Slack user id, LINE user id, GitHub login). */
  user?: string;
  slack?: {
    team?: string;
    channel?: string;
    /** The thread a reply goes to by default (the message's own `ts` when it starts one). */
    threadTs?: string;
    /** `/weather` for a slash command. */
    command?: string;
    /** The button or menu a person used (interactivity `block_actions`). */
    action?: { actionId: string; blockId?: string; value?: string };
    /** A submitted modal (interactivity `view_submission`): its callback id and state values. */
    view?: { callbackId?: string; values?: unknown };
    /** A shortcut a person used (`shortcut`, or `message_action` on a message): its callback id. */
    shortcut?: { callbackId: string };
  };
  line?: {
    source: { type: string; userId?: string; groupId?: string; roomId?: string };
    /** A postback action's data (and its date/time picker params). */
    postback?: { data: string; params?: Record<string, string> };
  };
  github?: { repository: string; issue?: number };
  /** The provider's own event object, unchanged. */
  raw: RawEvent;
}

/** BotEvent as a schema, for the published JSON Schema (schema/bot-event.schema.json). */
export const botEventSchema = z
  .object({
    version: z.literal(1),
    provider: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    occurredAt: z.string().optional(),
    conversationId: z.string().optional(),
    messageId: z.string().optional(),
    text: z.string(),
    user: z.string().optional(),
    slack: z
      .object({
        team: z.string().optional(),
        channel: z.string().optional(),
        threadTs: z.string().optional(),
        command: z.string().optional(),
        action: z
          .object({ actionId: z.string(), blockId: z.string().optional(), value: z.string().optional() })
          .optional(),
        view: z.object({ callbackId: z.string().optional(), values: z.unknown().optional() }).optional(),
        shortcut: z.object({ callbackId: z.string() }).optional(),
      })
      .optional(),
    line: z
      .object({
        source: z.looseObject({
          type: z.string(),
          userId: z.string().optional(),
          groupId: z.string().optional(),
          roomId: z.string().optional(),
        }),
        postback: z
          .object({ data: z.string(), params: z.record(z.string(), z.string()).optional() })
          .optional(),
      })
      .optional(),
    github: z.object({ repository: z.string(), issue: z.number().int().optional() }).optional(),
    raw: z.unknown(),
  })
  .meta({ id: 'BotEvent', description: 'One event, as the bot’s logic sees it (src/bot.ts)' });

// ---- The answer ----------------------------------------------------------------------------------

/** Slack allows 40,000 characters of text (https://api.slack.com/methods/chat.postMessage). */
const SLACK_TEXT_MAX = 40_000;
/** Slack allows 50 blocks per message. */
const SLACK_BLOCKS_MAX = 50;
/** LINE: 5 message objects per reply or push (https://developers.line.biz/en/reference/messaging-api/#send-reply-message). */
export const LINE_MESSAGES_MAX = 5;
/** Messages one answer may carry: LINE's limit per reply, and enough for any chat bot. */
export const BOT_MESSAGES_MAX = 5;

const slackBlock = z.looseObject({ type: z.string().min(1) });
/** A LINE message object (https://developers.line.biz/en/reference/messaging-api/#message-objects). */
const lineMessageObject = z.looseObject({
  type: z.enum([
    'text',
    'textV2',
    'sticker',
    'image',
    'video',
    'audio',
    'location',
    'imagemap',
    'template',
    'flex',
    'coupon',
  ]),
  quickReply: z
    .looseObject({
      items: z
        .array(z.looseObject({ type: z.literal('action') }))
        .min(1)
        .max(13),
    })
    .optional(),
});

/**
 * One message: `text` and the provider's own fields. Slack: `blocks`, and `where` (`thread`, the
 * default, or `channel`), and for an answer to a slash command or a button, `response_type`
 * (`ephemeral`, the default, or `in_channel`) and `replace_original`. LINE: a LINE message object
 * (`type` and its fields, `quickReply`), or `{ "text" }` for a text message. GitHub: `text` is markdown.
 */
export const botMessageSchema = z
  .looseObject({
    text: z.string().max(SLACK_TEXT_MAX).optional(),
    blocks: z.array(slackBlock).max(SLACK_BLOCKS_MAX).optional(),
    where: z.enum(['thread', 'channel']).optional(),
    response_type: z.enum(['ephemeral', 'in_channel']).optional(),
    replace_original: z.boolean().optional(),
    type: lineMessageObject.shape.type.optional(),
    quickReply: lineMessageObject.shape.quickReply,
    /** Not a message field: `{ "messages": [...] }` is the whole answer. */
    messages: z.never().optional(),
  })
  .meta({ id: 'BotMessage', description: 'One message, in the provider’s own shape' });

export type BotMessage = z.infer<typeof botMessageSchema>;

const TOO_MANY = `at most ${BOT_MESSAGES_MAX} messages per answer (LINE's limit per reply)`;

/**
 * What the bot answers: `null` (no reply), one message, an array of them, or `{ "messages": [...] }`.
 * Several messages are sent in order, each under the send protocol of its own.
 */
export const botReplySchema = z
  .union([
    z.null(),
    z.array(botMessageSchema).max(BOT_MESSAGES_MAX, TOO_MANY),
    z.strictObject({ messages: z.array(botMessageSchema).max(BOT_MESSAGES_MAX, TOO_MANY) }),
    botMessageSchema,
  ])
  .meta({ id: 'BotReply' });

export type BotReply = null | BotMessage | BotMessage[] | { messages: BotMessage[] };

/** A bot module (RESPONDER_MODULE): `export async function respond(event)`. */
export type Respond = (event: BotEvent) => BotReply | Promise<BotReply>;
