// The embedded PostgreSQL when it carries a Temporal cluster: the same server `replyflow start` embeds,
// with room for the cluster's connections. Each node runs four services, each with its own pools
// (deploy/temporal/config.yaml: 10 + 5 connections), so two nodes may hold 120 connections besides
// replyflow's own pools, and PostgreSQL's default of 100 runs out under load ("too many clients").
import pg from 'pg';
import { maxConnections, setMaxConnections } from '../db/server-roles';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../embedded/postgres';

const CLUSTER_MAX_CONNECTIONS = 300;

/** Starts the embedded PostgreSQL in `dir`; the first time, raises max_connections and restarts it. */
export async function startClusterPostgres(dir: string): Promise<EmbeddedPostgres> {
  const postgres = await startEmbeddedPostgres({ dir });
  const client = new pg.Client({ connectionString: postgres.adminUrl });
  let current: number;
  try {
    await client.connect();
    current = await maxConnections(client);
    // Written to postgresql.auto.conf in the data directory: later starts keep it.
    if (current < CLUSTER_MAX_CONNECTIONS) await setMaxConnections(client, CLUSTER_MAX_CONNECTIONS);
  } catch (err) {
    await postgres.stop().catch(() => {});
    throw err;
  } finally {
    await client.end().catch(() => {});
  }
  if (current >= CLUSTER_MAX_CONNECTIONS) return postgres;
  // max_connections takes effect only at server start.
  await postgres.stop();
  return startEmbeddedPostgres({ dir, port: Number(new URL(postgres.url).port) });
}
