// A refusal inside the worker, as `replyflow worker` prints it: a responder that answers 400 fails
// the event on purpose, and the Temporal SDK's "Activity failed" is one JSON record through our
// logger, without the ~40-line dump of every stack the SDK's own logger printed, and without the
// message text.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ReceiverHandle } from '../../src/receiver';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { eventually } from '../support/eventually';
import { post, sandboxRequest, startTestReceiver } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { TEST_SANDBOX, testConfig } from '../support/system';

/** Text that must never appear in the worker's output. */
const CANARY = 'MAUVE-PANGOLIN-2208';

describe('worker: an activity refused on purpose is one log line (real executable)', function () {
  this.timeout(120_000);
  const config = testConfig();
  let responder: http.Server;
  let receiver: ReceiverHandle;
  let worker: ChildProcess;
  let stdout = '';
  let stderr = '';

  before(async () => {
    const [server, db] = await Promise.all([devServer(), database()]);
    responder = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(400).end());
    });
    await new Promise<void>((resolve) => responder.listen(0, '127.0.0.1', resolve));
    receiver = await startTestReceiver({ config, temporalAddress: server.address });
    worker = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin/replyflow.js'), 'worker'], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME ?? os.tmpdir(),
        TEMPORAL_ADDRESS: server.address,
        DATABASE_URL: db.url,
        REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        REPLYFLOW_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'replyflow-refusal-')),
        TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
        WORKER_METRICS_PORT: '0',
        SANDBOX_ENABLED: 'true',
        SANDBOX_WEBHOOK_SECRET: TEST_SANDBOX.webhookSecret,
        SANDBOX_API_TOKEN: TEST_SANDBOX.apiToken,
        SANDBOX_API_URL: `${receiver.url}/sandbox/api`,
        RESPONDER_URL: `http://127.0.0.1:${(responder.address() as AddressInfo).port}/`,
        // The defaults a person gets: LOG_LEVEL info, REPLYFLOW_SDK_LOG_LEVEL WARN.
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    worker.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
  });
  after(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
    }
    await receiver?.stop();
    responder?.close();
  });

  it('logs the failed activity as one JSON record, without a stack or the message text', async () => {
    const request = sandboxRequest(config, { text: `${CANARY} where is my order?` });
    assert.equal((await post(receiver, request)).status, 202);

    await eventually('the SDK reports the failed activity', () => /Activity failed/.test(stdout + stderr), {
      timeoutMs: 90_000,
      intervalMs: 200,
      abortIf: () =>
        worker.exitCode !== null ? `the worker exited (${worker.exitCode}): ${stderr}` : undefined,
    });

    // The records (the banner aside), one JSON line each.
    const lines = stdout.split('\n').filter((line) => line.startsWith('{'));
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const failed = records.filter((r) => r.msg === 'Activity failed');
    assert.equal(failed.length, 1, `one record in stdout; stderr was:\n${stderr}`);
    const [record] = failed as [Record<string, unknown>];
    assert.equal(record.level, 40);
    assert.equal(record.activityType, 'prepareReply');
    assert.match(String(record.error), /responder answered 400: check RESPONDER_URL/);
    assert.equal(record.stack, undefined);
    assert.doesNotMatch(stdout + stderr, /\n\s+at /, 'no stack frames anywhere');
    assert.ok(!(stdout + stderr).includes(CANARY), 'no message text');
  });
});
