// One operator decision on one event workflow: check that the workflow can take it, then execute the
// decision's Workflow Update with a fresh update id and return the workflow's verdict. The client's
// payload codec seals the decision on its way, for the operator the operator API authenticated (the
// codec server's sealer, src/temporal/codec-server.ts); the workflow verifies the seal and judges
// roles, the two-person rule and the state. This module only refuses what could never be judged, so
// that a typo costs no audit row.
import { randomUUID } from 'node:crypto';
import {
  ApplicationFailure,
  type Client,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { DECISION_UPDATES, type DecisionInput, type ResolveAction } from '../../workflows/messages';
import { Failure } from '../failures';
import { OperatorInputError } from './errors';
import type { WorkflowStatus } from './workflows';
import { workflowStatus } from './workflows';

export type DecisionRequest =
  | { signal: 'resolve'; action: ResolveAction; reason: string; externalId?: string }
  | { signal: 'approve'; reason: string }
  | { signal: 'reprocess'; reason: string };

/** The action name the workflow writes to the audit log for this request. */
export function actionOf(request: DecisionRequest): string {
  return request.signal === 'resolve' ? request.action : request.signal;
}

/** Limits as the workflow applies them (workflows/operator.ts), checked here to fail before deciding. */
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
function refusalFor(request: DecisionRequest, current: WorkflowStatus): string | undefined {
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
  /** The run the update went to: its verdict can be waited for again ({@link awaitVerdict}). */
  runId: string;
  /** The update's id: the server runs an update id once, however often the call is retried. */
  updateId: string;
  /** The workflow's answer, `Accepted: …` or `Rejected: …`; undefined when none came within the wait. */
  verdict?: string;
}

export function accepted(outcome: DecisionOutcome): boolean {
  return outcome.verdict?.startsWith('Accepted') ?? false;
}

/**
 * A decision Update's verdict: its result when accepted, `Rejected: <reason>` when the workflow
 * refused it (the Update fails then, so that the Web UI shows the refusal as a failure).
 */
export async function updateVerdict(result: Promise<string>): Promise<string> {
  try {
    return await result;
  } catch (err) {
    const { cause } = err as { cause?: unknown };
    if (
      err instanceof WorkflowUpdateFailedError &&
      cause instanceof ApplicationFailure &&
      cause.type === Failure.DecisionRejected
    )
      return `Rejected: ${cause.message}`;
    throw err;
  }
}

interface DecideOptions {
  workflowId: string;
  request: DecisionRequest;
  /** How long to wait for the verdict. @default 60s */
  waitMs?: number;
  /** The status already read (a selection re-check); read afresh when omitted. */
  current?: WorkflowStatus;
}

export async function decide(client: Client, options: DecideOptions): Promise<DecisionOutcome> {
  const { workflowId, request } = options;
  validateRequest(request);
  const current = options.current ?? (await workflowStatus(client, workflowId));
  const refusal = refusalFor(request, current);
  if (refusal) throw new OperatorInputError(refusal);

  // Who decides is not part of the input: the seal says that, from the operator's token. The
  // decision's name is, and the seal is bound to it (and to the hold it answers, read when sealed).
  const input: DecisionInput = {
    workflowId,
    decision: request.signal,
    reason: request.reason.trim(),
    ...(request.signal === 'resolve' ? { action: request.action } : {}),
    ...(request.signal === 'resolve' && request.externalId ? { externalId: request.externalId.trim() } : {}),
  };
  const updateId = randomUUID();
  const handle = client.workflow.getHandle(workflowId, current.runId);
  try {
    const verdict = await client.connection.withDeadline(Date.now() + (options.waitMs ?? 60_000), () =>
      updateVerdict(handle.executeUpdate(DECISION_UPDATES[request.signal], { args: [input], updateId })),
    );
    return { workflowId, runId: current.runId, updateId, verdict };
  } catch (err) {
    if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)
      return { workflowId, runId: current.runId, updateId };
    throw err;
  }
}

/**
 * Waits up to `waitMs` more for the verdict of an update {@link decide} sent. @returns the outcome,
 * without a verdict when none came; @throws OperatorInputError when the run knows no such update.
 */
export async function awaitVerdict(
  client: Client,
  sent: { workflowId: string; runId: string; updateId: string },
  waitMs: number,
): Promise<DecisionOutcome> {
  const update = client.workflow
    .getHandle(sent.workflowId, sent.runId)
    .getUpdateHandle<string>(sent.updateId);
  try {
    const verdict = await client.connection.withDeadline(Date.now() + waitMs, () =>
      updateVerdict(update.result()),
    );
    return { ...sent, verdict };
  } catch (err) {
    if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return sent;
    // The SDK says so for an update id the run never took, as for a run that is gone.
    if (err instanceof WorkflowNotFoundError)
      throw new OperatorInputError(`${sent.workflowId} has no update ${sent.updateId} in run ${sent.runId}`);
    throw err;
  }
}
