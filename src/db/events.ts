// Owns: events
// The events table's one owner (the event ledger): the dedupe key that outlives Temporal's retention,
// which run chain an event belongs to, and each event's outcome; and the reads that start from it
// (reconcile's events without an outcome, the sandbox's reply progress) and its payload retention.
import type pg from 'pg';
import { parseTenant } from '../tenants/tenant-id';
import type { Pool } from './pool';

/** The fields of an inbound event the ledger keeps (never its content). */
interface LedgerEvent {
  provider: string;
  eventId: string;
  workflowId: string;
  eventType: string;
  occurredAt?: string;
  receivedAt: string;
  correlationId: string;
  redelivery?: unknown;
  /** The account it came through (src/tenants/tenant-id.ts); kept only when it is a well-formed id. */
  tenant?: string;
}

/** Whose work a workflow is, as its event's ledger row says (the row its own input wrote). */
type WorkTenant =
  /** No row (yet) for that workflow: an unknown id, or a run that has not recorded its event. */
  | { recorded: false }
  /** `tenant` absent: an event without one, or recorded before tenants were (migration 017). */
  | { recorded: true; tenant?: string };

/** What recording an event found. */
export type LedgerEntry =
  /** Recorded now, or by an earlier attempt of this run. */
  | { kind: 'new' }
  /**
   * Recorded by an earlier run of this run's chain (a reset or continue-as-new replaced it): this run
   * carries on with the event, from what that run left (`outcome`: how it ended, if it did).
   */
  | { kind: 'rerun'; outcome: string | null; reason: string | null }
  /** Recorded by a run of another chain: processed before (redelivered after Temporal's retention). */
  | { kind: 'processed' };

export interface EventOutcome {
  provider: string;
  eventId: string;
  outcome: string;
  reason?: string;
}

export type EventLedger = ReturnType<typeof createEventLedger>;

