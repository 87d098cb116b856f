// The domain model every layer shares: what an event asks for (plans, steps, effects), what a target
// promises, and the states an effect row moves through. Types and constants only, with no imports
// from above: the workflow, the activities, the targets and the routes all build on this file.
import type { TransitionRequest } from './conversations';

/** What a target promises; the workflow picks the unknown-outcome path from it. */
export interface TargetCapabilities {
  /** The target de-duplicates on our idempotency key, so a resend with the same key is safe. */
  idempotencyKey: boolean;
  /** The target can tell whether our effect already happened (by effect id or reference). */
  lookup: boolean;
  /** How long a committed effect may stay invisible to lookup. */
  consistencyDelayMs: number;
}

/** How a target adapter classifies a failed request (docs/targets.md). */
export type ErrorClass = 'retryable' | 'permanent' | 'unknown';

/** One step of an effect: one request to one target. */
export interface StepPlan {
  name: string;
  target: string;
  /** Target-specific destination (channel and thread, conversation, URL template values). */
  destination: Record<string, string>;
  /**
   * `reply`: the responder writes the answer once. `payload`: a body mapped from the event. `message`:
   * a later message of an answer the responder already wrote (each message is an effect of its own).
   */
  content: { kind: 'reply' } | { kind: 'payload'; body: unknown } | { kind: 'message'; body: MessageBody };
}

/**
 * What one send carries: a chat message's text (and the provider's own fields of it), or an HTTP
 * target's JSON body. The same bytes on every attempt.
 */
export interface MessageBody {
  text?: string;
  json?: unknown;
  /** Slack's fields of a message (src/bot.ts): `where: 'channel'` posts outside the thread. */
  slack?: {
    blocks?: unknown[];
    where?: 'thread' | 'channel';
    response_type?: 'ephemeral' | 'in_channel';
    replace_original?: boolean;
  };
  /** LINE message objects, sent in one request: a reply token answers once, with up to five. */
  line?: Record<string, unknown>[];
}

/**
 * A responder's answer, prepared for sending: `text` alone (one plain message, as every answer was
 * before richer ones), or `messages`, sent in order, each its own effect. `text` null and no
 * messages: the responder chose not to reply.
 */
export interface PreparedReply {
  text: string | null;
  messages?: MessageBody[];
}

/**
 * The step one message is sent with: a Slack message the bot asked to post in the channel leaves
 * the thread out (so that its lookup reads the channel, too).
 */
export function stepForBody(step: StepPlan, body: MessageBody): StepPlan {
  if (body.slack?.where !== 'channel' || !step.destination.threadTs) return step;
  const { threadTs: _thread, ...destination } = step.destination;
  return { ...step, destination };
}

/** One business operation that must happen exactly once, keyed by its business key. */
export interface EffectPlan {
  integration: string;
  /** Unique per business operation: chat (channel, conversation, source message, reply kind); order (shop, order, unit, operation). */
  businessKey: string;
  conversationId?: string;
  steps: StepPlan[];
}

/** Knobs of the protocol that operators may tune per deployment (worker config). */
export interface DeliveryPolicy {
  /** Send attempts for retryable errors, and their total time budget. */
  maxAttempts: number;
  maxElapsedMs: number;
  /** The send attempt's lease: its start-to-close timeout. */
  sendTimeoutMs: number;
  /** Reminder delays while held; the last one repeats. */
  reminderScheduleMs: number[];
  /** How long failed work waits for `reprocess` or `discard` before the workflow closes as failed. */
  failedParkMs: number;
  /** A conversation's turns wait this long before the first grant, so late-arriving earlier messages sort first. */
  turnGatherMs: number;
}

