// What replyflow does to a PostgreSQL server rather than to its own tables: the embedded server's
// database and application role, the admin's password, the cluster's max_connections. Run as the
// server's superuser, before any migration; which rows the role may touch is src/db/privileges.ts.
import type pg from 'pg';

/** The superuser's password, set on a server initialised before passwords were generated. */
export async function setRolePassword(client: pg.ClientBase, role: string, password: string): Promise<void> {
  await client.query(
    `ALTER ROLE ${client.escapeIdentifier(role)} PASSWORD ${client.escapeLiteral(password)}`,
  );
}

/** Creates `database` unless it exists (idempotent: run on every start). */
export async function ensureDatabase(client: pg.ClientBase, database: string): Promise<void> {
  const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
}

/**
 * The application's role, created unless it exists, logging in with `password` and holding no power
 * over the server: it can neither create roles or databases nor bypass row security.
 */
export async function ensureLoginRole(client: pg.ClientBase, role: string, password: string): Promise<void> {
  const name = client.escapeIdentifier(role);
  const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
  if (exists.rowCount === 0) await client.query(`CREATE ROLE ${name}`);
  await client.query(
    `ALTER ROLE ${name} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD ${client.escapeLiteral(password)}`,
  );
}

/**
 * In the connected database: nobody but `owner` creates in the public schema, and a table or sequence
 * `owner` creates later is usable by `app` (a plain migrate() keeps working before the grants run).
 */
export async function grantDefaultPrivileges(
  client: pg.ClientBase,
  owner: string,
  app: string,
): Promise<void> {
  const [o, a] = [client.escapeIdentifier(owner), client.escapeIdentifier(app)];
  await client.query(`
    REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    GRANT USAGE ON SCHEMA public TO ${a};
    ALTER DEFAULT PRIVILEGES FOR ROLE ${o} IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${a};
    ALTER DEFAULT PRIVILEGES FOR ROLE ${o} IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO ${a};`);
}

/** The server's max_connections now. */
export async function maxConnections(client: pg.ClientBase): Promise<number> {
  const { rows } = await client.query<{ max_connections: string }>('SHOW max_connections');
  return Number(rows[0]!.max_connections);
}

/** Raises max_connections in postgresql.auto.conf (later starts keep it); it takes effect at the next start. */
export async function setMaxConnections(client: pg.ClientBase, value: number): Promise<void> {
  await client.query(`ALTER SYSTEM SET max_connections = ${Math.trunc(value)}`);
}
