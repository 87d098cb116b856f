// Reading event workflows for operators: lists from Temporal visibility (search attributes only) and
// one workflow's `status` query, bounded in time so a missing worker is an error, not a hang.

import { type Client, isGrpcServiceError, type WorkflowExecutionInfo } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { StatusView } from '../../workflows/messages';
import { statusQuery } from '../../workflows/messages';
import {
  Attempts,
  BusinessKey,
  FailedStep,
  Integration,
  LastErrorClass,
  RecommendedAction,
  ReplyState,
  Tenant,
} from '../../workflows/search-attributes';
import { mayWorkFor } from '../db/operators';
import { errorMessage } from '../failures';
import { parseTenant } from '../tenants/tenant-id';
import { OperatorInputError, WorkflowUnansweredError } from './errors';

/** One row of the `held` and `failed` lists: identifiers and classifications, never message text. */
export interface WorkItem {
  workflowId: string;
  runId: string;
  state?: string;
  integration?: string;
  businessKey?: string;
  failedStep?: string;
  attempts?: number;
  lastErrorClass?: string;
  recommendedAction?: string;
  /** The account the event came through (the `Tenant` search attribute). */
  tenant?: string;
  /** When the event's workflow started (the event arrived). */
  startedAt: string;
  ageMs: number;
  execution: string;
  taskQueue: string;
}

/** Only event workflows; the conversations' turn workflows carry no ReplyState. */
const EVENT_WORKFLOWS = 'WorkflowType="handleEvent"';

function workItem(info: WorkflowExecutionInfo, now: number): WorkItem {
  const sa = info.typedSearchAttributes;
  return {
    workflowId: info.workflowId,
    runId: info.runId,
    state: sa.get(ReplyState),
    integration: sa.get(Integration),
    businessKey: sa.get(BusinessKey),
    failedStep: sa.get(FailedStep),
    attempts: sa.get(Attempts),
    lastErrorClass: sa.get(LastErrorClass),
    recommendedAction: sa.get(RecommendedAction),
    tenant: sa.get(Tenant),
    startedAt: info.startTime.toISOString(),
    ageMs: now - info.startTime.getTime(),
    execution: info.status.name,
    taskQueue: info.taskQueue,
  };
}

/** Event workflows matching a visibility query (Temporal's list filter syntax), oldest first. */
export async function listEventWorkflows(client: Client, query: string): Promise<WorkItem[]> {
  const now = Date.now();
  const items: WorkItem[] = [];
  try {
    for await (const info of client.workflow.list({ query: `(${query}) AND ${EVENT_WORKFLOWS}` })) {
      items.push(workItem(info, now));
    }
  } catch (err) {
    if (isInvalidArgument(err))
      throw new OperatorInputError(`Temporal refused the query: ${errorMessage(err)}`);
    throw err;
  }
  return items.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}

function isInvalidArgument(err: unknown): boolean {
  const cause = err instanceof Error ? err.cause : undefined;
  // 3 is gRPC's INVALID_ARGUMENT: the server could not parse the list filter.
  return [err, cause].some((e) => isGrpcServiceError(e) && e.code === 3);
}

interface WorkFilter {
  integration?: string;
  /** Only work of this tenant (validated: a well-formed tenant id). */
  tenant?: string;
  /** Only work whose event arrived at or after this time. */
  since?: Date;
  /** Closed workflows too (failed work nobody reprocessed in time); default: only running ones. */
  includeClosed?: boolean;
}

/** The visibility query for held (including awaiting approval) or failed work. */
function workQuery(kind: 'held' | 'failed', filter: WorkFilter = {}): string {
  const parts = [kind === 'held' ? 'ReplyState IN ("held", "awaiting_approval")' : 'ReplyState = "failed"'];
  if (filter.integration) parts.push(`Integration = ${quote(filter.integration)}`);
  if (filter.tenant) parts.push(tenantClause([filter.tenant]));
  if (filter.since) parts.push(`StartTime >= ${quote(filter.since.toISOString())}`);
  if (!filter.includeClosed) parts.push('ExecutionStatus = "Running"');
  return parts.join(' AND ');
}

