// Slack slash commands and interactivity (buttons, menus, modals, shortcuts) at `/webhooks/slack`:
// form-encoded bodies, signed like every Slack request (src/providers/slack.ts verifies them first),
// normalised into events of their own types whose answer goes to the payload's `response_url`
// (src/targets/slack-response.ts). A `response_url` is a capability: it travels only in the reply's
// destination, never in the payload that routes, the bot (BotEvent.raw) or logs see.
import { z } from 'zod';
import { slackTenant } from '../tenants/tenant-id';
import { parseJson, validate } from './parse';
import type { InboundEvent, ProviderResult, RequestContext } from './types';

/** The target that answers through a payload's `response_url`. */
export const SLACK_RESPONSE_TARGET = 'slack-response';

/**
 * The event types of commands and interactivity, as the receiver names them (`eventType`): a slash
 * command, and the interaction payload `type`s that carry something to dedupe on
 * (https://api.slack.com/reference/interaction-payloads, checked Nov 2026).
 */
export const SLACK_INTERACTION_EVENT_TYPES = [
  'slash_command',
  'block_actions',
  'message_action',
  'shortcut',
  'view_closed',
  'view_submission',
] as const;

export const SLACK_FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded';

const usableId = z.string().regex(/^[\w.:-]{1,200}$/, 'must be 1-200 letters, digits, or . _ : -');
/** A Slack timestamp (`1548426417.840180`): seconds, and micros after the dot. */
const slackTs = z.string().regex(/^\d{1,11}(\.\d{1,6})?$/);
const responseUrl = z.url({ protocol: /^https?$/ });

/**
 * A slash command's form (@slack/bolt SlashCommand). `trigger_id` is Slack's id of this one invocation
 * (a fresh one per command, button click, shortcut or submission): the dedupe key.
 */
const slashCommand = z.looseObject({
  command: z.string().min(1),
  text: z.string().default(''),
  team_id: usableId,
  channel_id: z.string().min(1),
  user_id: z.string().min(1),
  trigger_id: usableId,
  response_url: responseUrl,
});

const team = z.looseObject({ id: z.string().min(1) }).nullish();
const user = z.looseObject({ id: z.string().min(1) });

/** The element a person used (@slack/bolt BlockElementAction): what its value or label says. */
const elementAction = z.looseObject({
  action_id: z.string().min(1),
  block_id: z.string().optional(),
  action_ts: slackTs.optional(),
  value: z.string().optional(),
  text: z.looseObject({ text: z.string() }).optional(),
  // An Option's value is optional (@slack/types Option): a radio button may carry only its text.
  selected_option: z.looseObject({ value: z.string().optional() }).nullish(),
});

const blockActions = z.looseObject({
  type: z.literal('block_actions'),
  trigger_id: usableId,
  team,
  user,
  channel: z.looseObject({ id: z.string().min(1) }).optional(),
  actions: z.array(elementAction).min(1),
  response_url: responseUrl.optional(),
});

const messageAction = z.looseObject({
  type: z.literal('message_action'),
  trigger_id: usableId,
  callback_id: z.string().min(1),
  action_ts: slackTs.optional(),
  team,
  user,
  channel: z.looseObject({ id: z.string().min(1) }),
  message: z.looseObject({ ts: z.string().min(1), text: z.string().optional() }),
  response_url: responseUrl,
});

/** A global shortcut: no channel and no response_url (only a modal, opened with trigger_id, answers it). */
const globalShortcut = z.looseObject({
  type: z.literal('shortcut'),
  trigger_id: usableId,
  callback_id: z.string().min(1),
  action_ts: slackTs.optional(),
  team,
  user,
});

const view = z.looseObject({
  id: usableId,
  callback_id: z.string().optional(),
  state: z.looseObject({ values: z.unknown() }).optional(),
});

/** A submitted modal; `response_urls` only when one of its inputs asked for a channel to answer in. */
const viewSubmission = z.looseObject({
  type: z.literal('view_submission'),
  trigger_id: usableId,
  team,
  user,
  view,
  response_urls: z
    .array(z.looseObject({ channel_id: z.string().min(1), response_url: responseUrl }))
    .optional(),
});

/**
 * A modal closed (sent only when it asked with `notify_on_close`). It has no trigger_id; a view is
 * closed once, so its `view.id` keys the event.
 */
const viewClosed = z.looseObject({ type: z.literal('view_closed'), team, user, view });

const interactionType = z.looseObject({ type: z.string().min(1) });

/** Fields that carry a capability URL: kept out of the payload everything downstream can see. */
const CAPABILITY_FIELDS = ['response_url', 'response_urls'];

function withoutCapabilities(payload: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(payload).filter(([key]) => !CAPABILITY_FIELDS.includes(key)));
}

/** Reads a form-encoded command or interaction; @throws WebhookPayloadError (400) when malformed. */
export function parseSlackForm(ctx: RequestContext): ProviderResult {
  const form = Object.fromEntries(new URLSearchParams(ctx.rawBody.toString('utf8')));
  if (form.payload === undefined) return { kind: 'events', events: [command(form, ctx)], ack: 'empty' };
  const payload = parseJson(Buffer.from(form.payload, 'utf8'));
  const event = interaction(payload, ctx);
  return event
    ? { kind: 'events', events: [event], ack: 'empty' }
    : { kind: 'ignored', reason: 'unknown_envelope_type', ack: 'empty' };
}

