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

/**
 * Runs `use` on one client checked out of the pool (a transaction). The pool stops listening for a
 * checked-out client's errors, and PostgreSQL terminating the connection between two queries (a
 * restart) would then be an unhandled 'error' event that takes the process down: this listens for
 * the checkout, and a client that failed is thrown away rather than reused.
 */
export async function withClient<T>(pool: Pool, use: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let failure: Error | undefined;
  const onError = (err: Error) => {
    failure = err;
  };
  client.on('error', onError);
  try {
    return await use(client);
  } catch (err) {
    failure ??= err as Error;
    throw err;
  } finally {
    client.off('error', onError);
    client.release(failure);
  }
}

/** Answers once PostgreSQL runs a query for this pool (the receiver's readiness). */
export async function ping(pool: Pool): Promise<void> {
  await pool.query('SELECT 1');
}
