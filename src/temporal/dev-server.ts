// The embedded Temporal: `temporal server start-dev` as a child process, with a SQLite file so work
// survives a restart, the Web UI, our search attributes registered and retention raised above every
// provider's redelivery window. Used by `replyflow start` when TEMPORAL_ADDRESS is unset, and by tests.
// No web page may reach it (docs/deploy.md, "Who can reach Temporal, and who decides"): its HTTP
// listeners sit on ports browsers refuse, the HTTP API refuses every request, and the Web UI is
// reached through a guard that checks Host and Origin (web-ui-guard.ts).
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { errorMessage } from '../failures';
import { freePort, portIsFree } from '../ports';
import { findTemporalCli } from './binaries';
import { BROWSER_BLOCKED_PORTS, freeBlockedPorts } from './browser-blocked-ports';
import { DevServerStartError, PortTakenError } from './errors';
import { startWebUiGuard, type WebUiGuard } from './web-ui-guard';

/** Longer than the longest provider redelivery window we know (Stripe and GitHub: 3 days). */
export const DEV_RETENTION_DAYS = 7;

/**
 * The file store's SQLite settings: a write-ahead log synchronised at checkpoints, not at every
 * commit. About twice the commits per second of SQLite's defaults on this kind of disk
 * (docs/benchmarks.md); a killed server loses nothing it committed (the log is in the file system),
 * and a power loss can roll back only the last commits before it, never corrupt the file.
 */
export const DEV_SQLITE_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'];

/**
 * The HTTP API's only allowed Host (`frontend.httpAllowedHosts`): a value with spaces, which no
 * request's Host can be, so the API refuses everything (403) and nothing of replyflow uses it. The
 * CLI cannot turn it off; Nexus's routes on the same port skip this check, the blocked port does not.
 */
const HTTP_API_OFF = 'no host: the HTTP API is off';

/** Starting again after a port picked for a listener was taken in the meantime by another process. */
const START_ATTEMPTS = 3;

interface DevServerOptions {
  /** SQLite file; omit for an in-memory server (tests). */
  dbFile?: string;
  /** `PRAGMA=VALUE` for the file store. @default DEV_SQLITE_PRAGMAS */
  sqlitePragmas?: string[];
  /** gRPC port; 0 picks a free one. @default 7233 */
  port?: number;
  /** Web UI port (the guard's; the UI server itself is on a blocked port); omit or 0 for headless. */
  uiPort?: number;
  /**
   * Passed to the UI so that it decodes payloads through our codec server, with the browser's codec
   * login (`<endpoint>/login`) as its credentials (web-ui-guard.ts codecSettings).
   */
  uiCodecEndpoint?: string;
  namespace?: string;
  /** Seconds to wait for the server to answer. @default 60 */
  startTimeoutSeconds?: number;
  /** Server dynamic config values (tests lower limits with it, e.g. `limit.historyCount.error`). */
  dynamicConfig?: Record<string, string | number | boolean>;
}

