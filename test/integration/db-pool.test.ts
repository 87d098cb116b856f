// A PostgreSQL restart must not take a worker down: a connection the server terminates while a
// transaction holds it between two queries (what a restart does to a send's takeLease) is an error
// for that transaction, never an unhandled 'error' event that ends the process. Real PostgreSQL.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { withClient } from '../../src/db/pool';
import { database } from '../support/servers';

describe('checked-out PostgreSQL connections terminated by the server (real PostgreSQL)', () => {
  it('turns a termination between two queries into that transaction’s error, and the pool goes on', async () => {
    const { pool } = await database();
    const outcome = await withClient(pool, async (client) => {
      await client.query('BEGIN');
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const ended = once(client, 'end');
      // From another connection, as a restart (or an administrator) does.
      await pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await ended;
      return client.query('SELECT 1').then(
        () => 'the terminated connection still answered',
        (err: Error) => err.message,
      );
    }).catch((err: Error) => `withClient threw: ${err.message}`);
    assert.match(outcome, /terminat|Connection|not queryable/i);
    const { rows } = await pool.query<{ ok: number }>('SELECT 1 AS ok');
    assert.equal(rows[0]!.ok, 1);
  });
});
