// The event ledger: the dedupe key that outlives Temporal's retention, and each event's outcome
// (src/db/events.ts). A run replacing an earlier run of its chain (a reset, a continue-as-new) carries
// on with the event; a run of a new chain finds it processed before.
import { Context } from '@temporalio/activity';
import { createEventLedger, type EventOutcome, type LedgerEntry } from '../src/db/events';
import type { InboundEvent } from '../src/providers/types';
import type { ActivityDeps } from './deps';

/** The run of the current activity. */
const currentRunId = () => Context.current().info.workflowExecution?.runId ?? '';

/** Writes the final state of the current activity's run's event (never over an earlier run's). */
export async function writeOutcome(pool: ActivityDeps['pool'], input: EventOutcome): Promise<void> {
  await createEventLedger(pool).writeOutcome(input, currentRunId());
}

export function ledgerActivities({ pool }: ActivityDeps) {
  const ledger = createEventLedger(pool);
  return {
    /**
     * Inserts the event. `firstTime`: recorded now, by an earlier attempt of this run, or by an
     * earlier run of its chain (`rerun`, with how that run ended); false when a run of another chain
     * recorded it (redelivered after Temporal's retention expired).
     * @param firstRunId the first run of this run's chain (runs started before chains were counted
     * leave it out: only their own run counts).
     */
    async recordEvent(
      event: InboundEvent,
      firstRunId?: string,
    ): Promise<{ firstTime: boolean; rerun?: Extract<LedgerEntry, { kind: 'rerun' }> }> {
      const entry = await ledger.record(event, currentRunId(), firstRunId);
      if (entry.kind === 'processed') return { firstTime: false };
      return entry.kind === 'rerun' ? { firstTime: true, rerun: entry } : { firstTime: true };
    },

    /** Writes the final state of this run's event (never over an earlier run's). */
    async recordOutcome(input: EventOutcome): Promise<void> {
      await writeOutcome(pool, input);
    },
  };
}
