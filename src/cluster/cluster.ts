// A real Temporal cluster on this machine, the production path: Temporal's own server (built by
// src/cluster/install.ts) on PostgreSQL, two nodes on loopback that find each other through the
// cluster_membership table and split the history shards, a balancer as the one frontend address, and
// the namespace with its retention and our search attributes. The schema and namespace steps are the
// scripts docker-compose.yml runs (deploy/temporal/), and the nodes read its config file: one source.
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { systemVariables } from '../config';
import { shardData } from '../db/temporal-shards';
import { portIsFree } from '../ports';
import { findTemporalCli, PROJECT_ROOT } from '../temporal/binaries';
import { DEV_RETENTION_DAYS } from '../temporal/dev-server';
import { type Balancer, startBalancer } from './balancer';
import { ClusterStartError } from './errors';
import { findTemporalServer, installCommand, TEMPORAL_SERVER_VERSION } from './install';
import { type TemporalDatabase, TemporalNode } from './node';

export { type TemporalDatabase, TemporalNode } from './node';

const run = promisify(execFile);
const SCRIPTS = path.join(PROJECT_ROOT, 'deploy', 'temporal');

/** `Name=Type …` as the compose namespace job takes it (test/deploy keeps compose's list equal to this). */
const SEARCH_ATTRIBUTES_SPEC = ALL_SEARCH_ATTRIBUTES.map(
  (key) => `${key.name}=${key.type === 'INT' ? 'Int' : 'Keyword'}`,
).join(' ');

interface ClusterOptions {
  /** Logs go under it (`logs/temporal-node-N.log`). */
  dir: string;
  database: TemporalDatabase;
  /** @default 2 */
  nodes?: number;
  /** The balancer's port, the cluster's one frontend address; 0 picks a free one. @default 7233 */
  port?: number;
  /** @default 'default' */
  namespace?: string;
  log?: (line: string) => void;
}

export interface Cluster {
  /** The frontend address for clients (TEMPORAL_ADDRESS): the balancer over every node. */
  address: string;
  namespace: string;
  nodes: TemporalNode[];
  /** Number of history shards each node owns, read from the `shards` table; unowned ones under 0. */
  shardOwners(): Promise<Map<number, number>>;
  stop(): Promise<void>;
}

/** Parses a `postgres://user:password@host:port` URL (the path is ignored) into node settings. */
export function temporalDatabaseFromUrl(url: string): TemporalDatabase {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('TEMPORAL_DATABASE_URL is not a URL: expected postgres://user:password@host:port');
  }
  if (!['postgres:', 'postgresql:'].includes(parsed.protocol) || !parsed.username || !parsed.hostname)
    throw new Error('TEMPORAL_DATABASE_URL must look like postgres://user:password@host:port');
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 5432),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
  };
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const binaries = findTemporalServer();
  if (!binaries)
    throw new ClusterStartError(
      `Temporal server ${TEMPORAL_SERVER_VERSION} is not installed: run \`npm run cluster:install\` (${installCommand()}).`,
    );
  const log = options.log ?? (() => {});
  const port = options.port ?? 7233;
  if (port !== 0 && !(await portIsFree(port)))
    throw new ClusterStartError(
      `port ${port} (the cluster's frontend) is already in use: stop what holds it (replyflow start, another Temporal?) or choose another with --port.`,
    );
  const namespace = options.namespace ?? 'default';
  const logDir = path.join(options.dir, 'logs');
  mkdirSync(logDir, { recursive: true });

  log('creating or updating the Temporal databases (deploy/temporal/setup-schema.sh)');
  await runScript('setup-schema.sh', {
    TEMPORAL_SQL_TOOL: binaries.sqlTool,
    POSTGRES_SEEDS: options.database.host,
    DB_PORT: String(options.database.port),
    POSTGRES_USER: options.database.user,
    SQL_PASSWORD: options.database.password,
  });

  const shards = new pg.Pool({
    host: options.database.host,
    port: options.database.port,
    user: options.database.user,
    password: options.database.password,
    database: 'temporal',
    max: 1,
  });
  // A PostgreSQL restart cuts the idle connection; the next query opens a new one.
  shards.on('error', () => {});
  const nodes: TemporalNode[] = [];
  let balancer: Balancer | undefined;
  const stop = async () => {
    await balancer?.stop();
    await Promise.all(nodes.map((node) => node.stop()));
    await shards.end().catch(() => {});
  };
  try {
    for (let number = 1; number <= (options.nodes ?? 2); number++) {
      // One after the other: the first node initialises the cluster's metadata, the next joins it.
      nodes.push(
        await startNode({ number, serverBinary: binaries.server, database: options.database, logDir }, log),
      );
    }
    balancer = await startBalancer({
      port,
      upstreams: nodes.map((node) => node.frontendAddress),
    });
    log(`registering namespace ${namespace} (deploy/temporal/setup-namespace.sh)`);
    await runScript('setup-namespace.sh', {
      TEMPORAL_CLI: findTemporalCli(),
      TEMPORAL_ADDRESS: balancer.address,
      NAMESPACE: namespace,
      RETENTION: `${DEV_RETENTION_DAYS}d`,
      SEARCH_ATTRIBUTES: SEARCH_ATTRIBUTES_SPEC,
    });
    for (const node of nodes) await waitForSearchAttributes(node.frontendAddress, namespace);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    address: balancer.address,
    namespace,
    nodes,
    shardOwners: () => shardOwners(shards, nodes),
    stop,
  };
}

