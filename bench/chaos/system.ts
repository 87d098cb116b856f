// The whole system as a deployment runs it, started by the chaos run and the system benchmark: an
// embedded PostgreSQL and either a Temporal dev server on a SQLite file or a two-node cluster of
// Temporal's own server on that PostgreSQL (src/cluster/), all restartable on the same ports and data,
// and `replyflow receiver` / `replyflow worker` / `replyflow start` as child processes that can be
// killed and started again (a `replyflow start` on its own port).

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal as proto } from '@temporalio/proto';
import { type Cluster, startCluster, temporalDatabaseFromUrl } from '../../src/cluster/cluster';
import { startClusterPostgres } from '../../src/cluster/postgres';
import { createPool, type Pool } from '../../src/db/pool';
import { setUpDatabase } from '../../src/db/setup';
import { APPLICATION_ROLE, type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/embedded/postgres';
import { freePort } from '../../src/ports';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { type DevServer, startDevServer } from '../../src/temporal/dev-server';
import { SystemStartError } from './errors';

const { TaskQueueType, TaskQueueKind } = proto.api.enums.v1;
const BIN = path.join(PROJECT_ROOT, 'bin', 'replyflow.js');

/** The Node.js options and the environment `npm start` gives `replyflow start` (package.json), so that it runs here as there. */
function npmStart(): { nodeArgs: string[]; env: Record<string, string> } {
  const { scripts } = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8'));
  const words = String(scripts.start).split(/\s+/);
  const node = words.indexOf('node');
  return {
    nodeArgs: words.filter((word) => word.startsWith('--')),
    // `NAME=value` before `node`: the environment the script gives it (MALLOC_ARENA_MAX).
    env: Object.fromEntries(
      words
        .slice(0, Math.max(0, node))
        .map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
    ),
  };
}

export const SYSTEM_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
/** What the workers present to the sandbox target API on the receivers. */
const SYSTEM_SANDBOX_TOKEN = randomBytes(24).toString('base64url');
const SYSTEM_ENCRYPTION_KEY = Buffer.alloc(32, 11).toString('base64');
export const SYSTEM_TASK_QUEUE = 'replyflow';

interface SystemOptions {
  receivers: number;
  workers: number;
  /**
   * `replyflow start` processes on the system's Temporal and PostgreSQL: a receiver and a worker in one
   * process, as `npm start` runs them, whose starts hand each event's first workflow task to their own
   * worker (eager start). They serve the first receiver URLs. @default 0
   */
  combined?: number;
  /** Settings for every receiver and worker (SEND_TIMEOUT, TURN_GATHER, …) on top of the defaults. */
  env?: Record<string, string>;
  /** Settings for workers only (e.g. concurrency limits under test). */
  workerEnv?: Record<string, string>;
  /** Node.js options for workers only, e.g. `--cpu-prof` to profile them (NODE_OPTIONS refuses it). */
  workerNodeArgs?: string[];
  /**
   * Where the dev server keeps its state: a SQLite file as `npm start` runs it (the default), or memory,
   * which shows the server without its disk (the benchmark's bound). restartTemporal needs the file.
   */
  temporalStore?: 'file' | 'memory';
  /** Temporal's dev server (the default), or a two-node cluster of its own server on the PostgreSQL. */
  server?: TemporalServerKind;
  /** Dynamic config for the dev server on top of replyflow's (e.g. `matching.enableFairness: false`). */
  temporalDynamicConfig?: Record<string, string | number | boolean>;
}

export type TemporalServerKind = 'dev-server' | 'cluster';

/** The roles the chaos run kills and starts again; receivers on their own are never killed. */
export type RestartableRole = 'worker' | 'start';

/** A `replyflow receiver|worker|start` child process; its output goes to a log file in the run's directory. */
export interface RoleProcess {
  role: 'receiver' | 'worker' | 'start';
  /** Which receiver or worker slot this process fills (a restarted worker takes the same slot). */
  slot: number;
  child: ChildProcess;
  pid: number;
  logFile: string;
  exited: Promise<number | null>;
  /** Set before we kill or stop it on purpose, so that its exit is not reported as a crash. */
  expectedExit: boolean;
  /** Set once it serves; an exit before that is a failed start, which the supervisor retries. */
  started: boolean;
}

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, guard?: () => void) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    guard?.();
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new SystemStartError(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
}

