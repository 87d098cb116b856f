// Applies the ordered SQL files in ./migrations once each. An advisory lock makes concurrent starters
// (two workers, a receiver and the CLI) wait for one another instead of racing.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../failures';
import type { Pool } from './pool';

const MIGRATIONS_DIR = path.join(__dirname, 'migrations');
const LOCK_ID = 7_142_001; // arbitrary, fixed: identifies "replyflow migrations" among advisory locks

export async function migrate(pool: Pool): Promise<string[]> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d{3}_[\w-]+\.sql$/.test(f))
    .sort();
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    // Created only when missing: an application role without CREATE (the embedded PostgreSQL's) may
    // run this to find nothing pending, and CREATE ... IF NOT EXISTS would still need the privilege.
    const present = await client.query<{ present: boolean }>(
      "SELECT to_regclass('schema_migrations') IS NOT NULL AS present",
    );
    if (!present.rows[0]?.present)
      await client.query(
        'CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
      );
    const done = new Set(
      (await client.query<{ version: string }>('SELECT version FROM schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    for (const file of files) {
      if (done.has(file)) continue;
      await client.query('BEGIN');
      try {
        await client.query(readFileSync(path.join(MIGRATIONS_DIR, file), 'utf8'));
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [file]);
        await client.query('COMMIT');
        applied.push(file);
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${file} failed: ${errorMessage(err)}`);
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]).catch(() => {});
    client.release();
  }
  return applied;
}