/**
 * A node on ports chosen now. Another process can still take a port between the choice and the
 * node's bind; the node then exits at once, and gets other ports (three tries in all).
 */
async function startNode(
  options: Parameters<typeof TemporalNode.create>[0],
  log: (line: string) => void,
): Promise<TemporalNode> {
  for (let attempt = 1; ; attempt++) {
    const node = await TemporalNode.create(options);
    log(`starting Temporal node ${options.number} (frontend ${node.frontendAddress})`);
    try {
      await node.start();
      return node;
    } catch (err) {
      if (!(err instanceof ClusterStartError && err.portTaken) || attempt === 3) throw err;
      log(`Temporal node ${options.number} found a port taken; choosing others`);
    }
  }
}

async function runScript(script: string, env: Record<string, string>): Promise<void> {
  try {
    await run('sh', [path.join(SCRIPTS, script)], {
      env: { PATH: '', ...systemVariables(['PATH']), ...env },
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    const { stderr, stdout } = err as { stderr?: string; stdout?: string };
    const tail = `${stdout ?? ''}${stderr ?? ''}`
      .trim()
      .split('\n')
      .filter((line) => !line.includes('DEBUG'))
      .slice(-6)
      .join('\n');
    throw new ClusterStartError(`deploy/temporal/${script} failed:\n${tail}`);
  }
}

/**
 * Each frontend caches search attributes: a start with one it has not loaded yet is refused. A
 * visibility query naming them succeeds only once it has.
 */
async function waitForSearchAttributes(address: string, namespace: string, timeoutMs = 60_000) {
  const query = ALL_SEARCH_ATTRIBUTES.map((key) => `${key.name} = ${key.type === 'INT' ? 0 : '"-"'}`).join(
    ' AND ',
  );
  const connection = await Connection.connect({ address });
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await connection.workflowService.countWorkflowExecutions({ namespace, query });
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new ClusterStartError(
            `the frontend at ${address} did not know the search attributes of ${namespace} within ${timeoutMs / 1000}s: ${(err as Error).message}`,
          );
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await connection.close();
  }
}

async function shardOwners(pool: pg.Pool, nodes: TemporalNode[]): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const data of await shardData(pool)) {
    const owner = shardOwner(data);
    const node = nodes.find((n) => owner?.startsWith(`${n.historyAddress}-`));
    const key = node?.number ?? 0;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/**
 * The `owner` (field 3, a string such as `127.0.0.1:7234-5-<uuid>`) of a ShardInfo row, read from
 * the protobuf wire format by hand (the server's persistence protos are not published for Node).
 */
export function shardOwner(data: Buffer): string | undefined {
  let offset = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = data[offset++];
      if (byte === undefined) throw new Error('truncated ShardInfo');
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (offset < data.length) {
    const key = varint();
    const [field, wireType] = [Math.floor(key / 8), key % 8];
    if (wireType === 0) varint();
    else if (wireType === 1) offset += 8;
    else if (wireType === 5) offset += 4;
    else if (wireType === 2) {
      const length = varint();
      if (field === 3) return data.subarray(offset, offset + length).toString('utf8');
      offset += length;
    } else return undefined;
  }
  return undefined;
}