export class System {
  readonly receivers: RoleProcess[] = [];
  readonly workers: RoleProcess[] = [];
  /** `replyflow start` processes (a receiver and a worker each): the first of `receiverUrls`. */
  readonly combined: RoleProcess[] = [];
  /** Processes that exited without being asked to once they served (a crash is a finding, not noise). */
  readonly crashes: { role: string; slot: number; pid: number; code: number | null; logTail: string }[] = [];
  /**
   * Workers and `replyflow start` processes that exited while starting because Temporal or PostgreSQL
   * was down (they connect once, at start) and were started again, as a supervisor (Compose
   * `restart:`, Kubernetes) does.
   */
  readonly failedStarts: { role: RestartableRole; slot: number; pid: number; logTail: string }[] = [];
  /** Every role process of the run by pid, the dead too: which one ran a workflow task, after the fact. */
  readonly spawned = new Map<number, RoleProcess>();
  /** Set when the system runs on the dev server. */
  temporal?: DevServer;
  /** Set when the system runs on the cluster. */
  cluster?: Cluster;
  postgres!: EmbeddedPostgres;
  pool!: Pool;
  client!: TemporalClient;
  receiverUrls: string[] = [];
  private temporalPort = 0;
  private postgresPort = 0;

  private constructor(
    readonly dir: string,
    private readonly options: SystemOptions,
  ) {}

