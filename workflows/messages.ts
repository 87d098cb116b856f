// The messages workflows exchange: operator decisions to an event workflow (each payload one JSON
// object, so that the Temporal Web UI's "Send a Signal" form can carry it; the CLI sends the same
// shapes), its status query, and the turn signals between event workflows and their conversation's
// turns workflow (workflows/conversation.ts).
import { defineQuery, defineSignal } from '@temporalio/workflow';

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
/** Sent to the event workflow whose turn it is. */
export const turnGrantedSignal = defineSignal<[{ requestId: string }]>('turnGranted');
