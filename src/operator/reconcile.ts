// Compares the event ledger, the effects table and Temporal, and reports what does not add up: an
// acknowledged event with no workflow, a send whose lease ran out long ago, held work nobody was
// alerted about, held work no workflow waits on (terminated, cancelled), an event without an
// outcome long after it should have one. Reads only.
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { ReplyState } from '../../workflows/search-attributes';
import { createEffectsRepository } from '../db/effects';
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
  const { rows } = await pool.query<{
    provider: string;
    event_id: string;
    workflow_id: string;
    received_at: Date;
  }>(
    `SELECT provider, event_id, workflow_id, received_at FROM events
      WHERE outcome IS NULL AND received_at > $1 ORDER BY received_at`,
    [new Date(now.getTime() - retentionMs)],
  );
  const ackedWithoutWorkflow: MissingWorkflow[] = [];
  const noOutcome: NoOutcome[] = [];
  await forEachLimited(rows, 8, async (row) => {
    const event: MissingWorkflow = {
      provider: row.provider,
      eventId: row.event_id,
      workflowId: row.workflow_id,
      receivedAt: row.received_at.toISOString(),
    };
    const description = await client.workflow
      .getHandle(row.workflow_id)
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
      if (!awaitsOperator && row.received_at.getTime() < now.getTime() - graceMs)
        noOutcome.push({
          ...event,
          why: `still running in state ${state ?? 'received'} after the grace period`,
        });
      return;
    }
    // The workflow writes its outcome before it closes; read again in case it closed meanwhile.
    const again = await pool.query('SELECT outcome FROM events WHERE provider = $1 AND event_id = $2', [
      row.provider,
      row.event_id,
    ]);
    if (!again.rows[0]?.outcome)
      noOutcome.push({
        ...event,
        why: `workflow ${description.status.name.toLowerCase()} without an outcome`,
      });
  });
  const byTime = (a: MissingWorkflow, b: MissingWorkflow) => a.receivedAt.localeCompare(b.receivedAt);
  return { ackedWithoutWorkflow: ackedWithoutWorkflow.sort(byTime), noOutcome: noOutcome.sort(byTime) };
}

async function findExpiredLeases(pool: Pool): Promise<ExpiredLease[]> {
  const { rows } = await pool.query(
    `SELECT id, workflow_id, business_key, lease_expires_at FROM effects
      WHERE status = 'sending' AND (lease_expires_at IS NULL OR lease_expires_at < now() - $1 * interval '1 millisecond')
      ORDER BY lease_expires_at NULLS FIRST`,
    [LEASE_SLACK_MS],
  );
  return rows.map((r) => ({
    effectId: r.id,
    workflowId: r.workflow_id,
    businessKey: r.business_key,
    leaseExpiresAt: r.lease_expires_at?.toISOString() ?? null,
  }));
}

/** Held effect rows and held workflows (visibility) with no delivered `held` alert. */
async function findUnalertedHeld(pool: Pool, held: WorkItem[], now: Date): Promise<UnalertedHeld[]> {
  const settled = new Date(now.getTime() - ALERT_SLACK_MS);
  const { rows } = await pool.query<{ workflow_id: string; business_key: string }>(
    `SELECT workflow_id, business_key FROM effects
      WHERE status = 'held' AND updated_at < $1
        AND NOT EXISTS (SELECT 1 FROM alerts WHERE alerts.workflow_id = effects.workflow_id AND kind = 'held')`,
    [settled],
  );
  const found = new Map<string, UnalertedHeld>(
    rows.map((r) => [r.workflow_id, { workflowId: r.workflow_id, businessKey: r.business_key }]),
  );
  const heldWorkflows = held.filter(
    (w) => w.state === 'held' && Date.parse(w.startedAt) < settled.getTime() && !found.has(w.workflowId),
  );
  if (heldWorkflows.length > 0) {
    const alerted = await pool.query<{ workflow_id: string }>(
      `SELECT DISTINCT workflow_id FROM alerts WHERE kind = 'held' AND workflow_id = ANY($1::text[])`,
      [heldWorkflows.map((w) => w.workflowId)],
    );
    const told = new Set(alerted.rows.map((r) => r.workflow_id));
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
