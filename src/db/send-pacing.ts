// The send_pacing table's one owner: a slot per paced destination (src/targets/types.ts `pace`), taken
// by the send activity just before it writes a request, so that replies to one Slack channel leave
// about a second apart from every worker, as Slack asks, instead of being refused with 429 and retried.
import type { Pool } from './pool';

/** Rows whose slot is this far in the past are pruned, a few at a time, as sends reserve new ones. */
const PRUNE_AFTER_MS = 3_600_000;

export function createSendPacing(pool: Pool) {
  let reserved = 0;
  return {
    /**
     * Takes the destination's next slot, `intervalMs` after the one before, if it comes within
     * `maxWaitMs`. @returns how long to wait for it (0: now), or undefined when the next slot is
     * further off than that (nothing reserved: the request goes as it would unpaced, and the target's
     * own rate limit answer decides).
     */
    async reserve(key: string, intervalMs: number, maxWaitMs: number): Promise<number | undefined> {
      const { rows } = await pool.query<{ wait_ms: number }>(
        `INSERT INTO send_pacing AS p (key, next_at)
         VALUES ($1, clock_timestamp() + make_interval(secs => $2::float8 / 1000))
         ON CONFLICT (key) DO UPDATE
           SET next_at = GREATEST(p.next_at, clock_timestamp()) + make_interval(secs => $2::float8 / 1000)
           WHERE p.next_at <= clock_timestamp() + make_interval(secs => $3::float8 / 1000)
         RETURNING GREATEST(0, EXTRACT(EPOCH FROM (p.next_at - clock_timestamp())) * 1000 - $2::float8)::float8 AS wait_ms`,
        [key, intervalMs, maxWaitMs],
      );
      reserved += 1;
      if (reserved % 100 === 0)
        await pool.query(
          `DELETE FROM send_pacing WHERE key IN (
             SELECT key FROM send_pacing WHERE next_at < $1 ORDER BY next_at LIMIT 20)`,
          [new Date(Date.now() - PRUNE_AFTER_MS)],
        );
      const row = rows[0];
      return row ? Math.ceil(row.wait_ms) : undefined;
    },
  };
}

export type SendPacing = ReturnType<typeof createSendPacing>;
