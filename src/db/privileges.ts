// What the application's database role — the one receivers and workers connect as — may do, table by
// table, and the one place it is granted: everything the event path reads and writes, but operators
// only to read, used decisions and audit rows only to add, the seal keys not at all, and no table of
// its own (an owner could drop the audit log's triggers). The admin applies it after each migration
// (src/db/setup.ts); the checks that need more than privileges are triggers (migration 010).
import type pg from 'pg';
import { ApplicationRoleError } from './errors';

/** Tables where the application role gets less than SELECT, INSERT, UPDATE and DELETE. */
const APPLICATION_ROLE_LIMITS: Readonly<Record<string, readonly string[]>> = {
  /** Accounts are the admin's (`replyflow operator …`); the codec server and the workflow only read them. */
  operators: ['SELECT'],
  /** A used decision stays used: deleting or rewriting one would let it count again. */
  decision_requests: ['SELECT', 'INSERT'],
  /** Append-only (its trigger refuses changes as well). */
  audit_log: ['SELECT', 'INSERT'],
  /** Finding nothing pending is all a receiver or worker does with migrations. */
  schema_migrations: ['SELECT'],
  /**
   * Receivers store Slack installations and revocations, workers refreshed tokens; removing a tenant
   * is the admin's (`replyflow tenant remove`).
   */
  tenant_credentials: ['SELECT', 'INSERT', 'UPDATE'],
  /** Whoever reads a seal key can seal decisions; only the database's own check uses them. */
  seal_keys: [],
};

/**
 * Gives `role` exactly its privileges on this database's replyflow schema, in one transaction (no
 * moment with more or fewer). Refuses a role that is the admin itself, a superuser, or an owner of
 * the database or of anything in the schema.
 */
export async function grantApplicationRole(client: pg.ClientBase, role: string): Promise<void> {
  await refuseUnsafeRole(client, role);
  const schema = client.escapeIdentifier(
    (await client.query<{ schema: string }>('SELECT current_schema() AS schema')).rows[0]!.schema,
  );
  const app = client.escapeIdentifier(role);
  await client.query('BEGIN');
  try {
    await client.query(`REVOKE ALL ON ALL TABLES IN SCHEMA ${schema} FROM ${app}`);
    await client.query(`GRANT USAGE ON SCHEMA ${schema} TO ${app}`);
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${app}`);
    await client.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${schema} TO ${app}`);
    for (const [table, privileges] of Object.entries(APPLICATION_ROLE_LIMITS)) {
      const present = await client.query('SELECT to_regclass($1) IS NOT NULL AS present', [table]);
      if (!present.rows[0]?.present) continue;
      await client.query(`REVOKE ALL ON ${client.escapeIdentifier(table)} FROM ${app}`);
      if (privileges.length > 0)
        await client.query(`GRANT ${privileges.join(', ')} ON ${client.escapeIdentifier(table)} TO ${app}`);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/**
 * @throws ApplicationRoleError for a role that must not be the application's: the admin itself, a
 * superuser, or an owner of the database or of anything in the schema (setup checks before migrating).
 */
export async function refuseUnsafeRole(client: pg.ClientBase, role: string): Promise<void> {
  const { rows } = await client.query<{ superuser: boolean; me: boolean; owns_database: boolean }>(
    `SELECT r.rolsuper AS superuser, r.rolname = current_user AS me,
            (SELECT datdba FROM pg_database WHERE datname = current_database()) = r.oid AS owns_database
       FROM pg_roles r WHERE r.rolname = $1`,
    [role],
  );
  const found = rows[0];
  if (!found)
    throw new ApplicationRoleError(
      `there is no database role "${role}": create it (LOGIN, nothing else) or name the one receivers and workers use with --app-role`,
    );
  if (found.me)
    throw new ApplicationRoleError(
      `"${role}" is the admin's own role: receivers and workers need a role of their own (docs/deploy.md, "Database roles")`,
    );
  if (found.superuser)
    throw new ApplicationRoleError(`"${role}" is a superuser: no privilege would hold it back`);
  const owned = await client.query<{ name: string }>(
    `WITH here AS (SELECT oid FROM pg_namespace WHERE nspname = current_schema()),
          app AS (SELECT oid FROM pg_roles WHERE rolname = $1)
     SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = (SELECT oid FROM here) AND c.relowner = (SELECT oid FROM app)
        AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
     UNION ALL
     SELECT p.proname FROM pg_proc p
      WHERE p.pronamespace = (SELECT oid FROM here) AND p.proowner = (SELECT oid FROM app)
     ORDER BY 1`,
    [role],
  );
  const names = owned.rows.map((r) => r.name);
  const objects = [
    ...(found.owns_database ? ['the database'] : []),
    ...(names.length > 4 ? [...names.slice(0, 3), `… (${names.length} tables and functions)`] : names),
  ];
  if (objects.length > 0)
    throw new ApplicationRoleError(
      `"${role}" owns ${objects.join(', ')}: an owner can drop the audit log's triggers. As a superuser, ` +
        `make the admin the owner (REASSIGN OWNED BY ${role} TO <admin role>, in this database), then run this again (docs/deploy.md, "Database roles")`,
    );
}
