// Applies the ordered SQL files in ./migrations once each, as the tables' owner (the admin). An advisory
// lock makes concurrent starters wait for one another instead of racing; a role that may not create
// (receivers and workers) only checks that nothing is pending.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { errorMessage } from '../failures';
import { MigrationPrivilegeError } from './errors';
import { type Pool, withClient } from './pool';

const MIGRATIONS_DIR = path.join(__dirname, 'migrations');
const LOCK_ID = 7_142_001; // arbitrary, fixed: identifies "replyflow migrations" among advisory locks

export async function migrate(pool: Pool): Promise<string[]> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d{3}_[\w-]+\.sql$/.test(f))
    .sort();
  const applied: string[] = [];
  await withClient(pool, async (client) => {
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
      const pending = files.filter((f) => !done.has(f));
      if (pending.length > 0) await refuseWithoutOwnership(client, pending);
      for (const file of pending) {
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
    }
  });
  return applied;
}

/**
 * Receivers and workers connect as the application role, which owns no table and may create none:
 * for them a pending migration means the admin has not run setup for this version yet.
 */
async function refuseWithoutOwnership(client: pg.PoolClient, pending: string[]): Promise<void> {
  const { rows } = await client.query<{ may: boolean; role: string }>(
    "SELECT has_schema_privilege(current_schema(), 'CREATE') AS may, current_user AS role",
  );
  if (rows[0]?.may) return;
  throw new MigrationPrivilegeError(
    `${pending.length} migration(s) pending (${pending.join(', ')}), which the database role ${rows[0]?.role} may not apply: ` +
      'run `replyflow setup` with the admin credential (REPLYFLOW_ADMIN_DATABASE_URL) first (docs/deploy.md, "Database roles")',
  );
}
