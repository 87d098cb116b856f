// The embedded Temporal: `temporal server start-dev` as a child process, with a SQLite file so work
// survives a restart, the Web UI, our search attributes registered and retention raised above every
// provider's redelivery window. Used by `replyflow start` when TEMPORAL_ADDRESS is unset, and by tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { freePort, portIsFree } from '../ports';
import { findTemporalCli } from './binaries';

/** Longer than the longest provider redelivery window we know (Stripe and GitHub: 3 days). */
export const DEV_RETENTION_DAYS = 7;

/**
 * The file store's SQLite settings: a write-ahead log synchronised at checkpoints, not at every
 * commit. About twice the commits per second of SQLite's defaults on this kind of disk
 * (docs/benchmarks.md); a killed server loses nothing it committed (the log is in the file system),
 * and a power loss can roll back only the last commits before it, never corrupt the file.
 */
export const DEV_SQLITE_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'];

export interface DevServerOptions {
  /** SQLite file; omit for an in-memory server (tests). */
  dbFile?: string;
  /** `PRAGMA=VALUE` for the file store. @default DEV_SQLITE_PRAGMAS */
  sqlitePragmas?: string[];
  /** gRPC port; 0 picks a free one. @default 7233 */
  port?: number;
  /** Web UI port; omit or 0 for headless. */
  uiPort?: number;
  /** Passed to the UI so that it decodes payloads through our codec server. */
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
  stop(): Promise<void>;
  /** SIGKILL, no goodbye: what a crash or an OOM kill does (tests of durability). */
  kill(): Promise<void>;
}

/** Thrown when the dev server cannot start; the message names the cause and what to do. */
export class DevServerStartError extends Error {
  override name = 'DevServerStartError';
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

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const cli = findTemporalCli();
  const port = options.port === 0 ? await freePort() : (options.port ?? 7233);
  const namespace = options.namespace ?? 'default';
  for (const [what, p] of [
    ['Temporal gRPC', port],
    ['Temporal Web UI', options.uiPort],
  ] as const) {
    if (p && !(await portIsFree(p))) {
      throw new DevServerStartError(
        `port ${p} (${what}) is already in use: stop what holds it (another replyflow or Temporal dev server?), ` +
          'or set TEMPORAL_ADDRESS to use a running Temporal server instead of the embedded one.',
      );
    }
  }
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'warn'];
  if (options.dbFile) {
    mkdirSync(path.dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile);
    for (const pragma of options.sqlitePragmas ?? DEV_SQLITE_PRAGMAS) args.push('--sqlite-pragma', pragma);
  }
  if (options.uiPort) {
    args.push('--ui-port', String(options.uiPort), '--ui-disable-news-fetch');
    if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  } else {
    args.push('--headless');
  }
  if (namespace !== 'default') args.push('--namespace', namespace);
  for (const [key, value] of Object.entries(options.dynamicConfig ?? {}))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  for (const key of ALL_SEARCH_ATTRIBUTES)
    args.push('--search-attribute', `${key.name}=${key.type === 'INT' ? 'Int' : 'Keyword'}`);

  const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'] });
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
    child.once('exit', (code, signal) =>
      reject(
        new DevServerStartError(
          `temporal server start-dev exited (${signal ?? code}) before it was ready: ${stderr.trim().split('\n').slice(-3).join(' | ')}`,
        ),
      ),
    ),
  );
  exited.catch(() => {});
  const address = `127.0.0.1:${port}`;
  try {
    await Promise.race([
      exited,
      waitUntilServing(address, namespace, (options.startTimeoutSeconds ?? 60) * 1000),
    ]);
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return {
    address,
    port,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined,
    stop: () => stopChild(child),
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exit = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exit;
    },
  };
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