/** A string literal in Temporal's list filter syntax. */
export function quote(value: string): string {
  return JSON.stringify(value);
}

/**
 * `Tenant = "…"` (or `IN (…)`) for tenant ids, each checked to be one first: a value that is not a
 * tenant id never reaches the query. @throws OperatorInputError naming the first that is not.
 */
function tenantClause(tenants: readonly string[]): string {
  const bad = tenants.find((t) => !parseTenant(t));
  if (bad !== undefined || tenants.length === 0)
    throw new OperatorInputError(
      `not a tenant: ${JSON.stringify((bad ?? '').slice(0, 80))} (slack:T…, slack:E…, line:U… or github:<installation id>)`,
    );
  return tenants.length === 1
    ? `Tenant = ${quote(tenants[0]!)}`
    : `Tenant IN (${tenants.map(quote).join(', ')})`;
}

/**
 * `query` narrowed to the tenants an operator may see (null: every tenant), and to `tenant` when
 * asked for. The list is filtered again by each item's tenant: a query typed by the operator cannot
 * widen it.
 */
export function scopedQuery(query: string, tenants: string[] | null, tenant?: string): string {
  const parts = [`(${query})`];
  if (tenant !== undefined) parts.push(tenantClause([tenant]));
  if (tenants !== null) parts.push(tenantClause(tenants));
  return parts.join(' AND ');
}

/** Only the items of tenants an operator may see (null: every tenant). */
export function visibleTo(items: WorkItem[], tenants: string[] | null): WorkItem[] {
  return tenants === null ? items : items.filter((item) => mayWorkFor({ tenants }, item.tenant));
}

/** Held or failed work, of the tenants an operator may see (null: every tenant). */
export async function listWork(
  client: Client,
  kind: 'held' | 'failed',
  filter: WorkFilter = {},
  tenants: string[] | null = null,
): Promise<WorkItem[]> {
  return visibleTo(await listEventWorkflows(client, scopedQuery(workQuery(kind, filter), tenants)), tenants);
}

export interface WorkflowStatus {
  workflowId: string;
  runId: string;
  /** The `Tenant` search attribute: the account the event came through. */
  tenant?: string;
  execution: string;
  taskQueue: string;
  startedAt: string;
  closedAt?: string;
  /** The OpenTelemetry trace of the request that started the run, when traces were on (docs/runbook.md, "Traces"). */
  traceId?: string;
  status: StatusView;
}

/** How long a status query may take before an operator is told that no worker answered. */
const QUERY_TIMEOUT_MS = 15_000;

/**
 * Describes the workflow and asks its `status` query. An unknown id is bad input; a query nobody
 * answers in time names the likely cause (no worker on its task queue).
 */
export async function workflowStatus(
  client: Client,
  workflowId: string,
  timeoutMs = QUERY_TIMEOUT_MS,
): Promise<WorkflowStatus> {
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError) throw new OperatorInputError(`no workflow ${workflowId}`);
    throw err;
  });
  if (description.type !== 'handleEvent')
    throw new OperatorInputError(`${workflowId} is a ${description.type} workflow, not an event workflow`);
  const status = await client.connection
    .withDeadline(Date.now() + timeoutMs, () => handle.query(statusQuery))
    .catch((err: unknown) => {
      throw new WorkflowUnansweredError(
        `${workflowId} did not answer its status query (${errorMessage(err)}); is a worker running on task queue ${description.taskQueue}?`,
      );
    });
  return {
    workflowId,
    runId: description.runId,
    tenant: description.typedSearchAttributes.get(Tenant),
    execution: description.status.name,
    taskQueue: description.taskQueue,
    startedAt: description.startTime.toISOString(),
    closedAt: description.closeTime?.toISOString(),
    ...(typeof description.memo?.traceId === 'string' && { traceId: description.memo.traceId }),
    status,
  };
}
