// Compares the event ledger, the effects table and Temporal, and reports what does not add up: an
// acknowledged event with no workflow, a send whose lease ran out long ago, held work nobody was
// alerted about, held work no workflow waits on (terminated, cancelled), an event without an
// outcome long after it should have one. Reads only.
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { ReplyState } from '../../workflows/search-attributes';
import { createAlerts } from '../db/alerts';
import { createEffectsRepository } from '../db/effects';
import { createEventLedger } from '../db/events';
import type { Pool } from '../db/pool';
import { listWork, type WorkItem } from './workflows';

/** A timed-out send is retried within the send retry policy's longest interval (10 min); after that it is stuck. */
const LEASE_SLACK_MS = 10 * 60_000;
/** The alert activity's retries end well within this; a held item older than it should have its alert. */
const ALERT_SLACK_MS = 5 * 60_000;

interface MissingWorkflow {
  provider: string;
  eventId: string;
  workflowId: string;
  receivedAt: string;
}

interface NoOutcome extends MissingWorkflow {
  why: string;
}

interface ExpiredLease {
  effectId: string;
  workflowId: string;
  businessKey: string;
  leaseExpiresAt: string | null;
}

interface UnalertedHeld {
  workflowId: string;
  businessKey?: string;
}

/** A held effect whose workflow no longer waits for a decision. */
interface UnwatchedHold {
  effectId: string;
  workflowId: string;
  businessKey: string;
  status: string;
}

export interface ReconcileReport {
  checkedAt: string;
  /** The namespace's retention: older events may rightly have no workflow left. */
  retentionMs: number;
  /** Running work in a state other than held or failed is reported once older than this. */
  graceMs: number;
  ackedWithoutWorkflow: MissingWorkflow[];
  expiredLeases: ExpiredLease[];
  heldWithoutAlert: UnalertedHeld[];
  /**
   * Held effect rows whose workflow is not running held (it was terminated or cancelled): nothing
   * will send them, and nobody is asked. (A held workflow never ends on its own; failed work that
   * nobody reprocessed in time closes by design, and `failed --include-closed` lists it.) `temporal workflow reset` of that workflow
   * lets operators decide again (docs/runbook.md, "What Temporal's own operations do to held work").
   */
  unwatchedHolds: UnwatchedHold[];
  noOutcome: NoOutcome[];
  /** Held and failed work awaiting an operator: not inconsistencies, counted for the overview. */
  awaitingOperator: { held: number; failed: number };
  /** False when any list above is not empty. */
  consistent: boolean;
}

interface ReconcileOptions {
  client: Client;
  pool: Pool;
  namespace: string;
  graceMs: number;
}

export async function reconcile(options: ReconcileOptions): Promise<ReconcileReport> {
  const { client, pool } = options;
  const checkedAt = new Date();
  const retentionMs = await namespaceRetention(client, options.namespace);
  const [held, failed] = await Promise.all([listWork(client, 'held'), listWork(client, 'failed')]);
  const [events, expiredLeases, heldWithoutAlert, unwatchedHolds] = await Promise.all([
    checkEvents(options, retentionMs, checkedAt),
    findExpiredLeases(pool),
    findUnalertedHeld(pool, held, checkedAt),
    findUnwatchedHolds(pool, held, checkedAt),
  ]);
  const report = {
    checkedAt: checkedAt.toISOString(),
    retentionMs,
    graceMs: options.graceMs,
    ...events,
    expiredLeases,
    heldWithoutAlert,
    unwatchedHolds,
    awaitingOperator: { held: held.length, failed: failed.length },
  };
  return {
    ...report,
    consistent:
      report.ackedWithoutWorkflow.length +
        report.noOutcome.length +
        report.expiredLeases.length +
        report.heldWithoutAlert.length +
        report.unwatchedHolds.length ===
      0,
  };
}

async function namespaceRetention(client: Client, namespace: string): Promise<number> {
  const described = await client.workflowService.describeNamespace({ namespace });
  return tsToMs(described.config?.workflowExecutionRetentionTtl);
}

