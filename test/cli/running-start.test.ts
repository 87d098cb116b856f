// The CLI finds the system it belongs to: the real `replyflow start` on ports and a data dir that are
// not the defaults tells the CLI where it runs (its runtime file), so CLI calls with none of those
// settings reach it, the admin's and the operator's alike; what an error says about where an address
// came from; explicit settings win; a stale file counts as none; Ctrl-C removes the file.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliEnvironment } from '../../src/config';
import { freePort } from '../../src/ports';
import { claimRuntimeFile, findRunningStart, releaseRuntimeFile } from '../../src/running-start';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { eventually } from '../support/eventually';
import { cliOffline as replyflow } from './harness';

/** A pid no process has any more: a child that ran and exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

describe('the CLI finds the replyflow start it belongs to (the real executable, ports not the defaults)', function () {
  this.timeout(180_000);
  const parent = mkdtempSync(path.join(os.tmpdir(), 'replyflow-found-'));
  chmodSync(parent, 0o755); // as root, the embedded PostgreSQL runs as its own user
  const dataDir = path.join(parent, 'data');
  const runtimeFile = path.join(parent, 'runtime', 'running.json');
  /** What every CLI call here has: where the test keeps its files, nothing that points at a system. */
  const bare = {
    REPLYFLOW_RUNTIME_FILE: runtimeFile,
    REPLYFLOW_OPERATOR_TOKEN_FILE: path.join(parent, 'no-login-here'),
  };
  let child: ChildProcess;
  let banner = '';
  let port: number;
  let devPort: number;

  before(async () => {
    [port, devPort] = [await freePort(), await freePort()];
    child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin/replyflow.js'), 'start'], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME ?? os.tmpdir(),
        REPLYFLOW_DATA_DIR: dataDir,
        PORT: String(port),
        TEMPORAL_DEV_PORT: String(devPort),
        TEMPORAL_UI_PORT: String(await freePort()),
        WORKER_METRICS_PORT: '0',
        REPLYFLOW_RUNTIME_FILE: runtimeFile,
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [child.stdout!, child.stderr!])
      stream.on('data', (chunk: Buffer) => {
        banner += chunk.toString();
      });
    await eventually('replyflow is running', () => banner.includes('Press Ctrl-C to stop.'), {
      timeoutMs: 150_000,
      intervalMs: 100,
      abortIf: () => (child.exitCode === null ? undefined : `replyflow start exited:\n${banner}`),
    });
  });
  after(() => {
    if (child?.exitCode === null) child.kill('SIGKILL');
  });

  it('writes where it runs, owner-only and without secrets, and the banner says how to reach it', () => {
    assert.equal(statSync(runtimeFile).mode & 0o777, 0o600);
    const written = JSON.parse(readFileSync(runtimeFile, 'utf8')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(written).sort(), [
      'dataDir',
      'pid',
      'receiverUrl',
      'startedAt',
      'temporalAddress',
      'temporalUi',
    ]);
    assert.equal(written.pid, child.pid);
    assert.equal(written.receiverUrl, `http://127.0.0.1:${port}`);
    assert.equal(written.dataDir, dataDir);
    assert.equal(written.temporalAddress, `127.0.0.1:${devPort}`);
    assert.match(banner, /Other terminals: any `npx replyflow …` in this clone finds this system/);
    assert.ok(
      banner.includes(`REPLYFLOW_URL=http://127.0.0.1:${port} (operators), REPLYFLOW_DATA_DIR=${dataDir}`),
      banner,
    );
    assert.ok(banner.includes(`--address 127.0.0.1:${devPort}`), banner);
  });

  it('lets the admin and an operator work with none of PORT, REPLYFLOW_URL or REPLYFLOW_DATA_DIR set', async () => {
    const added = await replyflow(['operator', 'add', 'finder', '--roles', 'discard'], bare);
    assert.equal(added.code, 0, added.stderr);
    const token = /token: (\S+)/.exec(added.stdout)?.[1];
    assert.ok(token, added.stdout);
    const held = await replyflow(['held', '--json'], { ...bare, REPLYFLOW_OPERATOR_TOKEN: token });
    assert.equal(held.code, 0, held.stderr);
    assert.deepEqual(JSON.parse(held.stdout), []);
  });

  it('goes where an explicit setting points instead, and names that setting when nothing is there', async () => {
    const closed = await freePort();
    const elsewhere = await replyflow(['held'], {
      ...bare,
      PORT: String(closed),
      REPLYFLOW_OPERATOR_TOKEN: 'rfo_whatever',
    });
    assert.equal(elsewhere.code, 1);
    assert.equal(
      elsewhere.stderr.trim(),
      `replyflow: cannot reach replyflow at http://127.0.0.1:${closed} (ECONNREFUSED; REPLYFLOW_URL unset: PORT ${closed} on this machine, and no running replyflow start of this clone says otherwise): is \`replyflow start\` (or a receiver) running there? Set REPLYFLOW_URL to where it runs`,
    );
    const admin = await replyflow(['operator', 'list'], {
      ...bare,
      REPLYFLOW_DATA_DIR: path.join(parent, 'none'),
    });
    assert.equal(admin.code, 2);
    assert.match(admin.stderr, /needs the admin credential: set REPLYFLOW_ADMIN_DATABASE_URL/);
    const noDatabase = await replyflow(['operator', 'list'], {
      ...bare,
      REPLYFLOW_ADMIN_DATABASE_URL: `postgres://admin:x@127.0.0.1:${closed}/replyflow`,
    });
    assert.equal(noDatabase.code, 1);
    assert.equal(
      noDatabase.stderr.trim(),
      `replyflow: cannot reach PostgreSQL at 127.0.0.1:${closed} (ECONNREFUSED; REPLYFLOW_ADMIN_DATABASE_URL): is it running? Set REPLYFLOW_ADMIN_DATABASE_URL to the admin's role where it runs`,
    );
  });

  it('leaves the file to a start that runs already, and takes over one whose start is gone', async () => {
    const file = path.join(parent, 'claimed.json');
    const record = {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      receiverUrl: 'http://127.0.0.1:3001',
      dataDir: parent,
      temporalAddress: '127.0.0.1:7234',
    };
    assert.equal(claimRuntimeFile(file, record), undefined);
    const second = { ...record, pid: await deadPid(), receiverUrl: 'http://127.0.0.1:3002' };
    assert.equal(claimRuntimeFile(file, second)?.pid, process.pid, 'the first one keeps it');
    releaseRuntimeFile(file, second.pid);
    assert.equal(findRunningStart(file)?.receiverUrl, 'http://127.0.0.1:3001', 'only its writer removes it');
    writeFileSync(file, JSON.stringify(second));
    assert.equal(claimRuntimeFile(file, record), undefined, 'a stale file is taken over');
    assert.equal(findRunningStart(file)?.pid, process.pid);
  });

  it("names the running start's runtime file when the address it gave cannot be reached", async () => {
    const file = path.join(parent, 'other-start.json');
    const closed = await freePort();
    const record = {
      pid: process.pid, // a process that runs: this one
      startedAt: new Date().toISOString(),
      receiverUrl: `http://127.0.0.1:${closed}`,
      dataDir: path.join(parent, 'gone'),
      temporalAddress: '127.0.0.1:1',
    };
    writeFileSync(file, JSON.stringify(record));
    const env = { ...bare, REPLYFLOW_RUNTIME_FILE: file, REPLYFLOW_OPERATOR_TOKEN: 'rfo_whatever' };
    const result = await replyflow(['held'], env);
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr.trim(),
      `replyflow: cannot reach replyflow at http://127.0.0.1:${closed} (ECONNREFUSED; REPLYFLOW_URL from the runtime file of the replyflow start running here (pid ${process.pid}, ${file})): is \`replyflow start\` (or a receiver) running there? Set REPLYFLOW_URL to where it runs`,
    );
    const admin = await replyflow(['operator', 'list'], env);
    assert.equal(admin.code, 2);
    assert.ok(
      admin.stderr.includes(
        `REPLYFLOW_DATA_DIR from the runtime file of the replyflow start running here (pid ${process.pid}, ${file})`,
      ),
      admin.stderr,
    );

    // The same file left by a start that is gone counts as none: the defaults apply (port 3000 may be anyone's).
    writeFileSync(file, JSON.stringify({ ...record, pid: await deadPid() }));
    assert.equal(cliEnvironment({ REPLYFLOW_RUNTIME_FILE: file }).runningStart, undefined);
  });

  it('removes the file when it stops', async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
    assert.equal(existsSync(runtimeFile), false);
  });
});
