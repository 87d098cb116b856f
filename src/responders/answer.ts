// A bot's answer (src/bot.ts: null, a message, an array, or { messages }) checked against what the
// reply's target can send, and prepared as the bodies the send protocol carries: one effect per
// message, except LINE, whose messages go in one request (a reply token answers once, with up to five).
// Problems are named by path and never quote the bot's text.
import { type BotMessage, type BotReply, botReplySchema } from '../bot';
import type { MessageBody, PreparedReply } from '../model';
import { PermanentResponderError } from './types';

/** LINE's text message limit (https://developers.line.biz/en/reference/messaging-api/#text-message). */
const LINE_TEXT_MAX = 5000;
/** GitHub's comment body limit. */
const GITHUB_TEXT_MAX = 65_536;
/** Fields that belong to Slack's message shape (src/bot.ts). */
const SLACK_FIELDS = ['blocks', 'where', 'response_type', 'replace_original'] as const;

/** Fields that belong to LINE's message objects. */
const LINE_FIELDS = ['type', 'quickReply'] as const;

export type TargetFamily = 'slack' | 'line' | 'sandbox' | 'other';

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
    throw new PermanentResponderError(
      `the answer is not a reply (docs/responders.md): ${parsed.error.issues
        .map((i) => `${i.path.join('.') || '(answer)'}: ${i.message}`)
        .join('; ')}`,
    );
  const answer = parsed.data as BotReply;
  const messages = listOf(answer).filter((m) => !isEmpty(m));
  if (messages.length === 0) return { text: null };
  const family = targetFamily(target);
  const problems = messages.flatMap((m, i) => check(m, family).map((p) => `messages.${i}: ${p}`));
  if (problems.length > 0)
    throw new PermanentResponderError(`the answer cannot be sent to ${target}: ${problems.join('; ')}`);
  // One plain text: prepared as every answer was before richer ones (histories replay the same).
  if (messages.length === 1 && isPlainText(messages[0]!)) return { text: messages[0]!.text! };
  if (family === 'line') return { text: null, messages: [{ line: messages.map(lineMessage) }] };
  return { text: null, messages: messages.map((m) => body(m, family)) };
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
      if (m.type === 'flex' && (!has('altText') || !has('contents')))
        problems.push('a flex message needs altText and contents');
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