/**
 * Events without an outcome, received within the retention: each is asked of Temporal. No workflow →
 * the acknowledgement was not kept; closed without an outcome, or running past the grace period in a
 * state no operator is asked about → no outcome.
 */
async function checkEvents(
  { client, pool, graceMs }: ReconcileOptions,
  retentionMs: number,
  now: Date,
): Promise<{ ackedWithoutWorkflow: MissingWorkflow[]; noOutcome: NoOutcome[] }> {
  const ledger = createEventLedger(pool);
  const rows = await ledger.withoutOutcome(new Date(now.getTime() - retentionMs));
  const ackedWithoutWorkflow: MissingWorkflow[] = [];
  const noOutcome: NoOutcome[] = [];
  await forEachLimited(rows, 8, async (row) => {
    const event: MissingWorkflow = {
      provider: row.provider,
      eventId: row.eventId,
      workflowId: row.workflowId,
      receivedAt: row.receivedAt.toISOString(),
    };
    const description = await client.workflow
      .getHandle(row.workflowId)
      .describe()
      .catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return undefined;
        throw err;
      });
    if (!description) {
      ackedWithoutWorkflow.push(event);
      return;
    }
    if (description.status.name === 'RUNNING') {
      const state = description.typedSearchAttributes.get(ReplyState);
      const awaitsOperator = state === 'held' || state === 'awaiting_approval' || state === 'failed';
      if (!awaitsOperator && row.receivedAt.getTime() < now.getTime() - graceMs)
        noOutcome.push({
          ...event,
          why: `still running in state ${state ?? 'received'} after the grace period`,
        });
      return;
    }
    // The workflow writes its outcome before it closes; read again in case it closed meanwhile.
    if (!(await ledger.outcomeOf(row.provider, row.eventId)))
      noOutcome.push({
        ...event,
        why: `workflow ${description.status.name.toLowerCase()} without an outcome`,
      });
  });
  const byTime = (a: MissingWorkflow, b: MissingWorkflow) => a.receivedAt.localeCompare(b.receivedAt);
  return { ackedWithoutWorkflow: ackedWithoutWorkflow.sort(byTime), noOutcome: noOutcome.sort(byTime) };
}

async function findExpiredLeases(pool: Pool): Promise<ExpiredLease[]> {
  const rows = await createEffectsRepository(pool).expiredLeases(LEASE_SLACK_MS);
  return rows.map((r) => ({ ...r, leaseExpiresAt: r.leaseExpiresAt?.toISOString() ?? null }));
}

/** Held effect rows and held workflows (visibility) with no delivered `held` alert. */
async function findUnalertedHeld(pool: Pool, held: WorkItem[], now: Date): Promise<UnalertedHeld[]> {
  const settled = new Date(now.getTime() - ALERT_SLACK_MS);
  const alerts = createAlerts(pool);
  const rows = await alerts.heldWithoutAlert(settled);
  const found = new Map<string, UnalertedHeld>(rows.map((r) => [r.workflowId, r]));
  const heldWorkflows = held.filter(
    (w) => w.state === 'held' && Date.parse(w.startedAt) < settled.getTime() && !found.has(w.workflowId),
  );
  if (heldWorkflows.length > 0) {
    const told = await alerts.heldAlerted(heldWorkflows.map((w) => w.workflowId));
    for (const w of heldWorkflows)
      if (!told.has(w.workflowId))
        found.set(w.workflowId, { workflowId: w.workflowId, businessKey: w.businessKey });
  }
  return [...found.values()].sort((a, b) => a.workflowId.localeCompare(b.workflowId));
}

/** Held rows, settled a while, whose workflow is not among the running held work. */
async function findUnwatchedHolds(pool: Pool, waiting: WorkItem[], now: Date): Promise<UnwatchedHold[]> {
  const watched = new Set(waiting.map((w) => w.workflowId));
  const rows = await createEffectsRepository(pool).heldSince(new Date(now.getTime() - ALERT_SLACK_MS));
  return rows.filter((r) => !watched.has(r.workflowId));
}

async function forEachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(lanes);
}
