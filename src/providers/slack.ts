// Slack at `/webhooks/slack`: the v0 request signature, the url_verification handshake, Events API
// envelopes normalised so that a mention's `message` and `app_mention` events share a key, how a
// message addresses the app (slackAddressing), which the worker's default route decides on, and
// form-encoded slash commands and interactivity (src/providers/slack-interactions.ts).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { slackTenant } from '../tenants/tenant-id';
import { ProviderUnavailableError, WebhookVerificationError } from './errors';
import { epochSeconds, epochToIso, parseJson, validate } from './parse';
import { parseSlackForm, SLACK_FORM_CONTENT_TYPE } from './slack-interactions';
import {
  header,
  type InboundEvent,
  type ProviderResult,
  type RequestContext,
  type WebhookProvider,
} from './types';

/** Slack rejects requests whose timestamp is more than five minutes from now, either way. */
const SLACK_TIMESTAMP_TOLERANCE_SECONDS = 300;

function slackSignature(secret: string, timestamp: string, body: Buffer | string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(body).digest('hex')}`;
}

/**
 * Verifies `X-Slack-Signature` (v0: hex HMAC-SHA256 of `v0:{timestamp}:{raw body}`) with a
 * constant-time compare, and `X-Slack-Request-Timestamp` within ±300 s of when the request arrived.
 * Slack ships no light verifier for Node, so this follows
 * https://api.slack.com/authentication/verifying-requests-from-slack (checked Nov 2026) and is proven
 * against the example from that page in test/unit/providers/slack.test.ts.
 */
export function verifySlackRequest(secret: string, ctx: RequestContext): void {
  const timestamp = header(ctx.headers, 'x-slack-request-timestamp');
  const signature = header(ctx.headers, 'x-slack-signature');
  if (!timestamp || !signature) {
    throw new WebhookVerificationError('missing X-Slack-Request-Timestamp or X-Slack-Signature header');
  }
  if (!/^\d{1,12}$/.test(timestamp)) {
    throw new WebhookVerificationError('X-Slack-Request-Timestamp is not a number of seconds');
  }
  const skew = Math.abs(Math.floor(ctx.receivedAt.getTime() / 1000) - Number(timestamp));
  if (skew > SLACK_TIMESTAMP_TOLERANCE_SECONDS) {
    throw new WebhookVerificationError('X-Slack-Request-Timestamp is outside the 300 s window');
  }
  const expected = Buffer.from(slackSignature(secret, timestamp, ctx.rawBody));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new WebhookVerificationError(
      'X-Slack-Signature does not match the raw body; check SLACK_SIGNING_SECRET (the signing secret, not a token)',
    );
  }
}

const usableId = z.string().regex(/^[\w.:-]{1,200}$/, 'must be 1-200 letters, digits, or . _ : -');

const urlVerification = z.object({ type: z.literal('url_verification'), challenge: z.string().min(1) });

// Loose: the whole envelope is kept as the payload, so routes can map any Slack field. The fields
// required are those @slack/bolt's EnvelopedEvent declares required.
const eventCallback = z.looseObject({
  type: z.literal('event_callback'),
  team_id: usableId,
  event_id: usableId,
  event_time: epochSeconds,
  event: z.looseObject({ type: z.string().min(1) }),
});

/** Every envelope names its type; the ones above are read, any other is acknowledged and ignored. */
const envelopeType = z.looseObject({ type: z.string().min(1) });

/** The event types a reply may answer: what the app subscribes to (deploy/slack-app-manifest.yaml). */
export const SLACK_CHAT_EVENT_TYPES = ['message', 'app_mention'] as const;

/** The fields of a `message` or `app_mention` event that a reply, and the choice to reply, need. */
const chatEvent = z.object({
  type: z.enum(SLACK_CHAT_EVENT_TYPES),
  subtype: z.string().optional(),
  bot_id: z.string().optional(),
  channel: z.string().min(1),
  /** `im` for a direct message (@slack/types GenericMessageEvent); app_mention has none. */
  channel_type: z.string().optional(),
  user: z.string().optional(),
  text: z.string().optional(),
  ts: z.string().min(1),
  event_ts: z.string().optional(),
  thread_ts: z.string().optional(),
  /** On a reply in a thread: who posted the thread's parent. */
  parent_user_id: z.string().optional(),
});

/**
 * A person's message: what a reply may answer (slackAddressing says whether one should). Slack sends a
 * mention twice (`message` and `app_mention`, different event ids, same `ts`); a message with a subtype
 * (edits, joins, bot posts) or a `bot_id` is not a person talking, and answering bots could loop two
 * bots into each other.
 */
function personMessage(event: unknown) {
  const parsed = chatEvent.safeParse(event);
  if (!parsed.success || parsed.data.subtype !== undefined || parsed.data.bot_id !== undefined) {
    return undefined;
  }
  return parsed.data;
}

/** An envelope, as far as its event goes: slackAddressing reads the InboundEvent payload, the whole envelope. */
const wrappedEvent = z.looseObject({ event: z.unknown() });

/**
 * The envelope's `authorizations`: one installation the event is visible to, whose `user_id` is the
 * app's bot user when `is_bot` (https://api.slack.com/apis/events-api#authorizations and
 * https://api.slack.com/changelog/2020-09-15-events-api-truncate-authed-users, checked Nov 2026).
 * Slack lists at most one: for an app with bot scopes only (deploy/slack-app-manifest.yaml) that is
 * its bot. Read leniently, entry by entry: without one, a `message` is not known to mention the bot,
 * and its `app_mention` twin still is.
 */
const authorizationList = z.looseObject({ authorizations: z.array(z.unknown()) });
const botAuthorization = z.looseObject({
  user_id: z.string().min(1),
  is_bot: z.literal(true),
});

function botUsers(envelope: unknown): string[] {
  const list = authorizationList.safeParse(envelope);
  if (!list.success) return [];
  return list.data.authorizations.flatMap((entry) => {
    const bot = botAuthorization.safeParse(entry);
    return bot.success ? [bot.data.user_id] : [];
  });
}

/**
 * How a person's Slack message reaches the app, which is what the default route decides on
 * (DESIGN.md §2, "Default routes"): it mentions the bot, it is a direct message, it replies in a
 * thread (`threadTs`: the parent's ts; `parentIsBot`: the bot posted the parent), or it is a plain
 * message in a channel.
 */
type SlackAddressing = { channel: string } & (
  | { kind: 'mention' | 'direct' | 'channel' }
  | { kind: 'thread'; threadTs: string; parentIsBot: boolean }
);

/**
 * How the person's message in an event_callback envelope addresses the app; undefined when the event
 * is not a person's message. A `message` whose text carries `<@BOT>` (or `<@BOT|name>`) is a mention
 * as much as its `app_mention` twin: either may arrive first, and `message.im` or a channel without
 * `app_mention` send only the one.
 */
export function slackAddressing(envelope: unknown): SlackAddressing | undefined {
  const wrapped = wrappedEvent.safeParse(envelope);
  const event = wrapped.success ? personMessage(wrapped.data.event) : undefined;
  if (!event) return undefined;
  const { channel } = event;
  const bots = botUsers(envelope);
  const text = event.text ?? '';
  const mentioned = bots.some((id) => text.includes(`<@${id}>`) || text.includes(`<@${id}|`));
  if (event.type === 'app_mention' || mentioned) return { channel, kind: 'mention' };
  if (event.channel_type === 'im') return { channel, kind: 'direct' };
  if (event.thread_ts && event.thread_ts !== event.ts) {
    const parentIsBot = event.parent_user_id !== undefined && bots.includes(event.parent_user_id);
    return { channel, kind: 'thread', threadTs: event.thread_ts, parentIsBot };
  }
  return { channel, kind: 'channel' };
}

/** Slack's retry headers, for the ledger; they are not signed, so only well-formed values are kept. */
function redeliveryOf(ctx: RequestContext): InboundEvent['redelivery'] {
  const retryNum = header(ctx.headers, 'x-slack-retry-num');
  const retryReason = header(ctx.headers, 'x-slack-retry-reason');
  if (retryNum === undefined && retryReason === undefined) return undefined;
  return {
    ...(retryNum !== undefined && /^\d{1,3}$/.test(retryNum) ? { retryNum: Number(retryNum) } : {}),
    ...(retryReason !== undefined && /^[a-z_]{1,40}$/.test(retryReason) ? { retryReason } : {}),
  };
}

/**
 * The envelope's installation, from its first authorization (Bolt reads the same), else from the
 * envelope's own `is_enterprise_install`: the notice that an app was uninstalled may come without
 * authorizations, there being none left.
 */
const installationOf = z.looseObject({
  enterprise_id: z.string().nullish(),
  is_enterprise_install: z.boolean().optional(),
  authorizations: z.array(z.looseObject({ is_enterprise_install: z.boolean().optional() })).optional(),
});

function envelopeTenant(body: z.infer<typeof eventCallback>): string | undefined {
  const parsed = installationOf.safeParse(body);
  const installation = parsed.success ? parsed.data : {};
  return slackTenant({
    team: body.team_id,
    enterprise: installation.enterprise_id ?? undefined,
    enterpriseInstall:
      (installation.authorizations?.[0]?.is_enterprise_install ?? installation.is_enterprise_install) ===
      true,
  });
}

function normalise(body: z.infer<typeof eventCallback>, ctx: RequestContext): InboundEvent {
  const tenant = envelopeTenant(body);
  const event: InboundEvent = {
    provider: 'slack',
    eventId: body.event_id,
    workflowId: `webhook:slack:${body.event_id}`,
    eventType: body.event.type,
    occurredAt: epochToIso(body.event_time, 's'),
    receivedAt: ctx.receivedAt.toISOString(),
    correlationId: ctx.correlationId,
    ...(tenant ? { tenant } : {}),
    payload: body,
  };
  const redelivery = redeliveryOf(ctx);
  if (redelivery) event.redelivery = redelivery;
  const message = personMessage(body.event);
  if (!message) return event;
  return {
    ...event,
    conversation: { id: `${body.team_id}:${message.channel}`, version: message.event_ts ?? message.ts },
    message: { id: message.ts, text: message.text ?? '', user: message.user },
    replyTo: {
      target: 'slack',
      kind: 'answer',
      destination: {
        channel: message.channel,
        threadTs: message.thread_ts ?? message.ts,
        ...(tenant ? { tenant } : {}),
      },
    },
  };
}

/**
 * The notices that end an installation: the app was uninstalled from a workspace (`app_uninstalled`),
 * or its bot token was revoked (`tokens_revoked` listing bot users; user tokens are not ours).
 * https://docs.slack.dev/reference/events/app_uninstalled and /tokens_revoked (checked Nov 2026).
 */
export const SLACK_INSTALLATION_EVENT_TYPES = ['app_uninstalled', 'tokens_revoked'] as const;

const revocationEvent = z.looseObject({
  type: z.enum(SLACK_INSTALLATION_EVENT_TYPES),
  tokens: z.looseObject({ bot: z.array(z.unknown()).optional() }).optional(),
});

/** Which installation an event says is gone, and why; undefined for every other event. */
function slackRevocation(event: InboundEvent): { tenant: string; reason: string } | undefined {
  if (event.provider !== 'slack' || !event.tenant) return undefined;
  const parsed = revocationEvent.safeParse((event.payload as { event?: unknown })?.event);
  if (!parsed.success) return undefined;
  if (parsed.data.type === 'tokens_revoked' && !parsed.data.tokens?.bot?.length) return undefined;
  return { tenant: event.tenant, reason: parsed.data.type };
}

/** Where the receiver records that an installation is gone (tenant_credentials' `revoke`). */
export interface SlackRevocations {
  revoke(tenant: string, reason: string, eventId: string): Promise<void>;
}

/**
 * The Slack provider, revoking an installation when Slack says it is gone, before the delivery is
 * acknowledged: a revocation that cannot be recorded now is a 503, and Slack delivers it again.
 */
export function revokingSlackProvider(
  provider: WebhookProvider<ProviderResult>,
  revocations: SlackRevocations,
): WebhookProvider {
  return {
    ...provider,
    async parse(ctx) {
      const result = provider.parse(ctx);
      if (result.kind !== 'events') return result;
      for (const event of result.events) {
        const revoked = slackRevocation(event);
        if (!revoked) continue;
        try {
          await revocations.revoke(revoked.tenant, revoked.reason, event.eventId);
        } catch (err) {
          throw new ProviderUnavailableError(
            `could not record ${revoked.reason} for ${revoked.tenant}: ${(err as Error)?.name ?? 'error'}`,
          );
        }
      }
      return result;
    },
  };
}

/** Commands and interactivity come form-encoded; the receiver admitted only the two content types. */
function isForm(ctx: RequestContext): boolean {
  const type = header(ctx.headers, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  return type === SLACK_FORM_CONTENT_TYPE;
}

export function slackProvider(signingSecret: string): WebhookProvider<ProviderResult> {
  return {
    name: 'slack',
    contentTypes: ['application/json', SLACK_FORM_CONTENT_TYPE],
    verify(ctx) {
      verifySlackRequest(signingSecret, ctx);
    },
    parse(ctx): ProviderResult {
      if (isForm(ctx)) return parseSlackForm(ctx);
      const body = parseJson(ctx.rawBody);
      const { type } = validate(envelopeType, body);
      if (type === 'url_verification') {
        const { challenge } = validate(urlVerification, body);
        return { kind: 'answer', status: 200, body: { challenge } };
      }
      if (type === 'event_callback')
        return { kind: 'events', events: [normalise(validate(eventCallback, body), ctx)] };
      // `app_rate_limited` (Slack stopped delivering for a minute) and envelope types Slack adds later
      // carry no event: a non-2xx would only count as a failed delivery against the app.
      return { kind: 'ignored', reason: type === 'app_rate_limited' ? type : 'unknown_envelope_type' };
    },
  };
}