export interface DevServer {
  address: string;
  port: number;
  uiUrl?: string;
  /** The server's own Prometheus metrics (on a port browsers refuse): what a bench reads Temporal's latencies from. */
  metricsUrl: string;
  stop(): Promise<void>;
  /** SIGKILL, no goodbye: what a crash or an OOM kill does (tests of durability). */
  kill(): Promise<void>;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** The ports of one start: the configured ones, plus the blocked ones picked for this attempt. */
interface Ports {
  grpc: number;
  http: number;
  metrics: number;
  /** The UI server's own port, behind the guard. */
  ui?: number;
}

async function pickPorts(options: DevServerOptions): Promise<Ports> {
  const grpc = options.port === 0 ? await freePort() : (options.port ?? 7233);
  const blocked = await freeBlockedPorts(options.uiPort ? 3 : 2);
  if (!blocked) {
    throw new DevServerStartError(
      `the embedded Temporal needs ${options.uiPort ? 3 : 2} free ports among those browsers refuse (${BROWSER_BLOCKED_PORTS.join(', ')}), ` +
        'and fewer are free: stop what holds them, or set TEMPORAL_ADDRESS to use a running Temporal server.',
    );
  }
  const [http, metrics, ui] = blocked as [number, number, number | undefined];
  return { grpc, http, metrics, ui };
}

/** Dynamic config every dev server gets unless the caller sets the key itself. */
const DEFAULT_DYNAMIC_CONFIG: Record<string, boolean> = {
  // Each conversation's tasks take turns with the others' (src/receiver/start-event.ts fairnessKeyOf).
  'matching.enableFairness': true,
  /*
   * `temporal server start-dev` turns the server's search attribute cache off unless told otherwise, so
   * that attributes added while it runs are usable at once: every start, upsert and visibility write
   * then reads the cluster metadata from SQLite (about three reads per raw start). Ours are written into
   * the namespace before any service starts (`--search-attribute`), so the cache is never stale for them;
   * with it on, a raw start cost the server 10-20 % less CPU (docs/benchmarks.md). An attribute an
   * operator adds while it runs is usable once the server's cache has it, as on any Temporal server (a
   * start with one added at run time was refused once and accepted 0.5 s after the add).
   */
  'system.forceSearchAttributesCacheRefreshOnRead': false,
};

function startDevArgs(options: DevServerOptions, ports: Ports, namespace: string): string[] {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(ports.grpc)];
  args.push('--log-level', 'warn');
  // Where no browser connects; the HTTP API, besides, accepts no Host at all.
  args.push('--http-port', String(ports.http), '--metrics-port', String(ports.metrics));
  args.push('--dynamic-config-value', `frontend.httpAllowedHosts=${JSON.stringify([HTTP_API_OFF])}`);
  if (options.dbFile) {
    keepPrivate(options.dbFile);
    args.push('--db-filename', options.dbFile);
    for (const pragma of options.sqlitePragmas ?? DEV_SQLITE_PRAGMAS) args.push('--sqlite-pragma', pragma);
  }
  if (ports.ui) {
    args.push('--ui-port', String(ports.ui), '--ui-disable-news-fetch');
    if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  } else {
    args.push('--headless');
  }
  if (namespace !== 'default') args.push('--namespace', namespace);
  for (const [key, value] of Object.entries({ ...DEFAULT_DYNAMIC_CONFIG, ...options.dynamicConfig }))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  for (const key of ALL_SEARCH_ATTRIBUTES)
    args.push('--search-attribute', `${key.name}=${key.type === 'INT' ? 'Int' : 'Keyword'}`);
  return args;
}

/**
 * Refuses ports that something else holds, naming the setting that chose each (`replyflow start`
 * passes TEMPORAL_DEV_PORT and TEMPORAL_UI_PORT): the launcher asks before it starts anything.
 */
export async function checkDevServerPorts(options: Pick<DevServerOptions, 'port' | 'uiPort'>): Promise<void> {
  for (const [setting, what, p] of [
    ['TEMPORAL_DEV_PORT', "the embedded Temporal's gRPC port", options.port],
    ['TEMPORAL_UI_PORT', "the embedded Temporal's Web UI", options.uiPort],
  ] as const) {
    if (p && !(await portIsFree(p))) {
      throw new DevServerStartError(
        `${setting} ${p} (${what}) is already in use on 127.0.0.1: stop what holds it (another replyflow start or Temporal dev server?), ` +
          `set ${setting} to another port, or set TEMPORAL_ADDRESS to use a running Temporal server instead of the embedded one.`,
      );
    }
  }
}

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const namespace = options.namespace ?? 'default';
  await checkDevServerPorts(options);
  for (let attempt = 1; ; attempt++) {
    const ports = await pickPorts(options);
    try {
      const child = await spawnDevServer(startDevArgs(options, ports, namespace), ports, namespace, options);
      return await withGuard(child, ports, options);
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt === START_ATTEMPTS) throw err;
    }
  }
}

