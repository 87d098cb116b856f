// Temporal's own database, read (never written) by the local cluster's checks: the `shards` table, whose
// rows say which history node owns each shard. Its schema is Temporal's (go.temporal.io/server's
// PostgreSQL schema), not a replyflow migration.
import type pg from 'pg';

/** Every shard's row data (Temporal's encoded ShardInfo, which names the owning host). */
export async function shardData(pool: pg.Pool): Promise<Buffer[]> {
  const { rows } = await pool.query<{ data: Buffer }>('SELECT data FROM shards');
  return rows.map((row) => row.data);
}
