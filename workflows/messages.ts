// Operator messages to an event workflow. Each payload is one JSON object so that the Temporal Web
// UI's "Send a Signal" form can carry it; the CLI sends the same shapes.
import { defineQuery, defineSignal } from '@temporalio/workflow';

export type ReplyState =
  | 'received'
  | 'processing'
  | 'retry_wait'
  | 'unknown'
  | 'held'
  | 'awaiting_approval'
  | 'succeeded'
  | 'failed'
  | 'discarded'
  | 'duplicate'
  | 'stale';

export type ResolveAction = 'mark-sent' | 'resend' | 'discard';

export interface ResolveSignal {
  action: ResolveAction;
  operator: string;
  reason: string;
  /** Required with mark-sent: the id the target gave the message an operator found. */
  externalId?: string;
  /** Makes a repeated delivery of the same decision harmless: Temporal does not de-duplicate signals. */
  requestId?: string;
}

export interface ApproveSignal {
  approver: string;
  reason: string;
  requestId?: string;
}

export interface ReprocessSignal {
  operator: string;
  reason: string;
  requestId?: string;
}

/** One operator message as the workflow judged it. */
export interface OperatorDecision {
  at: string;
  signal: 'resolve' | 'approve' | 'reprocess';
  action: string;
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
  operatorHistory: OperatorDecision[];
}

export const resolveSignal = defineSignal<[ResolveSignal]>('resolve');
export const approveSignal = defineSignal<[ApproveSignal]>('approve');
export const reprocessSignal = defineSignal<[ReprocessSignal]>('reprocess');
export const statusQuery = defineQuery<StatusView>('status');
