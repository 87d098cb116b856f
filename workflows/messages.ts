// The messages workflows exchange: operator decisions to an event workflow (listed once, in DECISIONS;
// each payload one JSON object, so that the Temporal Web UI's "Send a Signal" form can carry it; the
// CLI sends the same shapes), its status query, and the turn signals between event workflows and
// their conversation's turns workflow (workflows/conversation.ts).
import type { UpdateDefinition } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate, type SignalDefinition } from '@temporalio/workflow';

export type ReplyState =
  | 'received'
  | 'processing'
  | 'unknown'
  | 'held'
  | 'awaiting_approval'
  | 'succeeded'
  | 'failed'
  | 'discarded'
  | 'duplicate'
  | 'stale';

/** What a `resolve` does with held or failed work. */
export const RESOLVE_ACTIONS = ['mark-sent', 'resend', 'discard'] as const;
export type ResolveAction = (typeof RESOLVE_ACTIONS)[number];

/** One operator decision as every layer lists it: plain data, so that workflow code may read it. */
interface DecisionSpec {
  /** The body the Web UI's form takes, for the update's and signal's descriptions. */
  readonly shape: string;
  /** What `replyflow <name>` says it does. */
  readonly cli: string;
  /** Whether its body names a `resolve` action (and, with mark-sent, the external id). */
  readonly takesAction: boolean;
  /** The state in which a body that names no decision and no action is this one (the codec server infers it). */
  readonly impliedBy?: ReplyState;
}

/**
 * The operator decisions, by the names of their updates (and of the signals runs started before use):
 * the workflow's handlers, the codec server's sealer, the operator API, the CLI and the roles read
 * this table. Their rules are `judge()` (workflows/operator.ts) and the desk's verdicts
 * (workflows/operator-desk.ts).
 */
const decisionTable = {
  resolve: {
    shape: `Decide a held or failed item: {"workflowId","action":${RESOLVE_ACTIONS.map((a) => `"${a}"`).join('|')},"reason","externalId"?}`,
    cli: 'decide held or failed work: mark-sent (with the external id), resend (needs approval), discard',
    takesAction: true,
  },
  approve: {
    shape: 'Approve a pending resend (a different operator from the one who asked): {"workflowId","reason"}',
    cli: 'approve a resend another operator asked for',
    takesAction: false,
    impliedBy: 'awaiting_approval',
  },
  reprocess: {
    shape: 'Run failed work again: {"workflowId","reason"}',
    cli: 'run failed work again through the same checks: one workflow, or a selection',
    takesAction: false,
    impliedBy: 'failed',
  },
} as const satisfies Record<string, DecisionSpec>;

export type DecisionName = keyof typeof decisionTable;

export const DECISIONS: Readonly<Record<DecisionName, DecisionSpec>> = decisionTable;

/** Every decision's name, in the table's order. */
export const DECISION_NAMES = Object.keys(DECISIONS) as DecisionName[];

export function isDecisionName(name: unknown): name is DecisionName {
  return typeof name === 'string' && Object.hasOwn(DECISIONS, name);
}