  static async start(options: SystemOptions): Promise<System> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-system-'));
    // As root, PostgreSQL runs as its own user and must reach the data dir.
    chmodSync(dir, 0o755);
    const system = new System(dir, options);
    try {
      await system.boot();
    } catch (err) {
      await system.stop();
      throw err;
    }
    return system;
  }

  get temporalAddress(): string {
    return this.cluster?.address ?? `127.0.0.1:${this.temporalPort}`;
  }

  get databaseUrl(): string {
    return this.postgres.url;
  }

  /**
   * The sandbox target's API, on the first receiver that runs on its own when there is one: a chaos run
   * SIGKILLs the `replyflow start` processes, and the target going down with them would be another
   * fault (sends cut after the target committed) than the one under test.
   */
  get sandboxApiUrl(): string {
    const host = this.options.receivers > 0 ? (this.options.combined ?? 0) : 0;
    return `${this.receiverUrls[host]}/sandbox/api`;
  }

  private async boot(): Promise<void> {
    mkdirSync(path.join(this.dir, 'logs'));
    if (this.options.server === 'cluster') {
      // Temporal's databases and replyflow's on one PostgreSQL, as in docker-compose.yml.
      this.postgres = await startClusterPostgres(path.join(this.dir, 'postgres'));
      this.cluster = await startCluster({
        dir: this.dir,
        // The superuser: Temporal's role must create its two databases.
        database: temporalDatabaseFromUrl(this.postgres.adminUrl),
        port: 0,
      });
    } else {
      const [postgres, temporal] = await Promise.all([
        startEmbeddedPostgres({ dir: path.join(this.dir, 'postgres') }),
        startDevServer({
          port: 0,
          dynamicConfig: this.options.temporalDynamicConfig,
          ...(this.options.temporalStore === 'memory'
            ? {}
            : { dbFile: path.join(this.dir, 'temporal.sqlite') }),
        }),
      ]);
      this.postgres = postgres;
      this.temporal = temporal;
      this.temporalPort = temporal.port;
    }
    this.postgresPort = Number(new URL(this.postgres.url).port);
    // Set up as the admin sets up a deployment; the roles connect as the application's role.
    const admin = createPool(this.postgres.adminUrl, 1);
    await setUpDatabase(admin, {
      appRole: APPLICATION_ROLE,
      payloadKeys: { default: Buffer.from(SYSTEM_ENCRYPTION_KEY, 'base64') },
    }).finally(() => admin.end());
    this.pool = createPool(this.postgres.url, 5);
    this.client = await connectClient(this.temporalAddress, 'default', SYSTEM_ENCRYPTION_KEY);
    const combined = this.options.combined ?? 0;
    const ports = await Promise.all(
      Array.from({ length: combined + this.options.receivers }, () => freePort()),
    );
    this.receiverUrls = ports.map((port) => `http://127.0.0.1:${port}`);
    ports.forEach((port, i) => {
      if (i < combined)
        this.combined.push(this.spawnRole('start', i, { PORT: String(port), ...this.options.workerEnv }));
      else this.receivers.push(this.spawnRole('receiver', i - combined, { PORT: String(port) }));
    });
    for (let slot = 0; slot < this.options.workers; slot++)
      this.workers.push(this.spawnRole('worker', slot, this.options.workerEnv));
    await Promise.all([
      ...[...this.combined, ...this.receivers].map((r, i) => this.waitForReceiver(r, this.receiverUrls[i]!)),
      ...[...this.combined, ...this.workers].map((w) => this.waitForWorker(w)),
    ]);
    for (const proc of [...this.combined, ...this.receivers, ...this.workers]) proc.started = true;
  }

  private roleEnv(): Record<string, string> {
    return {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? os.tmpdir(),
      TEMPORAL_ADDRESS: this.temporalAddress,
      DATABASE_URL: this.postgres.url,
      REPLYFLOW_ENCRYPTION_KEY: SYSTEM_ENCRYPTION_KEY,
      REPLYFLOW_DATA_DIR: path.join(this.dir, 'data'),
      TEMPORAL_TASK_QUEUE: SYSTEM_TASK_QUEUE,
      SANDBOX_ENABLED: 'true',
      SANDBOX_WEBHOOK_SECRET: SYSTEM_SECRET,
      SANDBOX_API_TOKEN: SYSTEM_SANDBOX_TOKEN,
      SANDBOX_API_URL: this.sandboxApiUrl,
      // Several workers on one machine: none of them may claim the default metrics port.
      WORKER_METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      REPLYFLOW_SDK_LOG_LEVEL: 'ERROR',
      ...this.options.env,
    };
  }

  private spawnRole(role: RoleProcess['role'], slot: number, env: Record<string, string> = {}): RoleProcess {
    const logFile = path.join(this.dir, 'logs', `${role}-${slot}-${Date.now()}.log`);
    const fd = openSync(logFile, 'a');
    // A `replyflow start` as `npm start` runs it, unless the options say how to run it.
    const asNpmStart = role === 'start' && this.options.workerNodeArgs === undefined;
    const nodeArgs = asNpmStart
      ? npmStart().nodeArgs
      : role === 'receiver'
        ? []
        : (this.options.workerNodeArgs ?? []);
    const child = spawn(process.execPath, [...nodeArgs, BIN, role], {
      cwd: PROJECT_ROOT,
      env: { ...this.roleEnv(), ...(asNpmStart && npmStart().env), ...env },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    const proc: RoleProcess = {
      role,
      slot,
      child,
      pid: child.pid ?? -1,
      logFile,
      expectedExit: false,
      started: false,
      exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
    };
    this.spawned.set(proc.pid, proc);
    void proc.exited.then((code) => {
      if (!proc.expectedExit && proc.started)
        this.crashes.push({ role, slot, pid: proc.pid, code, logTail: logTail(proc.logFile) });
    });
    return proc;
  }

  private guard(proc: RoleProcess): () => void {
    return () => {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null)
        throw new SystemStartError(
          `${proc.role} ${proc.slot} exited (${proc.child.exitCode ?? proc.child.signalCode}) while starting:\n${logTail(proc.logFile)}`,
        );
    };
  }

  private async waitForReceiver(proc: RoleProcess, url: string): Promise<void> {
    await waitFor(
      `receiver ${proc.slot} at ${url}`,
      async () => (await fetch(`${url}/healthz`)).ok,
      120_000,
      this.guard(proc),
    );
  }

  /**
   * A worker is ready once Temporal lists it (by pid) as a poller of both the workflow and activity
   * queues, or once it printed its banner, which it does after its worker began to poll: the poller
   * list, read from one partition of the task queue, missed a restarted worker for up to a minute.
   */
  async waitForWorker(proc: RoleProcess, timeoutMs = 180_000): Promise<void> {
    const identity = `${proc.pid}@`;
    const saysRunning = () => readFileSync(proc.logFile, 'utf8').includes('replyflow is running');
    for (const taskQueueType of [
      TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    ]) {
      await waitFor(
        `worker ${proc.slot} (pid ${proc.pid}) to poll`,
        async () => {
          const { pollers } = await this.client.connection.workflowService.describeTaskQueue({
            namespace: 'default',
            taskQueue: { name: SYSTEM_TASK_QUEUE, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
            taskQueueType,
          });
          return pollers.some((p) => p.identity?.startsWith(identity)) || saysRunning();
        },
        timeoutMs,
        this.guard(proc),
      );
    }
  }

  /**
   * SIGKILLs a worker or a `replyflow start` process (no shutdown, no goodbye to Temporal) and waits
   * until the process is gone; marked as expected first, so that its exit is not counted as a crash.
   */
  async kill(proc: RoleProcess): Promise<void> {
    proc.expectedExit = true;
    proc.child.kill('SIGKILL');
    await proc.exited;
  }

  /**
   * Starts a fresh process in the slot (a `replyflow start` on its slot's port) and waits until it
   * serves. Like a supervisor, it starts it again when it exits while starting (Temporal or PostgreSQL
   * restarting), with backoff.
   */
  async restart(role: RestartableRole, slot: number): Promise<RoleProcess> {
    const procs = role === 'worker' ? this.workers : this.combined;
    for (let attempt = 1; ; attempt++) {
      const proc =
        role === 'worker'
          ? this.spawnRole('worker', slot, this.options.workerEnv)
          : this.spawnRole('start', slot, { PORT: this.portOf(slot), ...this.options.workerEnv });
      procs[slot] = proc;
      try {
        if (role === 'start') await this.waitForReceiver(proc, this.receiverUrls[slot]!);
        await this.waitForWorker(proc);
        proc.started = true;
        return proc;
      } catch (err) {
        const exited = proc.child.exitCode !== null || proc.child.signalCode !== null;
        if (!exited || attempt >= 10) throw err;
        this.failedStarts.push({ role, slot, pid: proc.pid, logTail: logTail(proc.logFile, 3) });
        await new Promise((r) => setTimeout(r, Math.min(1000 * attempt, 5000)));
      }
    }
  }

  /** The port of a `replyflow start` slot: the one it had, so that senders find it where they left it. */
  private portOf(slot: number): string {
    return new URL(this.receiverUrls[slot]!).port;
  }

  /** Stops a worker the way a deploy does (SIGTERM: in-flight sends may finish), leaving its slot empty. */
  async stopWorker(slot: number): Promise<void> {
    await stopRole(this.workers[slot]!);
  }

  /** CPU milliseconds used so far by each part of the system (Linux /proc). */
  cpuMs(): Record<'temporal' | 'postgres' | 'receivers' | 'workers' | 'combined', number> {
    const processes = readProcesses();
    const sum = (match: (p: ProcessInfo) => boolean) =>
      [...processes.values()].filter(match).reduce((total, p) => total + p.cpuMs, 0);
    const postmaster = [...processes.values()].find(
      (p) => p.cmdline.includes(path.join(this.dir, 'postgres')) && p.cmdline.includes('-D'),
    );
    const pids = (procs: RoleProcess[]) => new Set(procs.map((p) => p.pid));
    const [receivers, workers, combined] = [pids(this.receivers), pids(this.workers), pids(this.combined)];
    const nodes = new Set(this.cluster?.nodes.map((node) => node.pid));
    return {
      // The dev server's port names it (an in-memory server has no file under the run's directory).
      temporal: this.cluster
        ? sum((p) => nodes.has(p.pid))
        : sum((p) => p.cmdline.includes('start-dev') && p.cmdline.includes(` --port ${this.temporalPort} `)),
      postgres: sum((p) => p.pid === postmaster?.pid || p.ppid === postmaster?.pid),
      receivers: sum((p) => receivers.has(p.pid)),
      workers: sum((p) => workers.has(p.pid)),
      combined: sum((p) => combined.has(p.pid)),
    };
  }

  /** The live worker or `replyflow start` process with this pid (both run sends). */
  runnerByPid(pid: number): RoleProcess | undefined {
    return [...this.workers, ...this.combined].find(
      (p) => p.pid === pid && p.child.exitCode === null && p.child.signalCode === null,
    );
  }

  /** Stops the dev server (SIGTERM) and starts it again on the same port and SQLite file. */
  async restartTemporal(downMs: number): Promise<void> {
    if (!this.temporal)
      throw new Error('restartTemporal restarts the dev server: a cluster restarts node by node');
    if (this.options.temporalStore === 'memory')
      throw new Error('an in-memory dev server loses everything on restart: use the file store');
    await this.temporal.stop();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    this.temporal = await startDevServer({
      port: this.temporalPort,
      dbFile: path.join(this.dir, 'temporal.sqlite'),
    });
  }

  /** Stops PostgreSQL (fast shutdown: sessions are cut) and starts it again on the same port and data. */
  async restartPostgres(downMs: number): Promise<void> {
    await this.postgres.stop();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    this.postgres = await startEmbeddedPostgres({
      dir: path.join(this.dir, 'postgres'),
      port: this.postgresPort,
    });
  }

  async stop(): Promise<void> {
    const roles = [...this.combined, ...this.receivers, ...this.workers];
    await Promise.all(roles.map((proc) => stopRole(proc)));
    await this.client?.close().catch(() => {});
    await this.pool?.end().catch(() => {});
    await this.temporal?.stop().catch(() => {});
    await this.cluster?.stop().catch(() => {});
    await this.postgres?.stop().catch(() => {});
  }

  /** Deletes the run's directory (logs, SQLite file, PostgreSQL data). */
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

async function stopRole(proc: RoleProcess): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.expectedExit = true;
  const killer = setTimeout(() => proc.child.kill('SIGKILL'), 20_000);
  proc.child.kill('SIGTERM');
  await proc.exited;
  clearTimeout(killer);
}

interface ProcessInfo {
  pid: number;
  ppid: number;
  cpuMs: number;
  cmdline: string;
}

const CLOCK_TICKS = 100;

function readProcesses(): Map<number, ProcessInfo> {
  const found = new Map<number, ProcessInfo>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      found.set(Number(entry), {
        pid: Number(entry),
        ppid: Number(fields[1]),
        // Its own time plus that of children it reaped (PostgreSQL's backends end with their connections).
        cpuMs:
          ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) /
          CLOCK_TICKS,
        cmdline: readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' '),
      });
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** Resident set size of a process in MiB (Linux /proc). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

function logTail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
