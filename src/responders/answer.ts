// A bot's answer (src/bot.ts: null, a message, an array, or { messages }) checked against what the
// reply's target can send, and prepared as the bodies the send protocol carries: one effect per
// message, except LINE, whose messages go in one request (a reply token answers once, with up to five).
// Problems are named by path and never quote the bot's text.
import type { messagingApi } from '@line/bot-sdk';
import { z } from 'zod';
import { type BotMessage, type BotReply, botReplySchema, LINE_MESSAGES_MAX } from '../bot';
import type { MessageBody, PreparedReply } from '../model';
import { PermanentResponderError } from './errors';

/** LINE's text message limit (https://developers.line.biz/en/reference/messaging-api/#text-message). */
const LINE_TEXT_MAX = 5000;
/** LINE's limit on a message's `altText` (flex, template, imagemap). */
const LINE_ALT_TEXT_MAX = 1500;
/** LINE's limit on a media URL; LINE fetches only https. */
const LINE_URL_MAX = 2000;
/** GitHub's comment body limit. */
const GITHUB_TEXT_MAX = 65_536;
/** Fields that belong to Slack's message shape (src/bot.ts). */
const SLACK_FIELDS = ['blocks', 'where', 'response_type', 'replace_original'] as const;

/** Fields that belong to LINE's message objects. */
const LINE_FIELDS = ['type', 'quickReply'] as const;

type TargetFamily = 'slack' | 'line' | 'sandbox' | 'other';

/**
 * Which message shape a target takes: Slack's, LINE's, either (the sandbox shows both, so that one
 * bot can be tried in both shapes), or plain text (GitHub, HTTP).
 */
export function targetFamily(target: string): TargetFamily {
  if (target === 'slack' || target.startsWith('slack-')) return 'slack';
  if (target === 'line') return 'line';
  if (target === 'sandbox' || target.startsWith('sandbox-')) return 'sandbox';
  return 'other';
}

/**
 * @param target the reply step's target. @throws PermanentResponderError listing every problem: the
 * same answer would fail the same way on every retry.
 */
export function prepareAnswer(reply: unknown, target: string): PreparedReply {
  const parsed = botReplySchema.safeParse(reply === undefined ? null : reply);
  if (!parsed.success)
    throw new PermanentResponderError(`the answer is not a reply (docs/responders.md): ${whyNot(reply)}`);
  const answer = parsed.data as BotReply;
  const messages = listOf(answer).filter((m) => !isEmpty(m));
  if (messages.length === 0) return { text: null };
  const family = targetFamily(target);
  const problems = messages.flatMap((m, i) => check(m, family).map((p) => `messages.${i}: ${p}`));
  // The LINE target sends them in one request, which LINE refuses beyond five.
  if (family === 'line' && messages.length > LINE_MESSAGES_MAX)
    problems.push(`messages: ${messages.length} messages, LINE takes at most ${LINE_MESSAGES_MAX} per reply`);
  if (problems.length > 0)
    throw new PermanentResponderError(`the answer cannot be sent to ${target}: ${problems.join('; ')}`);
  // One plain text: prepared as every answer was before richer ones (histories replay the same).
  if (messages.length === 1 && isPlainText(messages[0]!)) return { text: messages[0]!.text! };
  if (family === 'line') return { text: null, messages: [{ line: messages.map(lineMessage) }] };
  return { text: null, messages: messages.map((m) => body(m, family)) };
}

/**
 * What is wrong with an answer, told by the shape it has (a union's own error says only that no
 * shape matched): the list, the `messages` object, or the one message.
 */
function whyNot(reply: unknown): string {
  const shape = Array.isArray(reply)
    ? botReplySchema.options[1]
    : typeof reply === 'object' && reply !== null && 'messages' in reply
      ? botReplySchema.options[2]
      : typeof reply === 'object' && reply !== null
        ? botReplySchema.options[3]
        : undefined;
  const issues = shape?.safeParse(reply).error?.issues;
  if (!issues?.length) return 'expected null, a message object, a list of them, or { "messages": [...] }';
  return issues.map((i) => `${i.path.join('.') || '(answer)'}: ${i.message}`).join('; ');
}

function listOf(answer: BotReply): BotMessage[] {
  if (answer === null) return [];
  if (Array.isArray(answer)) return answer;
  if ('messages' in answer && Array.isArray(answer.messages)) return answer.messages as BotMessage[];
  return [answer as BotMessage];
}

/** `{}` or `{ "text": "" }`: nothing to say (an empty answer is no reply, not an error). */
function isEmpty(m: BotMessage): boolean {
  return Object.keys(m).every((k) => k === 'text') && !m.text;
}

function isPlainText(m: BotMessage): boolean {
  return typeof m.text === 'string' && Object.keys(m).every((k) => k === 'text');
}

