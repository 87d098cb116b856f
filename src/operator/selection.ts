// Reprocessing a selection of failed work: a plan from Temporal visibility, each item checked against
// the workflow's own state and its effect row, and checked again immediately before acting, so that
// an item that changed since the plan (resolved, reprocessed, taken over) is skipped, not pushed. The
// operator acts on the items one by one (the CLI, through the operator API), seeing each outcome.
import type { Client } from '@temporalio/client';
import type { Pool } from '../db/pool';
import { PLAN_STEP } from '../model';
import { accepted, decide } from './decisions';
import { OperatorInputError } from './errors';
import { effectsOf } from './inspect';
import { listEventWorkflows, scopedQuery, visibleTo, type WorkflowStatus, workflowStatus } from './workflows';

export interface SelectionItem {
  workflowId: string;
  integration?: string;
  businessKey?: string;
  /** The workflow's state as its `status` query reported it. */
  state?: string;
  /** The effect row's status (the row the workflow's current step owns). */
  effectStatus?: string;
  verdict: 'reprocess' | 'skip';
  /** Why an item is skipped. */
  why?: string;
}

interface Checked {
  item: SelectionItem;
  current?: WorkflowStatus;
}

/** Reads the workflow's state and its effect row, and says whether reprocessing it is sound now. */
async function check(client: Client, pool: Pool, workflowId: string, integration?: string): Promise<Checked> {
  const base: SelectionItem = { workflowId, integration, verdict: 'skip' };
  let current: WorkflowStatus;
  try {
    current = await workflowStatus(client, workflowId);
  } catch (err) {
    if (err instanceof OperatorInputError) return { item: { ...base, why: err.message } };
    throw err;
  }
  const { status } = current;
  const item: SelectionItem = { ...base, businessKey: status.businessKey, state: status.state };
  if (current.execution !== 'RUNNING') return { item: { ...item, why: 'the workflow is closed' } };
  if (status.state !== 'failed') return { item: { ...item, why: `state is ${status.state}, not failed` } };
  // A failed plan has no effect row (nothing was planned, claimed or sent): the workflow plans again.
  if (status.step === PLAN_STEP && status.hold?.startsWith('plan:'))
    return { item: { ...item, verdict: 'reprocess' }, current };
  const row = (await effectsOf(pool, workflowId)).find((e) => e.id === status.effectId);
  if (!row) return { item: { ...item, why: 'no effect row for its current step' } };
  const checked = { ...item, effectStatus: row.status };
  if (row.workflowId !== workflowId)
    return { item: { ...checked, why: `its business key is owned by ${row.workflowId}` } };
  if (row.status !== 'failed')
    return { item: { ...checked, why: `its effect is ${row.status}, not failed` } };
  return { item: { ...checked, verdict: 'reprocess' }, current };
}

/** Whose work a selection may take: an operator's tenants (null: every tenant), and one asked for. */
interface SelectionScope {
  tenants: string[] | null;
  tenant?: string;
}

/** What a reprocess of the query's failed work would do. Reads only; changes nothing. */
export async function planReprocess(
  client: Client,
  pool: Pool,
  query: string,
  scope: SelectionScope = { tenants: null },
): Promise<SelectionItem[]> {
  const running = scopedQuery(`(${query}) AND ExecutionStatus = "Running"`, scope.tenants, scope.tenant);
  const listed = visibleTo(await listEventWorkflows(client, running), scope.tenants);
  const plan: SelectionItem[] = [];
  for (const entry of listed)
    plan.push((await check(client, pool, entry.workflowId, entry.integration)).item);
  return plan;
}

export interface ItemResult {
  workflowId: string;
  businessKey?: string;
  result: 'accepted' | 'rejected' | 'skipped' | 'undecided';
  /** The workflow's verdict, or why the item was skipped. */
  detail?: string;
  /** The run and update a reprocess went to (undecided: its verdict can be waited for again). */
  runId?: string;
  updateId?: string;
}

interface ItemOptions {
  reason: string;
  /** How long to wait for the workflow's verdict. @default 60s */
  waitMs?: number;
}

/**
 * Reprocesses one planned item, re-checking it immediately before its update: one that changed
 * since the plan (discarded, reprocessed, succeeded, its business key taken over) is skipped.
 */
export async function reprocessItem(
  client: Client,
  pool: Pool,
  planned: Pick<SelectionItem, 'workflowId' | 'integration' | 'businessKey'>,
  options: ItemOptions,
): Promise<ItemResult> {
  const { workflowId, businessKey } = planned;
  const { item, current } = await check(client, pool, workflowId, planned.integration);
  if (!current)
    return { workflowId, businessKey, result: 'skipped', detail: `changed since the plan: ${item.why}` };
  if (item.businessKey !== businessKey)
    return {
      workflowId,
      businessKey,
      result: 'skipped',
      detail: 'changed since the plan: another business key',
    };
  try {
    const outcome = await decide(client, {
      workflowId,
      request: { signal: 'reprocess', reason: options.reason },
      waitMs: options.waitMs,
      current,
    });
    const result = outcome.verdict === undefined ? 'undecided' : accepted(outcome) ? 'accepted' : 'rejected';
    return {
      workflowId,
      businessKey,
      runId: outcome.runId,
      updateId: outcome.updateId,
      result,
      detail: outcome.verdict,
    };
  } catch (err) {
    if (err instanceof OperatorInputError)
      return { workflowId, businessKey, result: 'skipped', detail: `changed since the plan: ${err.message}` };
    throw err;
  }
}
