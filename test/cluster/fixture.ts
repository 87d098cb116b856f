// What the cluster tests share: one PostgreSQL with room for a cluster (also replyflow's database, as
// DATABASE_URL for test/support/servers), and `replyflow cluster` itself, run as a user runs it, in a
// child process, against that PostgreSQL. Each is started once per run on first use.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startClusterPostgres } from '../../src/cluster/postgres';
import { createPool } from '../../src/db/pool';
import { setUpDatabase } from '../../src/db/setup';
import { APPLICATION_ROLE, type EmbeddedPostgres } from '../../src/embedded/postgres';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { eventually } from '../support/eventually';
import { TEST_ENCRYPTION_KEY } from '../support/servers';

function once<T>(start: () => Promise<T>): () => Promise<T> {
  let started: Promise<T> | undefined;
  return () => {
    started ??= start();
    return started;
  };
}

const teardowns: (() => Promise<void>)[] = [];

/** Runs the teardowns in the reverse order of their starts (the cluster before its PostgreSQL). */
export async function stopClusterFixtures(): Promise<void> {
  for (const teardown of teardowns.splice(0).reverse()) await teardown().catch(() => {});
}

export const clusterPostgres = once(async (): Promise<EmbeddedPostgres> => {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'replyflow-cluster-pg-'));
  chmodSync(parent, 0o755); // as root, PostgreSQL runs as its own user and must reach the data dir
  const postgres = await startClusterPostgres(path.join(parent, 'data'));
  // replyflow's tables on the same server, owned by the superuser as `replyflow start` makes them;
  // test/support/servers' database() (given the admin too) and the replyflow processes connect as the
  // application's role.
  const admin = createPool(postgres.adminUrl, 1);
  await setUpDatabase(admin, {
    appRole: APPLICATION_ROLE,
    payloadKeys: { default: Buffer.from(TEST_ENCRYPTION_KEY, 'base64') },
  }).finally(() => admin.end());
  process.env.DATABASE_URL = postgres.url;
  process.env.REPLYFLOW_ADMIN_DATABASE_URL = postgres.adminUrl;
  teardowns.push(async () => {
    await postgres.stop();
    rmSync(parent, { recursive: true, force: true });
  });
  return postgres;
});

interface ClusterCommandRun {
  child: ChildProcess;
  /** The balancer: what replyflow's TEMPORAL_ADDRESS is set to. */
  frontend: string;
  /** Each node's own frontend, in node order. */
  nodes: string[];
  exited: Promise<number | null>;
  output(): string;
}

/** `replyflow cluster --port 0 --database-url …`, ready once it printed its addresses. */
export const clusterCommand = once(async (): Promise<ClusterCommandRun> => {
  const postgres = await clusterPostgres();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-cluster-cmd-'));
  const child = spawn(
    process.execPath,
    // The superuser: Temporal creates its own two databases.
    [
      path.join(PROJECT_ROOT, 'bin/replyflow.js'),
      'cluster',
      '--port',
      '0',
      '--database-url',
      postgres.adminUrl,
    ],
    {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? os.tmpdir(),
        REPLYFLOW_DATA_DIR: dataDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const run: ClusterCommandRun = { child, frontend: '', nodes: [], exited, output: () => output };
  teardowns.push(async () => {
    await stopClusterCommand(run);
    rmSync(dataDir, { recursive: true, force: true });
  });
  await eventually(
    'replyflow cluster printed its addresses',
    () => output.includes('Press Ctrl-C to stop.'),
    {
      // The first run may build the server (npm run test:cluster installs it first).
      timeoutMs: 600_000,
      intervalMs: 200,
      abortIf: () =>
        child.exitCode === null ? undefined : `replyflow cluster exited (${child.exitCode}):\n${output}`,
    },
  );
  run.frontend = /^ {2}frontend +(\S+)/m.exec(output)?.[1] ?? '';
  run.nodes = [...output.matchAll(/^ {2}node \d+ +(\S+)/gm)].map((m) => m[1]!);
  return run;
});

/** Ctrl-C (SIGINT) to the command; resolves with its exit code. */
export async function stopClusterCommand(run: ClusterCommandRun): Promise<number | null> {
  if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGINT');
  return run.exited;
}
