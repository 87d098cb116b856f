// The seal_keys table's one owner: per payload key id, the key the database checks decision seals
// with (migration 010's trigger on decision_requests). It holds the seal key derived from each payload
// key, as src/decision-seal.ts derives it, never the payload key: it can check seals, not read history.
// Only the admin, who also holds the payload keys, registers them (`replyflow setup`, `replyflow start`).
import type pg from 'pg';
import { derivedKey } from '../decision-seal';
import type { Pool } from './pool';

/**
 * The purpose src/decision-seal.ts derives its seal key for. Repeated here because that module keeps
 * its key private; test/integration/database-roles.test.ts seals with `sealDecision` and checks that
 * the database verifies, so the two cannot drift apart unnoticed.
 */
const SEAL_PURPOSE = 'decision seal v1';

export interface SealKeyChanges {
  /** Key ids whose seals verify now. */
  registered: string[];
  /** Key ids that were registered before and are not in the keyring any more. */
  retired: string[];
}

/**
 * Makes the registered seal keys those of `payloadKeys` (by key id), exactly: the database then
 * accepts seals of the keys the deployment runs with, and no longer those of keys it dropped.
 */
export async function registerSealKeys(
  client: pg.ClientBase,
  payloadKeys: Readonly<Record<string, Buffer>>,
): Promise<SealKeyChanges> {
  const ids = Object.keys(payloadKeys).sort();
  await client.query('BEGIN');
  try {
    for (const id of ids) {
      await client.query(
        `INSERT INTO seal_keys (key_id, seal_key) VALUES ($1, $2)
         ON CONFLICT (key_id) DO UPDATE SET seal_key = EXCLUDED.seal_key, registered_at = now()
         WHERE seal_keys.seal_key <> EXCLUDED.seal_key`,
        [id, derivedKey(payloadKeys[id]!, SEAL_PURPOSE)],
      );
    }
    const retired = await client.query<{ key_id: string }>(
      'DELETE FROM seal_keys WHERE NOT (key_id = ANY($1::text[])) RETURNING key_id',
      [ids],
    );
    await client.query('COMMIT');
    return { registered: ids, retired: retired.rows.map((r) => r.key_id).sort() };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** Whether seals of `keyId` verify in this database; any role may ask (it learns nothing of the key). */
export async function sealKeyRegistered(pool: Pool, keyId: string): Promise<boolean> {
  const { rows } = await pool.query<{ registered: boolean }>('SELECT seal_key_registered($1) AS registered', [
    keyId,
  ]);
  return rows[0]?.registered === true;
}