/** What an alert to operators is about: work that became held or failed, or held work still waiting. */
export const ALERT_KINDS = ['held', 'failed', 'reminder'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface Plan {
  effects: EffectPlan[];
  policy: DeliveryPolicy;
  /** The built-in FAQ answers in-process (a local activity); a responder service is called as an activity. */
  responderIsLocal?: boolean;
  /** What the event asks of its conversation's (or order's) business state; also orders its sends. */
  transition?: TransitionRequest;
}

/** The step a failed plan names (`FailedStep`): no effect was planned, so none was claimed or sent. */
export const PLAN_STEP = 'planEffects';

/**
 * What a planning failure tells the event workflow (the details of its `RouteMappingError`
 * failure): the route, its integration, the field, the failure in words and the fix; never a value.
 */
export interface PlanFailureDetails {
  route: string;
  integration: string;
  field: string;
  error: string;
  fix: string;
  /** This deployment's policy: how long the failed event waits for a decision. */
  policy: DeliveryPolicy;
}

/** `effects.status`: where one effect stands. src/db/effects.ts owns every change of it. */
export type EffectStatus =
  | 'claimed'
  | 'sending'
  | 'retry_wait'
  | 'unknown'
  | 'held'
  | 'succeeded'
  | 'failed'
  | 'discarded'
  /** The responder chose not to reply: settled, nothing sent. */
  | 'skipped';

export interface ClaimInput {
  effectId: string;
  workflowId: string;
  correlationId: string;
  integration: string;
  businessKey: string;
  conversationId?: string;
  step: StepPlan;
  stepIndex: number;
  /** Where the effect stands in its conversation's order of sends (absent: not ordered). */
  order?: { conversationKey: string; orderKey: string };
}

/** The business key of one step's effect row: the effect's own, with `#<step>` when it has several. */
export function stepBusinessKey(effect: EffectPlan, step: StepPlan): string {
  return effect.steps.length > 1 ? `${effect.businessKey}#${step.name}` : effect.businessKey;
}

/**
 * What claiming step `stepIndex` of `effect` asks for: one place, for the workflow and for the
 * admission that claims an event's first step in the same local activity. `ordered`: the effect
 * keeps its conversation's order in the effects table (runs with one-task sends).
 */
export function claimInput(options: {
  effectId: string;
  workflowId: string;
  correlationId: string;
  plan: Plan;
  effect: EffectPlan;
  stepIndex: number;
  ordered: boolean;
}): ClaimInput {
  const { effect, stepIndex, plan } = options;
  const step = effect.steps[stepIndex]!;
  return {
    effectId: options.effectId,
    workflowId: options.workflowId,
    correlationId: options.correlationId,
    integration: effect.integration,
    businessKey: stepBusinessKey(effect, step),
    conversationId: effect.conversationId,
    step,
    stepIndex,
    ...(options.ordered && plan.transition
      ? { order: { conversationKey: plan.transition.conversationKey, orderKey: plan.transition.orderKey } }
      : {}),
  };
}

export type ClaimResult =
  /** `attempts`: the row's, when it was there before (an earlier run of this workflow claimed it). */
  | {
      kind: 'owned';
      effectId: string;
      status: EffectStatus;
      capabilities: TargetCapabilities;
      attempts?: number;
    }
  | { kind: 'duplicate'; ownerWorkflowId: string; ownerStatus: EffectStatus };

export interface SendInput {
  effectId: string;
  step: StepPlan;
  /** The prepared reply or mapped body: the same bytes on every attempt. */
  body: MessageBody;
  /**
   * Send no earlier than this (ISO time): the source message's occurrence plus the gather window, so
   * that earlier messages delivered a little later are claimed first and go first.
   */
  gatherUntil?: string;
  /**
   * The event whose ledger row this send marks `succeeded` when it succeeds: the run's last step, so
   * the workflow need not record its outcome in a step of its own (runs with local sends).
   */
  ledgerOnSuccess?: { provider: string; eventId: string };
}

/**
 * How long a send waits inside its attempt for an earlier send of its conversation that is close
 * ahead, before its workflow waits to be told instead (activities/send.ts). Its attempt's timeout
 * allows for it.
 */
export const TURN_WAIT_MS = 5000;

export type SendOutcome =
  | { result: 'succeeded'; externalId: string; attempts: number }
  | { result: 'failed'; errorClass: 'permanent'; error: string; fix: string; attempts: number }
  | { result: 'unknown'; reason: string; leaseExpiresAt: string; attempts: number }
  /** An earlier send of the conversation is still pending: nothing was sent; wait for the turn. */
  | { result: 'wait'; earlier: number; attempts: number };

export type LookupOutcome = { found: true; externalId: string } | { found: false };

/** What a resend (approved, or a reprocess) may do after re-reading the row and looking it up. */
export type ResendCheck =
  | { kind: 'ready' }
  | { kind: 'already-sent'; externalId: string }
  | { kind: 'wait'; detail: string }
  /**
   * The effect is past the hold the decision answered: an attempt was made since (a decision counted
   * in a run a reset replaced, say). Nothing was changed; the row's status and attempts are now these.
   */
  | { kind: 'moved'; status: EffectStatus; attempts: number };

/**
 * The sandbox target's three flavours (src/targets/sandbox.ts): the sandbox page and its provider
 * name one of them per message, so the list lives here, below both.
 */
export const SANDBOX_MODES = ['sandbox', 'sandbox-lookup', 'sandbox-blind'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** Faults an operator arms for a conversation's next sandbox send (the page; the chaos injector). */
export const SANDBOX_FAULTS = [
  'drop-after-commit',
  'error-500',
  'unavailable-503',
  'rate-limit-429',
  'slow',
] as const;
export type SandboxFault = (typeof SANDBOX_FAULTS)[number];

/** One role per kind of decision, so that asking for a resend and approving it stay with different people. */
export const OPERATOR_ROLES = [
  'view',
  'resend',
  'mark-sent',
  'discard',
  'approve',
  'reprocess',
  'conversation',
] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

/**
 * What a worker's payload codec hands the workflow instead of a payload it refuses (plaintext, or
 * ciphertext that does not authenticate): only the receiver and replyflow's own servers, which hold
 * the payload key, may put data in front of a workflow (src/temporal/codec.ts).
 */
export interface RefusedPayload {
  replyflowRefusedPayload: string;
}

export function isRefusedPayload(value: unknown): value is RefusedPayload {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<RefusedPayload>).replyflowRefusedPayload === 'string'
  );
}