export function createEventLedger(pool: Pool) {
  return {
    /**
     * Inserts the event for run `runId` (first of its chain: `firstRunId`). Found from an earlier run
     * of the same chain, the row is handed to this run, so that only this run writes its outcome.
     */
    async record(event: LedgerEvent, runId: string, firstRunId?: string): Promise<LedgerEntry> {
      const inserted = await pool.query(
        `INSERT INTO events (provider, event_id, workflow_id, run_id, first_run_id, event_type, occurred_at, received_at, correlation_id, redelivery, tenant)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (provider, event_id) DO NOTHING`,
        [
          event.provider,
          event.eventId,
          event.workflowId,
          runId,
          firstRunId ?? runId,
          event.eventType,
          event.occurredAt ?? null,
          event.receivedAt,
          event.correlationId,
          event.redelivery ? JSON.stringify(event.redelivery) : null,
          event.tenant && parseTenant(event.tenant) ? event.tenant : null,
        ],
      );
      if (inserted.rowCount === 1) return { kind: 'new' };
      const { rows } = await pool.query<{ run_id: string; first_run_id: string | null }>(
        'SELECT run_id, first_run_id FROM events WHERE provider = $1 AND event_id = $2',
        [event.provider, event.eventId],
      );
      const row = rows[0];
      if (row?.run_id === runId) return { kind: 'new' };
      // Rows recorded before chains were: their run was the first of its chain.
      if (!row || !firstRunId || (row.first_run_id ?? row.run_id) !== firstRunId)
        return { kind: 'processed' };
      const handed = await pool.query<{ outcome: string | null; outcome_reason: string | null }>(
        `WITH earlier AS (
           SELECT outcome, outcome_reason FROM events
            WHERE provider = $1 AND event_id = $2 AND run_id = $5 FOR UPDATE)
         UPDATE events e SET run_id = $3, first_run_id = $4, outcome = NULL, outcome_reason = NULL, completed_at = NULL
           FROM earlier WHERE e.provider = $1 AND e.event_id = $2 AND e.run_id = $5
         RETURNING earlier.outcome, earlier.outcome_reason`,
        [event.provider, event.eventId, runId, firstRunId, row.run_id],
      );
      const earlier = handed.rows[0];
      // Another run of the chain took it over first: the one that did carries on.
      if (!earlier) return { kind: 'processed' };
      return { kind: 'rerun', outcome: earlier.outcome, reason: earlier.outcome_reason };
    },

    /**
     * The tenant of the event workflow `workflowId` handles. Trusted for who may decide it: the row
     * was written from the workflow's own input, which only replyflow's payload key could encrypt.
     */
    async tenantOf(workflowId: string): Promise<WorkTenant> {
      const { rows } = await pool.query<{ tenant: string | null }>(
        'SELECT tenant FROM events WHERE workflow_id = $1 LIMIT 1',
        [workflowId],
      );
      if (!rows[0]) return { recorded: false };
      return rows[0].tenant ? { recorded: true, tenant: rows[0].tenant } : { recorded: true };
    },

    /** Writes the final state of run `runId`'s event (never over another run's). */
    async writeOutcome(input: EventOutcome, runId: string): Promise<void> {
      await pool.query(
        `UPDATE events SET outcome = $3, outcome_reason = $4, completed_at = now()
          WHERE provider = $1 AND event_id = $2 AND run_id = $5`,
        [input.provider, input.eventId, input.outcome, input.reason ?? null, runId],
      );
    },

    /** Events received after `since` that have no outcome yet, oldest first (reconcile checks each). */
    async withoutOutcome(since: Date): Promise<UnfinishedEvent[]> {
      const { rows } = await pool.query<{
        provider: string;
        event_id: string;
        workflow_id: string;
        received_at: Date;
      }>(
        `SELECT provider, event_id, workflow_id, received_at FROM events
          WHERE outcome IS NULL AND received_at > $1 ORDER BY received_at`,
        [since],
      );
      return rows.map((r) => ({
        provider: r.provider,
        eventId: r.event_id,
        workflowId: r.workflow_id,
        receivedAt: r.received_at,
      }));
    },

    /** The outcome an event's workflow wrote, if it did. */
    async outcomeOf(provider: string, eventId: string): Promise<string | null | undefined> {
      const { rows } = await pool.query<{ outcome: string | null }>(
        'SELECT outcome FROM events WHERE provider = $1 AND event_id = $2',
        [provider, eventId],
      );
      return rows[0]?.outcome;
    },

    /**
     * Where the reply to each sandbox event stands: its effect row's status, its outcome, and the last
     * accepted operator decision about its workflow. Identifiers and states only, never text.
     */
    async sandboxReplies(eventIds: string[]): Promise<SandboxReplyRow[]> {
      const { rows } = await pool.query<SandboxReplyRow>(
        `SELECT e.event_id, e.workflow_id, e.outcome, e.outcome_reason, f.status AS effect_status,
                (SELECT a.action FROM audit_log a WHERE a.workflow_id = e.workflow_id AND a.result LIKE 'accepted%'
                  ORDER BY a.id DESC LIMIT 1) AS decision
           FROM events e LEFT JOIN effects f ON f.workflow_id = e.workflow_id
          WHERE e.provider = 'sandbox' AND e.event_id = ANY($1::text[])`,
        [eventIds],
      );
      return rows;
    },
  };
}

/** An event reconcile looks for a workflow or an outcome of. */
interface UnfinishedEvent {
  provider: string;
  eventId: string;
  workflowId: string;
  receivedAt: Date;
}

/** A sandbox event's reply progress, as the rows hold it. */
interface SandboxReplyRow {
  event_id: string;
  workflow_id: string;
  outcome: string | null;
  outcome_reason: string | null;
  effect_status: string | null;
  decision: string | null;
}

/** The purge's cutoff, `olderThanMs` before PostgreSQL's clock (like every other time the ledger records). */
export async function purgeCutoff(client: pg.ClientBase, olderThanMs: number): Promise<Date> {
  const { rows } = await client.query<{ cutoff: Date }>(
    `SELECT now() - $1 * interval '1 millisecond' AS cutoff`,
    [olderThanMs],
  );
  return rows[0]!.cutoff;
}

/** Drops (or, on a dry run, counts) the payload references of events received before `cutoff`. */
export async function purgePayloadRefs(
  client: pg.ClientBase,
  cutoff: Date,
  dryRun: boolean,
): Promise<number> {
  const sql = dryRun
    ? 'SELECT count(*)::int AS n FROM events WHERE received_at < $1 AND payload_ref IS NOT NULL'
    : 'WITH p AS (UPDATE events SET payload_ref = NULL WHERE received_at < $1 AND payload_ref IS NOT NULL RETURNING 1) SELECT count(*)::int AS n FROM p';
  const { rows } = await client.query<{ n: number }>(sql, [cutoff]);
  return rows[0]!.n;
}