interface Normalised {
  eventType: string;
  eventId: string;
  payload: Record<string, unknown>;
  team?: string;
  channel?: string;
  user?: string;
  text?: string;
  /** Slack's time of the interaction (`action_ts`), when it gives one. */
  ts?: string;
  responseUrl?: string;
}

function command(form: Record<string, string>, ctx: RequestContext): InboundEvent {
  const body = validate(slashCommand, form);
  return normalise(ctx, {
    eventType: 'slash_command',
    eventId: body.trigger_id,
    payload: body,
    team: body.team_id,
    channel: body.channel_id,
    user: body.user_id,
    text: body.text,
    responseUrl: body.response_url,
  });
}

/** An interaction payload as an event; undefined for a type that carries nothing to key it on. */
function interaction(payload: unknown, ctx: RequestContext): InboundEvent | undefined {
  const { type } = validate(interactionType, payload);
  switch (type) {
    case 'block_actions': {
      const body = validate(blockActions, payload);
      const action = body.actions[0]!;
      return normalise(ctx, {
        eventType: type,
        eventId: body.trigger_id,
        payload: body,
        team: body.team?.id,
        channel: body.channel?.id,
        user: body.user.id,
        text: action.value ?? action.selected_option?.value ?? action.text?.text ?? '',
        ts: action.action_ts,
        responseUrl: body.response_url,
      });
    }
    case 'message_action': {
      const body = validate(messageAction, payload);
      return normalise(ctx, {
        eventType: type,
        eventId: body.trigger_id,
        payload: body,
        team: body.team?.id,
        channel: body.channel.id,
        user: body.user.id,
        text: body.message.text ?? '',
        ts: body.action_ts,
        responseUrl: body.response_url,
      });
    }
    case 'shortcut': {
      const body = validate(globalShortcut, payload);
      return normalise(ctx, {
        eventType: type,
        eventId: body.trigger_id,
        payload: body,
        team: body.team?.id,
        user: body.user.id,
        ts: body.action_ts,
      });
    }
    case 'view_submission': {
      const body = validate(viewSubmission, payload);
      const answerIn = body.response_urls?.[0];
      return normalise(ctx, {
        eventType: type,
        eventId: body.trigger_id,
        payload: body,
        team: body.team?.id,
        channel: answerIn?.channel_id,
        user: body.user.id,
        text: '',
        responseUrl: answerIn?.response_url,
      });
    }
    case 'view_closed': {
      const body = validate(viewClosed, payload);
      return normalise(ctx, {
        eventType: type,
        eventId: `view_closed:${body.view.id}`,
        payload: body,
        team: body.team?.id,
        user: body.user.id,
      });
    }
    default:
      // interactive_message, dialog_submission, block_suggestion and types Slack adds later.
      return undefined;
  }
}

/**
 * The event: a chat message (what the responder answers) when the person's input can be answered,
 * i.e. Slack gave a response_url, keyed by the invocation (two clicks on one button are two
 * operations).
 */
/**
 * The installation a command (`enterprise_id`, `is_enterprise_install` "true") or an interaction
 * (`enterprise.id`, `is_enterprise_install` true) came through, read leniently.
 */
const installationOf = z.looseObject({
  enterprise_id: z.string().nullish(),
  enterprise: z.looseObject({ id: z.string() }).nullish(),
  is_enterprise_install: z.union([z.boolean(), z.string()]).optional(),
});

function tenantOfPayload(team: string | undefined, payload: unknown): string | undefined {
  const parsed = installationOf.safeParse(payload);
  const found = parsed.success ? parsed.data : {};
  return slackTenant({
    team,
    enterprise: found.enterprise?.id ?? found.enterprise_id ?? undefined,
    enterpriseInstall: found.is_enterprise_install === true || found.is_enterprise_install === 'true',
  });
}

function normalise(ctx: RequestContext, n: Normalised): InboundEvent {
  const tenant = tenantOfPayload(n.team, n.payload);
  const event: InboundEvent = {
    provider: 'slack',
    eventId: n.eventId,
    workflowId: `webhook:slack:${n.eventId}`,
    eventType: n.eventType,
    ...(n.ts ? { occurredAt: new Date(Number(n.ts) * 1000).toISOString() } : {}),
    receivedAt: ctx.receivedAt.toISOString(),
    correlationId: ctx.correlationId,
    ...(tenant ? { tenant } : {}),
    payload: withoutCapabilities(n.payload),
  };
  if (!n.responseUrl || !n.team || n.text === undefined) return event;
  const conversationId = n.channel ? `${n.team}:${n.channel}` : n.team;
  return {
    ...event,
    conversation: { id: conversationId, ...(n.ts ? { version: n.ts } : {}) },
    message: { id: n.eventId, text: n.text, ...(n.user ? { user: n.user } : {}) },
    replyTo: {
      target: SLACK_RESPONSE_TARGET,
      kind: 'answer',
      destination: { responseUrl: n.responseUrl, ...(n.channel ? { channel: n.channel } : {}) },
    },
  };
}
