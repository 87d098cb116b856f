// The parts of `replyflow cluster` that need no server: its options and database URL refused with a
// clear error, and the shard owner read from Temporal's ShardInfo bytes. The cluster itself runs in
// `npm run test:cluster`.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../src/cli/main';
import { shardOwner, TemporalNode, temporalDatabaseFromUrl } from '../../src/cluster/cluster';
import { ClusterStartError } from '../../src/cluster/errors';

async function cluster(argv: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const code = await run(['cluster', ...argv], {
    env: {},
    stdout: { write: () => true },
    stderr: { write: (text: string) => (stderr += text) },
    confirm: async () => false,
    readSecret: async () => '',
  });
  return { code, stderr };
}

/** A protobuf varint. */
function varint(n: number): number[] {
  const bytes: number[] = [];
  while (n >= 0x80) {
    bytes.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  return [...bytes, n];
}

describe('replyflow cluster: input', () => {
  it('refuses a port out of range and a node count out of range, starting nothing', async () => {
    const port = await cluster(['--port', '70000']);
    assert.equal(port.code, 2);
    assert.match(port.stderr, /--port.*a port number from 0 to 65535/);
    const nodes = await cluster(['--nodes', 'two']);
    assert.equal(nodes.code, 2);
    assert.match(nodes.stderr, /--nodes.*a count from 1 to 5/);
  });

  it('reads TEMPORAL_DATABASE_URL into node settings, decoding the password', () => {
    assert.deepEqual(temporalDatabaseFromUrl('postgres://temporal:p%40ss@db.internal:6543/ignored'), {
      host: 'db.internal',
      port: 6543,
      user: 'temporal',
      password: 'p@ss',
    });
    assert.equal(temporalDatabaseFromUrl('postgresql://t:x@db').port, 5432);
  });

  it('names TEMPORAL_DATABASE_URL and the expected form for a URL it cannot use, without echoing it', () => {
    for (const bad of ['not a url', 'mysql://u:secret@db:3306', 'postgres://db:5432']) {
      assert.throws(
        () => temporalDatabaseFromUrl(bad),
        (err: Error) => /TEMPORAL_DATABASE_URL/.test(err.message) && !err.message.includes('secret'),
      );
    }
  });
});

describe('shardOwner (the owner field of a ShardInfo row)', () => {
  it('reads field 3 past the varint fields before it', () => {
    const owner = '127.0.0.1:7234-5-0b7ab1f2-5dbc-4e9b-b384-c1bcb52f22b3';
    const data = Buffer.from([
      ...varint((1 << 3) | 0), // shard_id = 7
      7,
      ...varint((2 << 3) | 0), // range_id = 300 (a two-byte varint)
      ...varint(300),
      ...varint((3 << 3) | 2), // owner
      ...varint(owner.length),
      ...Buffer.from(owner),
      ...varint((6 << 3) | 0), // a later field
      1,
    ]);
    assert.equal(shardOwner(data), owner);
  });

  it('answers undefined for a row without an owner and throws on truncated bytes', () => {
    assert.equal(shardOwner(Buffer.from([8, 7])), undefined);
    assert.throws(() => shardOwner(Buffer.from([8, 0x80])), /truncated/);
  });
});

describe('a Temporal node that exits while starting', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-node-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A node whose "server" prints one fx-style error line ending in `cause`, then exits 1. */
  async function failingNode(cause: string): Promise<TemporalNode> {
    const binary = path.join(dir, 'temporal-server');
    const chain = 'could not build arguments for function NewService: '.repeat(20);
    writeFileSync(binary, `#!/bin/sh\necho 'Unable to create server. Error: ${chain}${cause}'\nexit 1\n`);
    chmodSync(binary, 0o755);
    const database = { host: '127.0.0.1', port: 1, user: 'u', password: 'p' };
    return TemporalNode.create({ number: 1, serverBinary: binary, database, logDir: dir });
  }

  it('says a port was taken, showing the cause at the end of a long error line', async () => {
    const node = await failingNode('listen tcp 127.0.0.1:20001: bind: address already in use');
    const err = await node.start(10_000).then(
      () => assert.fail('started'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ClusterStartError);
    assert.equal(err.portTaken, true);
    assert.match(err.message, /Temporal node 1 exited \(1\) while starting/);
    assert.match(err.message, /bind: address already in use/);
  });

  it('does not call another cause a taken port, also when an earlier run in the same log was', async () => {
    const taken = await failingNode('bind: address already in use');
    await assert.rejects(taken.start(10_000), (e: ClusterStartError) => e.portTaken);
    const node = await failingNode('pq: password authentication failed');
    const err = await node.start(10_000).then(
      () => assert.fail('started'),
      (e: unknown) => e as ClusterStartError,
    );
    assert.equal(err.portTaken, false);
    assert.match(err.message, /password authentication failed/);
  });
});
