// The sandbox target API (what the `sandbox*` targets call) and the demo page's backend. It behaves
// like a real provider: idempotency keys (in `sandbox` mode), lookup by reference, and faults an
// operator arms for the next send (drop the response after committing, 500, 503, 429, slow). The
// page also sees where each of its messages stands (replied, held, …) and can hand off or close.
// Only workers (with the API token) reach the target API; only this machine reaches the page unless
// SANDBOX_ALLOW_REMOTE says otherwise.
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { createConversations } from '../db/conversations';
import { createEventLedger, type EventLedger } from '../db/events';
import type { Pool } from '../db/pool';
import { createSandboxFaults } from '../db/sandbox-faults';
import { createSandboxMessages } from '../db/sandbox-messages';
import { SANDBOX_FAULTS, SANDBOX_MODES } from '../model';
import {
  SANDBOX_STYLES,
  type SandboxChatEvent,
  sandboxBlockActionsSchema,
  sandboxPostbackSchema,
} from '../providers/sandbox';
import { signStandardWebhook } from '../providers/standard-webhooks';
import { SANDBOX_CONSISTENCY_DELAY_MS } from '../targets/sandbox';
import { sandboxPage } from './page';

export type { SandboxFault } from '../model';

interface SandboxOptions {
  pool: Pool;
  /** The secret the sandbox provider verifies; the page's messages are signed with it server-side. */
  webhookSecret: string;
  /** The bearer token the sandbox targets (workers) present to /sandbox/api/replies. */
  apiToken: string;
  /** Serve the page and its API to clients other than loopback. @default false */
  allowRemote?: boolean;
  /** Where /webhooks/sandbox is reachable from this process (known once the server listens). */
  receiverUrl: () => string;
  /** How long the `slow` fault holds a reply before answering (past the send attempt's timeout). */
  slowMs?: number;
  /** Link target for "open in Temporal UI". */
  temporalUiUrl?: string;
  namespace?: string;
}

const idPattern = /^[\w-]{1,64}$/;
/** A reply: text, and the Slack fields or LINE message objects the page shows (src/bot.ts shapes). */
const replySchema = z
  .object({
    conversationId: z.string().regex(idPattern),
    text: z.string().max(8000),
    slack: z
      .looseObject({
        blocks: z
          .array(z.looseObject({ type: z.string().min(1) }))
          .max(50)
          .optional(),
      })
      .optional(),
    line: z
      .array(z.looseObject({ type: z.string().min(1) }))
      .min(1)
      .max(5)
      .optional(),
    reference: z.string().min(1).max(200),
    mode: z.enum(SANDBOX_MODES),
  })
  .refine((r) => r.text !== '' || (r.slack?.blocks?.length ?? 0) > 0 || r.line !== undefined, {
    message: 'a reply needs text, blocks or LINE messages',
    path: ['text'],
  });
const messageSchema = z.object({
  conversationId: z.string().regex(idPattern),
  text: z.string().min(1).max(4000),
  mode: z.enum(SANDBOX_MODES).default('sandbox'),
  style: z.enum(SANDBOX_STYLES).default('slack'),
});
/** A button clicked or a quick reply chip tapped on the page; `label` is what the chat shows for it. */
const actionSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('block_actions'),
    conversationId: z.string().regex(idPattern),
    mode: z.enum(SANDBOX_MODES).default('sandbox'),
    label: z.string().min(1).max(200),
    action: sandboxBlockActionsSchema.shape.action,
  }),
  z.object({
    type: z.literal('postback'),
    conversationId: z.string().regex(idPattern),
    mode: z.enum(SANDBOX_MODES).default('sandbox'),
    label: z.string().min(1).max(200),
    postback: sandboxPostbackSchema.shape.postback,
  }),
]);
/** `/weather tokyo` in a Slack-style chat: the command and its arguments, as Slack sends them. */
const SLASH_COMMAND = /^(\/[\w-]{1,32})(?:\s+([\s\S]*))?$/;
const faultSchema = z.object({
  conversationId: z.string().regex(idPattern),
  fault: z.enum(SANDBOX_FAULTS).nullable(),
});
const conversationEventSchema = z.object({
  conversationId: z.string().regex(idPattern),
  type: z.enum(['handoff', 'close']),
});

/** Where the reply to one of the page's messages stands, in the words the page shows. */
type ReplyProgress =
  | 'received'
  | 'sending'
  | 'checking'
  | 'held'
  | 'replied'
  | 'failed'
  | 'discarded'
  | 'not answered';

const PROGRESS_BY_EFFECT: Record<string, ReplyProgress> = {
  claimed: 'sending',
  sending: 'sending',
  retry_wait: 'sending',
  unknown: 'checking',
  held: 'held',
  succeeded: 'replied',
  failed: 'failed',
  discarded: 'discarded',
  skipped: 'not answered',
};

/** The event id the page's message is delivered under (so its workflow id is known up front). */
export function sandboxEventId(conversationId: string, messageId: string): string {
  return `sbx_${conversationId}_${messageId}`;
}

