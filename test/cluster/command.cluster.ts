// `replyflow cluster` as a user runs it: Temporal's own server, two nodes on PostgreSQL, then the
// multi-process suite (two receivers, two workers) through its frontend, then Ctrl-C.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import pg from 'pg';
import { shardOwner } from '../../src/cluster/cluster';
import { TEMPORAL_SERVER_VERSION } from '../../src/cluster/install';
import { findTemporalCli } from '../../src/temporal/binaries';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { multiProcessSuite } from '../support/multi-process';
import { database } from '../support/servers';
import { clusterCommand, clusterPostgres, stopClusterCommand } from './fixture';

const { IndexedValueType } = temporal.api.enums.v1;

async function withConnection<T>(address: string, fn: (connection: Connection) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address });
  try {
    return await fn(connection);
  } finally {
    await connection.close();
  }
}

async function temporalDatabase<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const url = new URL((await clusterPostgres()).adminUrl);
  url.pathname = '/temporal';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe('replyflow cluster: Temporal server nodes on PostgreSQL', function () {
  this.timeout(900_000);
  let frontend: string;
  let nodes: string[];

  before(async () => {
    ({ frontend, nodes } = await clusterCommand());
  });

  it('runs the pinned server version, the one inside the dev server the other tests use', async () => {
    const { serverVersion } = await withConnection(frontend, (c) => c.workflowService.getSystemInfo({}));
    assert.equal(serverVersion, TEMPORAL_SERVER_VERSION);
    const cliVersion = execFileSync(findTemporalCli(), ['--version'], { encoding: 'utf8' });
    assert.match(cliVersion, new RegExp(`Server ${TEMPORAL_SERVER_VERSION.replace(/\./g, '\\.')}\\b`));
  });

  it('joins two nodes, each with all four services, and spreads the history shards over both', async () => {
    assert.equal(nodes.length, 2);
    const members = await temporalDatabase(async (client) => {
      const { rows } = await client.query<{ role: number; members: number }>(
        `SELECT role, count(DISTINCT rpc_port)::int AS members FROM cluster_membership
          WHERE last_heartbeat > now() - interval '30 seconds' GROUP BY role ORDER BY role`,
      );
      return rows;
    });
    // Roles 1–4: frontend, history, matching, worker.
    assert.deepEqual(
      members,
      [1, 2, 3, 4].map((role) => ({ role, members: 2 })),
    );
    const owners = await temporalDatabase(async (client) => {
      const { rows } = await client.query<{ data: Buffer }>('SELECT data FROM shards');
      return rows.map((row) => shardOwner(row.data)?.replace(/-\d+-[0-9a-f-]+$/, ''));
    });
    assert.equal(owners.length, 16);
    const perHost = new Map<string, number>();
    for (const owner of owners) perHost.set(owner ?? '?', (perHost.get(owner ?? '?') ?? 0) + 1);
    assert.equal(perHost.size, 2, `shards per history host: ${JSON.stringify([...perHost])}`);
  });

  it('registers the namespace with 7-day retention and every search attribute, seen by each node', async () => {
    const expected = Object.fromEntries(
      ALL_SEARCH_ATTRIBUTES.map((key) => [
        key.name,
        key.type === 'INT'
          ? IndexedValueType.INDEXED_VALUE_TYPE_INT
          : IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
      ]),
    );
    for (const node of nodes) {
      await withConnection(node, async (connection) => {
        const described = await connection.workflowService.describeNamespace({ namespace: 'default' });
        assert.equal(Number(described.config?.workflowExecutionRetentionTtl?.seconds), 7 * 86_400, node);
        const { customAttributes } = await connection.operatorService.listSearchAttributes({
          namespace: 'default',
        });
        assert.deepEqual(customAttributes, expected, node);
      });
    }
  });
});

describe('two receivers and two workers as separate processes on the cluster', function () {
  this.timeout(300_000);
  multiProcessSuite(async () => {
    const { frontend } = await clusterCommand();
    return { temporalAddress: frontend, databaseUrl: (await database()).url };
  });
});

describe('replyflow cluster on Ctrl-C', function () {
  this.timeout(120_000);

  it('stops both nodes and the balancer, and exits 0', async () => {
    const run = await clusterCommand();
    assert.equal(await stopClusterCommand(run), 0, run.output());
    const refused = (address: string) =>
      new Promise<boolean>((resolve) => {
        const [host, port] = address.split(':');
        const socket = net.connect({ host, port: Number(port) });
        socket.once('connect', () => {
          socket.destroy();
          resolve(false);
        });
        socket.once('error', () => resolve(true));
      });
    // The command waits for the nodes to exit before it does: nothing may be left listening.
    for (const address of [run.frontend, ...run.nodes]) assert.ok(await refused(address), address);
  });
});
