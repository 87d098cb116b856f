// Retention for what PostgreSQL holds of messages: payload references and ciphertext older than a
// window are dropped; identifiers and outcomes stay, so a late redelivery is still a duplicate.
// Temporal's copy (ciphertext in history) goes with the namespace's retention, not here.
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
      // PostgreSQL's clock, like every other time the ledger records.
      const { rows } = await client.query<{ cutoff: Date }>(
        `SELECT now() - $1 * interval '1 millisecond' AS cutoff`,
        [options.olderThanMs],
      );
      const cutoff = rows[0]!.cutoff;
      const events = options.dryRun
        ? 'SELECT count(*)::int AS n FROM events WHERE received_at < $1 AND payload_ref IS NOT NULL'
        : 'WITH p AS (UPDATE events SET payload_ref = NULL WHERE received_at < $1 AND payload_ref IS NOT NULL RETURNING 1) SELECT count(*)::int AS n FROM p';
      const purgedEvents = await client.query<{ n: number }>(events, [cutoff]);
      // A reply's blocks and LINE message objects are its words too (src/db/sandbox-messages.ts).
      const sandboxMessages = await purgeSandboxWords(client, cutoff, options.dryRun);
      await client.query(options.dryRun ? 'ROLLBACK' : 'COMMIT');
      return {
        cutoff: cutoff.toISOString(),
        dryRun: options.dryRun,
        events: purgedEvents.rows[0]!.n,
        sandboxMessages,
      };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
  });
}