function check(m: BotMessage, family: TargetFamily): string[] {
  const problems: string[] = [];
  const has = (k: string) => (m as Record<string, unknown>)[k] !== undefined;
  switch (family) {
    case 'slack':
      if (!m.text && !m.blocks?.length) problems.push('a Slack message needs text or blocks');
      if (has('type') || has('quickReply')) problems.push('type and quickReply are LINE fields');
      break;
    case 'line':
      for (const k of SLACK_FIELDS) if (has(k)) problems.push(`${k} is a Slack field`);
      if ((m.type === undefined || m.type === 'text') && !m.text) problems.push('a text message needs text');
      if (m.text && m.text.length > LINE_TEXT_MAX)
        problems.push(`text is longer than LINE's ${LINE_TEXT_MAX} characters`);
      problems.push(...lineProblems(m));
      break;
    case 'sandbox': {
      const slackStyle = SLACK_FIELDS.some(has);
      const lineStyle = LINE_FIELDS.some(has);
      if (slackStyle && lineStyle)
        problems.push('a message is Slack-style (blocks, …) or LINE-style (type, quickReply), not both');
      else if (slackStyle) problems.push(...check(m, 'slack'));
      else if (lineStyle) problems.push(...check(m, 'line'));
      else if (!m.text) problems.push('the message needs text');
      break;
    }
    case 'other':
      for (const k of [...SLACK_FIELDS, ...LINE_FIELDS])
        if (has(k)) problems.push(`${k} is not something this target sends (text only)`);
      if (!m.text) problems.push('the message needs text');
      if (m.text && m.text.length > GITHUB_TEXT_MAX)
        problems.push(`text is longer than ${GITHUB_TEXT_MAX} characters`);
      break;
  }
  return problems;
}

type LineMessageType = NonNullable<BotMessage['type']>;

/** The fields each LINE message type cannot do without, named as @line/bot-sdk's messagingApi names them. */
const LINE_REQUIRED = {
  text: ['text'],
  textV2: ['text'],
  sticker: ['packageId', 'stickerId'],
  image: ['originalContentUrl', 'previewImageUrl'],
  video: ['originalContentUrl', 'previewImageUrl'],
  audio: ['originalContentUrl', 'duration'],
  location: ['title', 'address', 'latitude', 'longitude'],
  imagemap: ['baseUrl', 'altText', 'baseSize', 'actions'],
  template: ['altText', 'template'],
  flex: ['altText', 'contents'],
  coupon: ['couponId'],
} as const satisfies {
  [T in LineMessageType]: readonly (keyof Extract<messagingApi.Message, { type: T }>)[];
};

/** LINE's action types (https://developers.line.biz/en/reference/messaging-api/#action-objects). */
const LINE_ACTION_TYPES = [
  'camera',
  'cameraRoll',
  'clipboard',
  'datetimepicker',
  'location',
  'message',
  'postback',
  'richmenuswitch',
  'uri',
] as const satisfies readonly messagingApi.Action['type'][];

const httpsUrl = z.url({ protocol: /^https$/, error: 'must be an https URL' }).max(LINE_URL_MAX);

/** The parts of a LINE message replyflow can check before LINE does: no message's text in any problem. */
const lineChecks = z.looseObject({
  altText: z.string().max(LINE_ALT_TEXT_MAX).optional(),
  originalContentUrl: httpsUrl.optional(),
  previewImageUrl: httpsUrl.optional(),
  baseUrl: httpsUrl.optional(),
  quickReply: z
    .looseObject({
      items: z
        .array(
          z.looseObject({
            type: z.literal('action'),
            imageUrl: httpsUrl.optional(),
            // A quick reply button's label is at most 20 characters.
            action: z.looseObject({ type: z.enum(LINE_ACTION_TYPES), label: z.string().max(20).optional() }),
          }),
        )
        .max(13),
    })
    .optional(),
});

function lineProblems(m: BotMessage): string[] {
  const type = m.type ?? 'text';
  const fields = m as Record<string, unknown>;
  const missing = LINE_REQUIRED[type]
    .filter((k) => fields[k] === undefined || fields[k] === '')
    .filter((k) => k !== 'text'); // a text message without text is named above
  const problems = missing.length > 0 ? [`a ${type} message needs ${missing.join(' and ')}`] : [];
  const checked = lineChecks.safeParse(m);
  if (!checked.success)
    problems.push(...checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return problems;
}

/** One message's body. The sandbox takes either shape: LINE's as one message object, as LINE sends it. */
function body(m: BotMessage, family: TargetFamily): MessageBody {
  const has = (k: string) => (m as Record<string, unknown>)[k] !== undefined;
  if (family === 'sandbox' && LINE_FIELDS.some(has))
    return { ...(m.text ? { text: m.text } : {}), line: [lineMessage(m)] };
  const slackStyle = family === 'slack' || (family === 'sandbox' && SLACK_FIELDS.some(has));
  if (!slackStyle) return { text: m.text };
  const slack: NonNullable<MessageBody['slack']> = {};
  if (m.blocks) slack.blocks = m.blocks;
  if (m.where) slack.where = m.where;
  if (m.response_type) slack.response_type = m.response_type;
  if (m.replace_original !== undefined) slack.replace_original = m.replace_original;
  return { ...(m.text ? { text: m.text } : {}), slack };
}

/** A LINE message object: `{ text }` is a text message. */
function lineMessage(m: BotMessage): Record<string, unknown> {
  return m.type ? { ...m } : { ...m, type: 'text' };
}
