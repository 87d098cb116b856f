// The event ledger: the dedupe key that outlives Temporal's retention, and each event's outcome.
import { Context } from '@temporalio/activity';
import type { InboundEvent } from '../src/providers/types';
import type { ActivityDeps } from './deps';

export interface EventOutcome {
  provider: string;
  eventId: string;
  outcome: string;
  reason?: string;
}

/** Writes the final state of the current activity's run's event (never over an earlier run's). */
export async function writeOutcome(pool: ActivityDeps['pool'], input: EventOutcome): Promise<void> {
  const runId = Context.current().info.workflowExecution?.runId ?? '';
  await pool.query(
    `UPDATE events SET outcome = $3, outcome_reason = $4, completed_at = now()
      WHERE provider = $1 AND event_id = $2 AND run_id = $5`,
    [input.provider, input.eventId, input.outcome, input.reason ?? null, runId],
  );
}

export function ledgerActivities({ pool }: ActivityDeps) {
  return {
    /**
     * Inserts the event. Already there from another run → processed before (redelivered after
     * Temporal's retention expired): `firstTime` is false. Our own earlier attempt → true.
     */
    async recordEvent(event: InboundEvent): Promise<{ firstTime: boolean }> {
      const runId = Context.current().info.workflowExecution?.runId ?? '';
      const inserted = await pool.query(
        `INSERT INTO events (provider, event_id, workflow_id, run_id, event_type, occurred_at, received_at, correlation_id, redelivery)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (provider, event_id) DO NOTHING`,
        [
          event.provider,
          event.eventId,
          event.workflowId,
          runId,
          event.eventType,
          event.occurredAt ?? null,
          event.receivedAt,
          event.correlationId,
          event.redelivery ? JSON.stringify(event.redelivery) : null,
        ],
      );
      if (inserted.rowCount === 1) return { firstTime: true };
      const existing = await pool.query<{ run_id: string }>(
        'SELECT run_id FROM events WHERE provider = $1 AND event_id = $2',
        [event.provider, event.eventId],
      );
      return { firstTime: existing.rows[0]?.run_id === runId };
    },

    /** Writes the final state of this run's event (never over an earlier run's). */
    async recordOutcome(input: EventOutcome): Promise<void> {
      await writeOutcome(pool, input);
    },
  };
}
