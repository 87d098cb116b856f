// Retention for what PostgreSQL holds of messages: payload references and ciphertext older than a
// window are dropped; identifiers and outcomes stay, so a late redelivery is still a duplicate.
// Temporal's copy (ciphertext in history) goes with the namespace's retention, not here.
import { purgeCutoff, purgePayloadRefs } from '../db/events';
import { type Pool, withClient } from '../db/pool';
import { purgeSandboxWords } from '../db/sandbox-messages';
import { OperatorInputError } from './errors';

/** Stripe retries live events for up to 3 days; GitHub redelivers by hand within 3 days (PROVIDERS.md). */
const LONGEST_REDELIVERY_WINDOW_MS = 3 * 86_400_000;

export interface PurgeReport {
  /** Everything received before this lost its payload. */
  cutoff: string;
  dryRun: boolean;
  /** Ledger rows whose payload reference or ciphertext was (or would be) dropped. */
  events: number;
  /** Sandbox chat messages whose text was (or would be) dropped (the demo channel stores its own text). */
  sandboxMessages: number;
}

export function checkPurgeWindow(olderThanMs: number): void {
  if (olderThanMs < LONGEST_REDELIVERY_WINDOW_MS) {
    throw new OperatorInputError(
      'refusing a purge window shorter than 3d, the longest provider redelivery window (Stripe, GitHub): ' +
        'events that may still be redelivered keep their payload',
    );
  }
}

export async function purge(
  pool: Pool,
  options: { olderThanMs: number; dryRun: boolean },
): Promise<PurgeReport> {
  checkPurgeWindow(options.olderThanMs);
  return withClient(pool, async (client) => {
    try {
      await client.query('BEGIN');
      const cutoff = await purgeCutoff(client, options.olderThanMs);
      const events = await purgePayloadRefs(client, cutoff, options.dryRun);
      // A reply's blocks and LINE message objects are its words too (src/db/sandbox-messages.ts).
      const sandboxMessages = await purgeSandboxWords(client, cutoff, options.dryRun);
      await client.query(options.dryRun ? 'ROLLBACK' : 'COMMIT');
      return {
        cutoff: cutoff.toISOString(),
        dryRun: options.dryRun,
        events,
        sandboxMessages,
      };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
  });
}