/** Starts the child and waits until it serves; on failure it is stopped again. */
async function spawnDevServer(
  args: string[],
  ports: Ports,
  namespace: string,
  options: DevServerOptions,
): Promise<ChildProcess> {
  const child = spawnPrivate(findTemporalCli(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  // However this process ends (a second Ctrl-C, process.exit while stopping under load), the server
  // it started ends with it: never a dev server left running on its own.
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);
  child.once('exit', () => process.off('exit', killOnExit));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) => {
      // A Go panic puts its cause first and a stack after it: keep the cause and the last lines.
      const lines = stderr.trim().split('\n');
      const cause = lines.find((line) => /panic:|error/i.test(line));
      const why = [...new Set([...(cause ? [cause] : []), ...lines.slice(-2)])].join(' | ');
      const Failure = /address already in use/.test(stderr) ? PortTakenError : DevServerStartError;
      reject(new Failure(`temporal server start-dev exited (${signal ?? code}) before it was ready: ${why}`));
    }),
  );
  exited.catch(() => {});
  try {
    await Promise.race([
      exited,
      waitUntilServing(`127.0.0.1:${ports.grpc}`, namespace, (options.startTimeoutSeconds ?? 60) * 1000),
    ]);
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return child;
}

/** The running server as callers see it: the guard on the Web UI's port, when there is a UI. */
async function withGuard(child: ChildProcess, ports: Ports, options: DevServerOptions): Promise<DevServer> {
  let guard: WebUiGuard | undefined;
  if (options.uiPort && ports.ui) {
    try {
      guard = await startWebUiGuard({
        port: options.uiPort,
        upstreamPort: ports.ui,
        codecLogin: options.uiCodecEndpoint && `${options.uiCodecEndpoint}/login`,
      });
    } catch (err) {
      await stopChild(child);
      throw new DevServerStartError(errorMessage(err), { cause: err });
    }
  }
  return {
    address: `127.0.0.1:${ports.grpc}`,
    port: ports.grpc,
    uiUrl: guard?.url,
    metricsUrl: `http://127.0.0.1:${ports.metrics}/metrics`,
    stop: async () => {
      await guard?.close();
      await stopChild(child);
    },
    kill: async () => {
      await guard?.close();
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exit = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exit;
    },
  };
}

/**
 * The SQLite file holds our users' events: readable by its owner only. SQLite gives the -wal and -shm
 * files it makes beside it the main file's mode, whatever the umask, so a main file kept 0600 keeps
 * all three private. One that an earlier version left 0644 is tightened here; a new one is created
 * under the server's umask (spawnPrivate). It cannot be made in advance: the server sets up its
 * schema only in a file that does not exist yet.
 */
function keepPrivate(dbFile: string): void {
  mkdirSync(path.dirname(dbFile), { recursive: true });
  for (const file of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`]) if (existsSync(file)) chmodSync(file, 0o600);
}

/**
 * Spawns the server with umask 077, so that every file it creates is its owner's only. A child takes
 * its umask from the parent at spawn (which forks synchronously), so ours is narrowed just for that
 * call: nothing else runs on this thread meanwhile.
 */
function spawnPrivate(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const previous = process.umask(0o077);
  try {
    return spawn(command, args, options);
  } finally {
    process.umask(previous);
  }
}

async function waitUntilServing(address: string, namespace: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.withDeadline(Date.now() + 2000, () =>
          connection.workflowService.updateNamespace({
            namespace,
            config: { workflowExecutionRetentionTtl: msToTs(`${DEV_RETENTION_DAYS} days`) },
          }),
        );
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new DevServerStartError(
    `Temporal dev server at ${address} did not become ready within ${timeoutMs / 1000}s: ${(lastError as Error)?.message}`,
  );
}
