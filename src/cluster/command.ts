// `replyflow cluster`: Temporal's own server as a two-node cluster on PostgreSQL on this machine,
// built on first use, for running replyflow (and its tests) on the production path. Prints where
// everything is and stops everything on Ctrl-C.
import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { createPool } from '../db/pool';
import { setUpDatabase } from '../db/setup';
import { APPLICATION_ROLE, type EmbeddedPostgres } from '../embedded/postgres';
import { type Cluster, startCluster, type TemporalDatabase, temporalDatabaseFromUrl } from './cluster';
import { installTemporalServer, TEMPORAL_SERVER_VERSION } from './install';
import { startClusterPostgres } from './postgres';

interface ClusterCommandOptions {
  /** The frontend port clients use (the balancer). */
  port: number;
  nodes: number;
  /** A PostgreSQL role that may create databases; unset: an embedded PostgreSQL under the data dir. */
  databaseUrl?: string;
  dataDir: string;
  namespace: string;
}

/** Bounded so that a node that ignores SIGTERM cannot keep Ctrl-C from returning. */
const STOP_TIMEOUT_MS = 30_000;

const withoutPassword = (url: string) => url.replace(/:\/\/([^:@/]*):[^@/]*@/, '://$1:***@');

interface RunningCluster {
  cluster: Cluster;
  /** replyflow's own database on the same PostgreSQL (embedded only). */
  replyflowDatabaseUrl?: string;
  databaseLabel: string;
  stop(): Promise<void>;
}

/** Everything `replyflow cluster` starts: PostgreSQL unless given, then the cluster on it. */
async function startClusterCommand(
  options: ClusterCommandOptions,
  log: (line: string) => void,
): Promise<RunningCluster> {
  const installed = await installTemporalServer(log);
  if (installed.built)
    log(`built Temporal server ${TEMPORAL_SERVER_VERSION} in ${installed.seconds.toFixed(0)} s`);
  const dir = path.join(path.resolve(options.dataDir), 'cluster');
  mkdirSync(dir, { recursive: true });
  let postgres: EmbeddedPostgres | undefined;
  let database: TemporalDatabase;
  let databaseLabel: string;
  if (options.databaseUrl) {
    database = temporalDatabaseFromUrl(options.databaseUrl);
    databaseLabel = withoutPassword(options.databaseUrl);
  } else {
    // As root, PostgreSQL runs as its own user and must reach its data directory.
    chmodSync(dir, 0o755);
    log(`starting the embedded PostgreSQL (data in ${path.join(dir, 'postgres')})`);
    postgres = await startClusterPostgres(path.join(dir, 'postgres'));
    // replyflow's tables belong to the superuser; its processes connect as the application's role.
    // The seal keys wait for the admin's `replyflow setup`: this command holds no payload key.
    const admin = createPool(postgres.adminUrl, 1);
    await setUpDatabase(admin, { appRole: APPLICATION_ROLE }).finally(() => admin.end());
    // The superuser: Temporal creates its own two databases.
    database = temporalDatabaseFromUrl(postgres.adminUrl);
    databaseLabel = `${withoutPassword(postgres.adminUrl).replace(/\/[^/]*$/, '')} (embedded)`;
  }
  try {
    const cluster = await startCluster({
      dir,
      database,
      nodes: options.nodes,
      port: options.port,
      namespace: options.namespace,
      log,
    });
    return {
      cluster,
      replyflowDatabaseUrl: postgres?.url,
      databaseLabel,
      stop: async () => {
        await cluster.stop();
        await postgres?.stop();
      },
    };
  } catch (err) {
    await postgres?.stop().catch(() => {});
    throw err;
  }
}

export async function runClusterCommand(options: ClusterCommandOptions): Promise<void> {
  const log = (line: string) => console.log(`replyflow: ${line}`);
  let running: RunningCluster;
  try {
    running = await startClusterCommand(options, log);
  } catch (err) {
    console.error(`replyflow: ${(err as Error).message}`);
    process.exit(1);
  }
  const { cluster } = running;
  const shards = await cluster.shardOwners().catch(() => new Map<number, number>());
  const lines = [
    `  frontend      ${cluster.address}  (TEMPORAL_ADDRESS: a balancer over the nodes' frontends)`,
    ...cluster.nodes.map(
      (node) =>
        `  node ${node.number}        ${node.frontendAddress}  (${shards.get(node.number) ?? 0} history shards; log ${node.logFile})`,
    ),
    `  PostgreSQL    ${running.databaseLabel}  (databases temporal, temporal_visibility)`,
    `  namespace     ${cluster.namespace}  (7-day retention, replyflow's search attributes)`,
    '  Web UI        not started: the UI server is not served by the Go module proxy (docs/deploy.md)',
  ];
  const credentials = path.join(
    path.resolve(options.dataDir),
    'cluster',
    'postgres',
    'replyflow-credentials.json',
  );
  const runWith = running.replyflowDatabaseUrl
    ? `TEMPORAL_ADDRESS=${cluster.address} DATABASE_URL=${withoutPassword(running.replyflowDatabaseUrl)} (its password: "app" in ${credentials}, readable by its owner only)`
    : `TEMPORAL_ADDRESS=${cluster.address} and your DATABASE_URL`;
  const setupWith = running.replyflowDatabaseUrl
    ? `REPLYFLOW_ADMIN_DATABASE_URL=${withoutPassword(running.replyflowDatabaseUrl.replace(/:\/\/[^:@/]*:/, '://postgres:'))} (the password: "admin" in the same file)`
    : 'REPLYFLOW_ADMIN_DATABASE_URL (the owner of replyflow’s tables)';
  console.log(
    `Temporal cluster (server ${TEMPORAL_SERVER_VERSION}, ${cluster.nodes.length} nodes on PostgreSQL) is running:\n` +
      `${lines.join('\n')}\nRun replyflow against it with ${runWith}: replyflow receiver, replyflow worker.\n` +
      `Before the first decision, once with the payload key(s) the workers use: ${setupWith} replyflow setup.\n` +
      'Press Ctrl-C to stop.',
  );
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`replyflow: ${signal}, stopping the cluster…`);
    const forced = setTimeout(() => {
      console.error(`replyflow: not stopped after ${STOP_TIMEOUT_MS / 1000}s; exiting anyway`);
      process.exit(1);
    }, STOP_TIMEOUT_MS);
    await running.stop();
    clearTimeout(forced);
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}
