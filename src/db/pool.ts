// The PostgreSQL pool shared by the receiver's readiness check, the activities and the CLI.
import pg from 'pg';

export type Pool = pg.Pool;

export function createPool(connectionString: string, max = 10): Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000 });
  // An idle client losing its connection (PostgreSQL restarted) must not crash the process;
  // the next query gets a fresh connection or a clear error.
  pool.on('error', () => {});
  return pool;
}