/** `"resolve", "approve" or "reprocess"` (quoted) or `resolve, approve or reprocess`: the names as messages list them. */
export function decisionList(quote = ''): string {
  const names = DECISION_NAMES.map((n) => `${quote}${n}${quote}`);
  return `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

/**
 * A decision as an operator types it (Web UI) or the CLI sends it, sealed on its way by the codec
 * server for the operator it authenticated (src/decision-seal.ts). Who decided is never a field of
 * the body: it comes from the verified seal.
 */
export interface DecisionInput {
  /** The workflow this decision is for: the seal is bound to it. */
  workflowId: string;
  /** The decision it is (the update's name): the seal is bound to it. Left out, the codec server infers it. */
  decision?: DecisionName;
  /**
   * The hold it answers (`status.hold`): the seal is bound to it, so it counts for nothing once the
   * effect moved on. Left out, the codec server takes the workflow's current one.
   */
  hold?: string;
  /** `resolve` only. */
  action?: ResolveAction;
  reason: string;
  /** Required with mark-sent: the id the target gave the message an operator found. */
  externalId?: string;
  /** Added by the codec server. */
  seal?: string;
}

/** The signal payloads of runs started before decisions were updates (kept so their histories replay). */
interface ResolveSignal {
  action: ResolveAction;
  operator: string;
  reason: string;
  /** Required with mark-sent: the id the target gave the message an operator found. */
  externalId?: string;
  /** Makes a repeated delivery of the same decision harmless: Temporal does not de-duplicate signals. */
  requestId?: string;
}

/** One operator message as the workflow judged it. */
export interface OperatorDecision {
  at: string;
  signal: DecisionName;
  action: string;
  /** The operator the seal proves, `(unverified)` when there is no valid seal; a name typed into a signal of a run started before decisions were sealed. */
  actor: string;
  reason?: string;
  requestId?: string;
  result: 'accepted' | 'rejected';
  /** Why a message was rejected, or what it led to. */
  detail?: string;
  stateBefore: ReplyState;
  stateAfter: ReplyState;
}

export interface StatusView {
  state: ReplyState;
  step?: string;
  attempts: number;
  lastErrorClass?: string;
  lastError?: string;
  recommendedAction?: string;
  businessKey?: string;
  effectId?: string;
  ownerWorkflowId?: string;
  reason?: string;
  pendingResend?: { operator: string; reason: string };
  /**
   * What a decision answers while one awaits it (held, awaiting approval, failed): the effect and its
   * attempts so far, `<effect id>:<attempts>`, or `plan:<n>` for an event no route could map (its nth
   * planning attempt; no effect exists). A sealed decision is bound to it.
   */
  hold?: string;
  operatorHistory: OperatorDecision[];
}

/** Each decision's update, by name: each answers with the verdict, `Accepted: …` or `Rejected: …`. */
export const DECISION_UPDATES = Object.fromEntries(
  DECISION_NAMES.map((name) => [name, defineUpdate<string, [DecisionInput]>(name)]),
) as Record<DecisionName, UpdateDefinition<string, [DecisionInput]>>;
export const resolveUpdate = DECISION_UPDATES.resolve;
export const approveUpdate = DECISION_UPDATES.approve;
export const reprocessUpdate = DECISION_UPDATES.reprocess;

/** The same decisions as signals: judged alike (sealed), but the verdict is only in `status` and the audit log. */
export const DECISION_SIGNALS = Object.fromEntries(
  DECISION_NAMES.map((name) => [name, defineSignal<[unknown]>(name)]),
) as Record<DecisionName, SignalDefinition<[unknown]>>;
export const resolveSignal = DECISION_SIGNALS.resolve as SignalDefinition<[ResolveSignal | DecisionInput]>;
export const statusQuery = defineQuery<StatusView>('status');

/**
 * Told to an event workflow held for a tenant whose installation was revoked (a Slack team that
 * uninstalled the app): the run reads the revocation itself, and only then ends its held work.
 */
export const tenantRevokedSignal = defineSignal<[{ tenant: string }]>('tenantRevoked');

/** The workflow that tells a revoked tenant's held work, once per revocation notice. */
export function tenantRevokedWorkflowId(tenant: string, noticeId: string): string {
  return `tenant-revoked:${tenant}:${noticeId}`;
}

/** The turns workflow of one conversation (or order). */
export function conversationWorkflowId(conversationKey: string): string {
  return `conversation:${conversationKey}`;
}

export interface TurnRequest {
  workflowId: string;
  /** One per acquisition (`<workflowId>#<n>`): an approved resend asks for a new turn. */
  requestId: string;
  /** Sorts requests: the source message's version, then its id. */
  orderKey: string;
}

/** An event workflow asks its conversation's turns workflow for a turn to send (signal-with-start). */
export const requestTurnSignal = defineSignal<[TurnRequest]>('requestTurn');
/** The event workflow holding the turn gives it back. */
export const releaseTurnSignal = defineSignal<[{ requestId: string }]>('releaseTurn');
/**
 * Sent by an event workflow whose send no longer holds its conversation back, to the workflow of the
 * conversation's next waiting send. Carries nothing: the receiver checks the order itself.
 */
export const yourTurnSignal = defineSignal('yourTurn');
/** Sent to the event workflow whose turn it is (runs started before sends were ordered by the effects table). */
export const turnGrantedSignal = defineSignal<[{ requestId: string }]>('turnGranted');