/**
 * The id of the page's message in row `rowId`: the row number plus a MAC under the webhook secret.
 * Row numbers alone are guessable, and a guessed future id delivered first would make the real message
 * a "duplicate"; the MAC makes the id derivable here and nowhere else.
 */
export function pageMessageId(secret: string, conversationId: string, rowId: string): string {
  const mac = createHmac('sha256', secret).update(`${conversationId}:${rowId}`).digest('base64url');
  return `m${rowId}-${mac.slice(0, 22)}`;
}

/** Who the page's person is, to the bot (BotEvent `user`). */
const SANDBOX_USER = 'sandbox-user';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Whether a request comes from this machine: its peer is a loopback address and its Host names one
 * (a page on another site that rebinds its own name to 127.0.0.1 still sends that name).
 */
export function fromLoopback(req: Pick<Request, 'socket' | 'headers'>): boolean {
  const peer = req.socket.remoteAddress ?? '';
  const loopbackPeer = peer === '::1' || /^(::ffff:)?127\./.test(peer);
  const host = (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
  return loopbackPeer && LOOPBACK_HOSTS.has(host);
}

/** Constant-time check of `Authorization: Bearer <token>`. */
function bearerMatches(req: Request, token: string): boolean {
  const given = Buffer.from(req.get('authorization') ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function sandboxRouter(options: SandboxOptions): express.Router {
  const { pool } = options;
  const messages = createSandboxMessages(pool);
  const faults = createSandboxFaults(pool);
  const conversations = createConversations(pool);
  const ledger = createEventLedger(pool);
  const router = express.Router();
  const json = express.json({ limit: '64kb' });
  // Answered with 404, not 403: to anyone it is not for, the sandbox does not exist.
  const pageOnly = (req: Request, res: Response, next: NextFunction) =>
    options.allowRemote || fromLoopback(req) ? next() : void res.status(404).json({ error: 'not found' });
  const workersOnly = (req: Request, res: Response, next: NextFunction) =>
    bearerMatches(req, options.apiToken)
      ? next()
      : void res.status(401).json({ error: 'the sandbox target API needs its token (SANDBOX_API_TOKEN)' });

  /** Signs an event as a Standard Webhooks sender does and posts it to this receiver. */
  const deliver = async (eventId: string, body: object) => {
    const raw = JSON.stringify(body);
    const response = await fetch(`${options.receiverUrl()}/webhooks/sandbox`, {
      method: 'POST',
      headers: signStandardWebhook(options.webhookSecret, eventId, raw),
      body: raw,
    }).catch(() => undefined);
    return response && { status: response.status, answer: (await response.json()) as unknown };
  };

  router.get('/sandbox', pageOnly, (_req, res) => {
    res
      .type('html')
      .send(sandboxPage({ temporalUiUrl: options.temporalUiUrl, namespace: options.namespace ?? 'default' }));
  });

  /**
   * Records what the person did as their message in the chat (`shown`), then delivers it as the
   * sandbox event `event`, under an id derived from the row (pageMessageId).
   */
  const sendChatEvent = async (
    res: Response,
    conversationId: string,
    shown: string,
    event: DistributiveOmit<SandboxChatEvent, 'conversationId' | 'messageId' | 'sentAt'>,
  ) => {
    const rowId = await messages.addUserMessage(conversationId, shown, event.type);
    const messageId = pageMessageId(options.webhookSecret, conversationId, rowId);
    const body = {
      ...event,
      conversationId,
      messageId,
      user: SANDBOX_USER,
      sentAt: new Date().toISOString(),
    };
    const delivered = await deliver(sandboxEventId(conversationId, messageId), body);
    if (!delivered) return void res.status(502).json({ error: 'the receiver did not answer' });
    res.status(delivered.status).json({ messageId, receiver: delivered.answer });
  };

  // The page posts here; the server signs it like a Standard Webhooks sender and delivers it. In a
  // Slack-style chat, `/command args` is a slash command.
  router.post('/sandbox/messages', pageOnly, json, async (req: Request, res: Response) => {
    const parsed = messageSchema.safeParse(req.body);
    if (!parsed.success)
      return void res.status(400).json({ error: 'invalid message', issues: parsed.error.issues });
    const { conversationId, text, mode, style } = parsed.data;
    const command = style === 'slack' ? SLASH_COMMAND.exec(text.trim()) : null;
    if (command)
      return sendChatEvent(res, conversationId, text, {
        type: 'slash_command',
        command: command[1]!,
        text: command[2] ?? '',
        target: mode,
      });
    await sendChatEvent(res, conversationId, text, { type: 'message', text, style, target: mode });
  });

  // A button of the bot's blocks (Slack's block_actions) or a quick reply chip's postback (LINE's).
  router.post('/sandbox/actions', pageOnly, json, async (req: Request, res: Response) => {
    const parsed = actionSchema.safeParse(req.body);
    if (!parsed.success)
      return void res.status(400).json({ error: 'invalid action', issues: parsed.error.issues });
    const { conversationId, label, mode, ...rest } = parsed.data;
    const event =
      rest.type === 'block_actions'
        ? { type: rest.type, action: rest.action, text: rest.action.value ?? label, target: mode }
        : { type: rest.type, postback: rest.postback, target: mode };
    await sendChatEvent(res, conversationId, label, event);
  });

  // "Ask for a person" and "End conversation": conversation events, no reply expected.
  router.post('/sandbox/conversation-events', pageOnly, json, async (req: Request, res: Response) => {
    const parsed = conversationEventSchema.safeParse(req.body);
    if (!parsed.success)
      return void res.status(400).json({ error: 'invalid event', issues: parsed.error.issues });
    const { conversationId, type } = parsed.data;
    const eventId = sandboxEventId(conversationId, `${type}-${randomUUID().slice(0, 8)}`);
    const delivered = await deliver(eventId, { type, conversationId, sentAt: new Date().toISOString() });
    if (!delivered) return void res.status(502).json({ error: 'the receiver did not answer' });
    res.status(delivered.status).json({ receiver: delivered.answer });
  });

  router.get('/sandbox/api/conversations/:id/messages', pageOnly, async (req, res) => {
    const conversationId = String(req.params.id);
    if (!idPattern.test(conversationId))
      return void res.status(400).json({ error: 'invalid conversation id' });
    const eventIdOf = (rowId: string) =>
      sandboxEventId(conversationId, pageMessageId(options.webhookSecret, conversationId, rowId));
    const rows = await messages.conversation(conversationId);
    const [armedFault, conversation, replies] = await Promise.all([
      faults.armed(conversationId),
      conversations.state(`sandbox:${conversationId}`),
      replyProgress(
        ledger,
        rows.filter((m) => m.author === 'user').map((m) => eventIdOf(m.id)),
      ),
    ]);
    res.json({
      messages: rows.map((m) => (m.author === 'user' ? { ...m, reply: replies.get(eventIdOf(m.id)) } : m)),
      armedFault,
      conversationState: conversation?.state ?? 'unhandled',
    });
  });

  router.post('/sandbox/api/faults', pageOnly, json, async (req, res) => {
    const parsed = faultSchema.safeParse(req.body);
    if (!parsed.success)
      return void res.status(400).json({ error: 'invalid fault', issues: parsed.error.issues });
    const { conversationId, fault } = parsed.data;
    await faults.arm(conversationId, fault);
    res.json({ conversationId, armedFault: fault });
  });

  router.post('/sandbox/api/replies', workersOnly, json, async (req: Request, res: Response) => {
    const parsed = replySchema.safeParse(req.body);
    if (!parsed.success)
      return void res.status(400).json({ error: 'invalid reply', issues: parsed.error.issues });
    const { conversationId, text, slack, line, reference, mode } = parsed.data;
    const key = req.get('idempotency-key');
    const fault = await faults.take(conversationId);
    if (fault === 'rate-limit-429')
      return void res.status(429).set('Retry-After', '2').json({ error: 'ratelimited' });
    if (fault === 'unavailable-503')
      return void res.status(503).json({ error: 'unavailable, not processed' });
    if (fault === 'error-500') return void res.status(500).json({ error: 'internal error' });
    if (mode === 'sandbox' && key) {
      const replayed = await messages.replyByKey(key);
      if (replayed !== undefined) return void res.status(200).json({ id: replayed, replayed: true });
    }
    const id = await messages.addBotReply({
      conversationId,
      text,
      slack,
      line,
      idempotencyKey: mode === 'sandbox' ? key : undefined,
      reference,
      visibleAfterMs: mode === 'sandbox-lookup' ? SANDBOX_CONSISTENCY_DELAY_MS : 0,
    });
    if (fault === 'drop-after-commit') return void (req.socket as Socket).destroy();
    if (fault === 'slow') await new Promise((r) => setTimeout(r, options.slowMs ?? 45_000));
    res.status(201).json({ id });
  });

  router.get('/sandbox/api/replies', workersOnly, async (req, res) => {
    const reference = String(req.query.reference ?? '');
    if (!reference) return void res.status(400).json({ error: 'reference is required' });
    const id = await messages.visibleReply(reference);
    if (id === undefined) return void res.status(404).json({ error: 'not found' });
    res.json({ id });
  });

  return router;
}

/**
 * Where the reply to each event stands: the effect row while it runs, the event's outcome once its
 * workflow ended, and the last operator decision. Identifiers and states only, never text.
 */
async function replyProgress(ledger: EventLedger, eventIds: string[]) {
  const rows = await ledger.sandboxReplies(eventIds);
  const found = new Map(rows.map((r) => [r.event_id, r]));
  return new Map(
    eventIds.map((eventId) => {
      const row = found.get(eventId);
      const state: ReplyProgress = row?.effect_status
        ? (PROGRESS_BY_EFFECT[row.effect_status] ?? 'sending')
        : row?.outcome
          ? row.outcome === 'succeeded'
            ? 'replied'
            : 'not answered'
          : 'received';
      return [
        eventId,
        {
          state,
          workflowId: row?.workflow_id ?? `webhook:sandbox:${eventId}`,
          reason: state === 'not answered' ? (row?.outcome_reason ?? row?.outcome) : undefined,
          decision: row?.decision ?? undefined,
        },
      ];
    }),
  );
}
