// The github_signed_bodies table's one owner: the GitHub replay guard's memory in PostgreSQL, so that
// every receiver sees what any of them admitted (src/providers/github.ts says why GitHub needs one,
// and how long it remembers: `windowDays`). It is that provider's SignedBodyLedger.
import type { Pool } from './pool';

export function createSignedBodiesStore(pool: Pool, windowDays: number) {
  return {
    async admit(bodySha256: Buffer, deliveryId: string): Promise<boolean> {
      // A body seen before the window is forgotten: its row is taken over by this delivery.
      const claimed = await pool.query(
        `INSERT INTO github_signed_bodies (body_sha256, delivery_id) VALUES ($1, $2)
         ON CONFLICT (body_sha256) DO UPDATE SET delivery_id = EXCLUDED.delivery_id, first_seen = now()
           WHERE github_signed_bodies.first_seen < now() - make_interval(days => $3)`,
        [bodySha256, deliveryId, windowDays],
      );
      if (claimed.rowCount === 1) {
        await forgetExpired(pool, windowDays);
        return true;
      }
      // Read in a statement of its own: a concurrent first delivery of the same body has committed by
      // now (the conflict waited for it), so its row is visible here.
      const seen = await pool.query<{ delivery_id: string }>(
        'SELECT delivery_id FROM github_signed_bodies WHERE body_sha256 = $1',
        [bodySha256],
      );
      // The same delivery id again is GitHub's own redelivery (or several hooks sharing the GUID).
      return seen.rows[0]?.delivery_id === deliveryId;
    },
  };
}

/** A few expired rows go with each new one, so the table stays as small as the window without a timer. */
async function forgetExpired(pool: Pool, windowDays: number): Promise<void> {
  await pool.query(
    `DELETE FROM github_signed_bodies WHERE body_sha256 IN (
       SELECT body_sha256 FROM github_signed_bodies
        WHERE first_seen < now() - make_interval(days => $1) ORDER BY first_seen LIMIT 2)`,
    [windowDays],
  );
}
