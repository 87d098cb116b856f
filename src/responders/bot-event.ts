// The event a bot's logic is given (src/bot.ts), built from the normalised event: the same object for
// a module (RESPONDER_MODULE) and, as JSON, for a service (RESPONDER_URL). The fields of the request
// RESPONDER_URL received before (provider, eventId, conversationId, messageId, text) keep their names.
import type { BotEvent } from '../bot';
import { isChatEvent, type SandboxEvent, sandboxStyle } from '../providers/sandbox';
import type { InboundEvent } from '../providers/types';

type Loose = Record<string, unknown> | undefined;

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

export function toBotEvent(event: InboundEvent): BotEvent {
  const bot: BotEvent = {
    version: 1,
    provider: event.provider,
    eventId: event.eventId,
    eventType: event.eventType,
    occurredAt: event.occurredAt,
    conversationId: event.conversation?.id,
    messageId: event.message?.id,
    text: event.message?.text ?? '',
    user: event.message?.user,
    raw: event.payload,
  };
  const destination = event.replyTo?.destination ?? {};
  const payload = event.payload as Loose;
  switch (event.provider) {
    case 'slack': {
      const inner = payload?.event as Loose;
      // An Events API envelope: the bot gets Slack's `event`; interactivity and commands are their own
      // payload, less its response_url: a capability the bot has no use for and might log.
      if (inner && payload?.type === 'event_callback') bot.raw = inner;
      else bot.raw = withoutCapabilities(payload);
      bot.slack = {
        team: str(payload?.team_id) ?? str((payload?.team as Loose)?.id),
        channel:
          destination.channel ??
          str(inner?.channel) ??
          str((payload?.channel as Loose)?.id) ??
          str(payload?.channel_id),
        threadTs: destination.threadTs || undefined,
        ...slackInteraction(event.eventType, payload),
      };
      break;
    }
    case 'line': {
      const lineEvent = (payload?.events as Loose[] | undefined)?.[0];
      bot.raw = lineEvent ?? payload;
      const source = lineEvent?.source as NonNullable<BotEvent['line']>['source'] | undefined;
      const postback = linePostback(lineEvent);
      if (source) bot.line = { source, ...(postback ? { postback } : {}) };
      // A postback's text is its data (src/providers/line.ts); it carries no message of its own.
      if (postback) delete bot.messageId;
      break;
    }
    case 'github': {
      const repository = str((payload?.repository as Loose)?.full_name);
      const issue = (payload?.issue as Loose)?.number;
      if (repository) bot.github = { repository, ...(typeof issue === 'number' ? { issue } : {}) };
      break;
    }
    case 'sandbox':
      sandboxFields(bot, event.payload as SandboxEvent);
      break;
  }
  return bot;
}

/** A postback's data, and the string params a date picker (`date`, `time`, `datetime`) or a rich menu switch (`newRichMenuAliasId`, `status`) adds. */
function linePostback(lineEvent: Loose): NonNullable<BotEvent['line']>['postback'] {
  if (lineEvent?.type !== 'postback') return undefined;
  const postback = lineEvent.postback as Loose;
  const data = str(postback?.data);
  if (data === undefined) return undefined;
  const params = Object.entries((postback?.params as Loose) ?? {}).filter(
    (entry): entry is [string, string] => typeof entry[1] === 'string',
  );
  return params.length > 0 ? { data, params: Object.fromEntries(params) } : { data };
}

type SlackFields = NonNullable<BotEvent['slack']>;

/** What a command or an interaction (src/providers/slack-interactions.ts) tells the bot. */
function slackInteraction(eventType: string, payload: Loose): Partial<SlackFields> {
  switch (eventType) {
    case 'slash_command': {
      const command = str(payload?.command);
      return command ? { command } : {};
    }
    case 'block_actions': {
      const action = (payload?.actions as Loose[] | undefined)?.[0];
      const actionId = str(action?.action_id);
      if (!actionId) return {};
      const value = str(action?.value) ?? str((action?.selected_option as Loose)?.value);
      const blockId = str(action?.block_id);
      return {
        action: { actionId, ...(blockId ? { blockId } : {}), ...(value !== undefined ? { value } : {}) },
      };
    }
    case 'shortcut':
    case 'message_action': {
      const callbackId = str(payload?.callback_id);
      return callbackId ? { shortcut: { callbackId } } : {};
    }
    case 'view_submission':
    case 'view_closed': {
      const view = payload?.view as Loose;
      if (!view) return {};
      const callbackId = str(view.callback_id);
      const values = (view.state as Loose)?.values;
      return { view: { ...(callbackId ? { callbackId } : {}), ...(values !== undefined ? { values } : {}) } };
    }
    default:
      return {};
  }
}

/** The payload without the fields that carry a response_url (the provider leaves them out already). */
function withoutCapabilities(payload: Loose): unknown {
  if (!payload) return payload;
  const { response_url: _url, response_urls: _urls, ...rest } = payload;
  return rest;
}

/** The sandbox as the provider it plays (SandboxStyle): the same fields a real Slack or LINE event gives. */
function sandboxFields(bot: BotEvent, event: SandboxEvent): void {
  if (!isChatEvent(event)) return;
  if (sandboxStyle(event) === 'line') {
    bot.line = {
      source: { type: 'user', ...(event.user ? { userId: event.user } : {}) },
      ...(event.type === 'postback' ? { postback: event.postback } : {}),
    };
    // As from LINE: a postback carries no message of its own.
    if (event.type === 'postback') delete bot.messageId;
    return;
  }
  bot.slack = {
    team: 'sandbox',
    channel: event.conversationId,
    ...(event.type === 'slash_command' ? { command: event.command } : {}),
    ...(event.type === 'block_actions' ? { action: event.action } : {}),
  };
}
