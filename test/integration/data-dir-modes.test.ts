// Everything `replyflow start` writes under its data dir is readable by its owner only: the payload
// key, the sandbox's secrets, the embedded PostgreSQL's cluster and passwords, and the embedded
// Temporal's SQLite file with the -wal and -shm files SQLite makes beside it while it runs.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { launch } from '../../src/launcher';
import { freePort } from '../../src/ports';
import { startDevServer } from '../../src/temporal/dev-server';
import { silentLogger } from '../support/system';

/** Every regular file under `dir`, with its permission bits in octal. */
function fileModes(dir: string): Record<string, string> {
  const modes: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    modes[path.relative(dir, file)] = (statSync(file).mode & 0o777).toString(8);
  }
  return modes;
}

describe('the data dir `replyflow start` writes', function () {
  this.timeout(180_000);
  let parent: string;
  before(() => {
    parent = mkdtempSync(path.join(os.tmpdir(), 'replyflow-modes-'));
    // As root, PostgreSQL runs as the postgres user, who must be able to enter the directories above.
    chmodSync(parent, 0o755);
  });
  after(() => rmSync(parent, { recursive: true, force: true }));

  it('holds no file that anyone but its owner may read, while running and after a stop', async () => {
    const dataDir = path.join(parent, 'data');
    const running = await launch(
      loadConfig({
        REPLYFLOW_DATA_DIR: dataDir,
        PORT: String(await freePort()),
        TEMPORAL_DEV_PORT: String(await freePort()),
        TEMPORAL_UI_PORT: '0',
        WORKER_METRICS_PORT: '0',
        LOG_LEVEL: 'silent',
      }),
      silentLogger,
      'all',
    );
    let whileRunning: Record<string, string>;
    try {
      whileRunning = fileModes(dataDir);
    } finally {
      await running.stop();
    }
    const afterStop = fileModes(dataDir);
    for (const expected of [
      'encryption.key',
      'sandbox-secrets.json',
      'temporal.sqlite',
      'temporal.sqlite-wal',
      'temporal.sqlite-shm',
      path.join('postgres', 'replyflow-credentials.json'),
      path.join('postgres', 'PG_VERSION'),
    ])
      assert.ok(expected in whileRunning, `${expected} was written`);
    const readableByOthers = (modes: Record<string, string>) =>
      Object.entries(modes).filter(([, mode]) => (Number.parseInt(mode, 8) & 0o077) !== 0);
    assert.deepEqual(readableByOthers(whileRunning), [], 'while running');
    assert.deepEqual(readableByOthers(afterStop), [], 'after a stop');
  });

  it('tightens a Temporal SQLite file that an earlier version left 0644, with its -wal and -shm', async () => {
    const dbFile = path.join(parent, 'earlier', 'temporal.sqlite');
    const files = [dbFile, `${dbFile}-wal`, `${dbFile}-shm`];
    const first = await startDevServer({ port: 0, dbFile });
    await first.stop();
    // What earlier versions left: SQLite's default mode, and a log that outlived an unclean stop.
    writeFileSync(`${dbFile}-wal`, '', { flag: 'a' });
    for (const file of files) if (existsSync(file)) chmodSync(file, 0o644);
    const again = await startDevServer({ port: 0, dbFile });
    try {
      assert.deepEqual(
        files.map((file) => [path.basename(file), (statSync(file).mode & 0o777).toString(8)]),
        files.map((file) => [path.basename(file), '600']),
      );
    } finally {
      await again.stop();
    }
  });
});
