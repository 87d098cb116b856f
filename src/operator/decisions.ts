// One operator decision on one event workflow: check that the workflow can take it, send the signal
// with a fresh requestId, then watch the workflow's `status` until it records its verdict on that
// requestId. The workflow judges and audits; this module only refuses what could never be judged.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  approveSignal,
  type OperatorDecision,
  type ReplyState,
  type ResolveAction,
  reprocessSignal,
  resolveSignal,
} from '../../workflows/messages';
import { OperatorInputError } from './errors';
import type { Role } from './roles';
import { QUERY_TIMEOUT_MS, type WorkflowStatus, workflowStatus } from './workflows';

export type DecisionRequest =
  | { signal: 'resolve'; action: ResolveAction; reason: string; externalId?: string }
  | { signal: 'approve'; reason: string }
  | { signal: 'reprocess'; reason: string };

/** The role each decision needs: asking for a resend and approving it are different roles. */
export function roleFor(request: DecisionRequest): Role {
  return request.signal === 'resolve' ? request.action : request.signal;
}

/** The action name the workflow writes to the audit log for this request. */
export function actionOf(request: DecisionRequest): string {
  return request.signal === 'resolve' ? request.action : request.signal;
}

/** Limits as the workflow applies them (workflows/operator.ts), checked here to fail before signalling. */
export function validateRequest(request: DecisionRequest): void {
  const reason = request.reason.trim();
  if (!reason) throw new OperatorInputError('a reason is required (--reason "…")');
  if (reason.length > 500) throw new OperatorInputError('the reason may be at most 500 characters');
  if (request.signal === 'resolve' && request.action === 'mark-sent') {
    const externalId = request.externalId?.trim();
    if (!externalId)
      throw new OperatorInputError('mark-sent needs --external-id: the id the target gave the message');
    if (externalId.length > 200)
      throw new OperatorInputError('the external id may be at most 200 characters');
  }
  if (request.signal === 'resolve' && request.action !== 'mark-sent' && request.externalId)
    throw new OperatorInputError('--external-id goes only with --action mark-sent');
}

/** Why the workflow cannot take this request in its current state, or undefined when it can. */
export function refusalFor(request: DecisionRequest, current: WorkflowStatus): string | undefined {
  const { state } = current.status;
  if (current.execution !== 'RUNNING')
    return `${current.workflowId} is closed (${current.execution.toLowerCase()}, state ${state}): nothing awaits a decision`;
  switch (request.signal) {
    case 'resolve':
      if (state !== 'held' && state !== 'awaiting_approval' && state !== 'failed')
        return `${current.workflowId} is not held or failed (state ${state})`;
      if (request.action === 'resend' && state === 'failed')
        return `${current.workflowId} failed: failed work is sent again with reprocess, not resend`;
      if (request.action === 'resend' && state === 'awaiting_approval')
        return `${current.workflowId} already has a resend awaiting approval`;
      return undefined;
    case 'approve':
      return state === 'awaiting_approval'
        ? undefined
        : `${current.workflowId} has no resend awaiting approval (state ${state})`;
    case 'reprocess':
      return state === 'failed'
        ? undefined
        : `${current.workflowId} is not failed (state ${state}): only failed work can be reprocessed`;
  }
}

export interface DecisionOutcome {
  workflowId: string;
  requestId: string;
  /** The workflow's verdict; undefined when it did not decide within the wait. */
  decision?: OperatorDecision;
  /** The workflow's state when the verdict was seen (or the wait ended). */
  state: ReplyState;
}

export interface DecideOptions {
  workflowId: string;
  operator: string;
  request: DecisionRequest;
  /** How long to watch for the verdict. @default 60s */
  waitMs?: number;
  /** Called once the signal is sent, so the caller can show the requestId before the wait. */
  onSent?: (requestId: string) => void;
  /** The status already read (a selection re-check); read afresh when omitted. */
  current?: WorkflowStatus;
}

const POLL_MS = 250;

export async function decide(client: Client, options: DecideOptions): Promise<DecisionOutcome> {
  const { workflowId, operator, request } = options;
  validateRequest(request);
  const current = options.current ?? (await workflowStatus(client, workflowId));
  const refusal = refusalFor(request, current);
  if (refusal) throw new OperatorInputError(refusal);

  const requestId = randomUUID();
  const handle = client.workflow.getHandle(workflowId, current.runId);
  const reason = request.reason.trim();
  switch (request.signal) {
    case 'resolve':
      await handle.signal(resolveSignal, {
        action: request.action,
        operator,
        reason,
        ...(request.externalId ? { externalId: request.externalId.trim() } : {}),
        requestId,
      });
      break;
    case 'approve':
      await handle.signal(approveSignal, { approver: operator, reason, requestId });
      break;
    case 'reprocess':
      await handle.signal(reprocessSignal, { operator, reason, requestId });
      break;
  }
  options.onSent?.(requestId);
  return awaitVerdict(client, workflowId, requestId, options.waitMs ?? 60_000);
}

/** Watches the `status` query (an observation of the workflow) until it shows the verdict on `requestId`. */
export async function awaitVerdict(
  client: Client,
  workflowId: string,
  requestId: string,
  waitMs: number,
): Promise<DecisionOutcome> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const { status } = await workflowStatus(client, workflowId, Math.min(QUERY_TIMEOUT_MS, waitMs));
    const decision = status.operatorHistory.find((d) => d.requestId === requestId);
    if (decision || Date.now() >= deadline) return { workflowId, requestId, decision, state: status.state };
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
