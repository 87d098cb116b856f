// The worker's Prometheus endpoint, from a real `replyflow worker` process: the Temporal SDK's runtime
// metrics and ours on one scrape target — outcomes by state and by who settled them, retries by error
// class, open (held, failed) effects counted in PostgreSQL with how long the oldest has waited, and time
// to resolution.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/ports';
import { connectClient, type TemporalClient } from '../../src/temporal/client';

import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import { operatorDecides } from '../support/operators';
import { counterValue } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/servers';
import { sandboxEvent, TEST_SANDBOX, uniqueId } from '../support/system';
import { startEvent, waitForState } from '../support/workflows';

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

describe('worker metrics: our metrics and the Temporal SDK runtime metrics on WORKER_METRICS_PORT (replyflow worker)', function () {
  this.timeout(300_000);
  const taskQueue = uniqueId('q-metrics-');
  let fake: FakeTarget;
  let temporal: TemporalClient;
  let worker: ChildProcess;
  let stderr = '';
  let metricsUrl = '';
  let db: TestDatabase;
  let workerEnv: NodeJS.ProcessEnv = {};
  const spawnWorker = (env: NodeJS.ProcessEnv) =>
    spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin/replyflow.js'), 'worker'], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });

  const scrape = async () => (await fetch(metricsUrl)).text();
  /** Polls the endpoint until `check` holds for what it serves (an observation, not a sleep). */
  const until = (what: string, check: (text: string) => boolean) =>
    eventually(`the metrics show ${what}`, scrape, {
      until: check,
      timeoutMs: 120_000,
      intervalMs: 200,
      abortIf: () =>
        worker.exitCode === null ? undefined : `the worker exited (${worker.exitCode}): ${stderr}`,
      describe: (last) => `\n${last.slice(0, 2000)}`,
    });

  before(async () => {
    const [server, testDb] = await Promise.all([devServer(), database()]);
    db = testDb;
    fake = await new FakeTarget().start();
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    workerEnv = {
      PATH: process.env.PATH,
      TEMPORAL_ADDRESS: server.address,
      DATABASE_URL: db.url,
      REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      REPLYFLOW_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'replyflow-metrics-')),
      TEMPORAL_TASK_QUEUE: taskQueue,
      WORKER_METRICS_PORT: String(port),
      SANDBOX_API_URL: fake.url,
      SANDBOX_ENABLED: 'true',
      SANDBOX_WEBHOOK_SECRET: TEST_SANDBOX.webhookSecret,
      SANDBOX_API_TOKEN: TEST_SANDBOX.apiToken,
      LOG_LEVEL: 'silent',
      REPLYFLOW_SDK_LOG_LEVEL: 'ERROR',
    };
    worker = spawnWorker(workerEnv);
    worker.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    // The SDK's pollers show in its own metrics once the worker polls the queue.
    await until('the SDK pollers', (text) => /^temporal_num_pollers\{/m.test(text));
  });
  after(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
    }
    await Promise.all([fake?.stop(), temporal?.close()]);
  });

  it('counts retries by error class, outcomes by who settled them, open held work and time to resolution', async () => {
    // A 503 (known not applied) is retried, then the reply goes out.
    fake.next({ status: 503 });
    const retried = await startEvent(
      temporal.client,
      taskQueue,
      sandboxEvent({ conversationId: uniqueId('c') }),
    );
    assert.equal((await retried.result()).state, 'succeeded');

    // A lost answer on a target that cannot be asked: held until an operator decides.
    fake.next('accept-then-drop');
    const held = await startEvent(
      temporal.client,
      taskQueue,
      sandboxEvent({ conversationId: uniqueId('c'), target: 'sandbox-blind' }),
    );
    await waitForState(held, 'held', 60_000);
    const heldBy = Date.now();
    let text = await until(
      'the held outcome',
      (t) =>
        counterValue(t, 'replyflow_effect_outcomes_total', {
          target: 'sandbox-blind',
          state: 'held',
          by: 'worker',
        }) === 1,
    );
    assert.equal(
      counterValue(text, 'replyflow_send_retries_total', { target: 'sandbox', error_class: 'retryable' }),
      1,
    );
    assert.equal(
      counterValue(text, 'replyflow_effect_outcomes_total', {
        target: 'sandbox',
        state: 'succeeded',
        by: 'worker',
      }),
      1,
    );
    assert.equal(
      counterValue(text, 'replyflow_effect_resolution_seconds_count', {
        target: 'sandbox',
        state: 'succeeded',
        by: 'worker',
      }),
      1,
    );
    // Counted in PostgreSQL, so every worker reports the same (other tests' held work included).
    assert.ok(counterValue(text, 'replyflow_effects_open', { status: 'held' }) >= 1);
    for (const status of ['claimed', 'sending', 'retry_wait', 'unknown', 'failed'])
      assert.match(text, new RegExp(`^replyflow_effects_open\\{status="${status}"\\} \\d+$`, 'm'));

    // How long the oldest held effect has waited: at least since ours was held, and what PostgreSQL
    // says of the oldest held row just before and just after the scrape (other tests' held work counts).
    const oldestHeld = async () =>
      (
        await db.pool.query<{ seconds: number }>(
          `SELECT EXTRACT(EPOCH FROM now() - min(updated_at))::float8 AS seconds FROM effects WHERE status = 'held'`,
        )
      ).rows[0]!.seconds;
    const low = await oldestHeld();
    const scrapedAt = Date.now();
    text = await scrape();
    const high = await oldestHeld();
    const oldest = counterValue(text, 'replyflow_effects_open_oldest_seconds', { status: 'held' });
    assert.ok(low <= oldest && oldest <= high, `${oldest} s between ${low} and ${high}`);
    assert.ok(oldest >= (scrapedAt - heldBy) / 1000, `${oldest} s since ours was held`);
    for (const status of ['claimed', 'sending', 'retry_wait', 'unknown', 'failed'])
      assert.match(
        text,
        new RegExp(`^replyflow_effects_open_oldest_seconds\\{status="${status}"\\} [\\d.e+-]+$`, 'm'),
      );

    await operatorDecides(held, 'resolve', {
      action: 'mark-sent',
      reason: 'found it in the chat',
      externalId: '1',
    });
    assert.equal((await held.result()).state, 'succeeded');
    text = await until(
      'the operator outcome',
      (t) =>
        counterValue(t, 'replyflow_effect_outcomes_total', {
          target: 'sandbox-blind',
          state: 'succeeded',
          by: 'operator',
        }) === 1,
    );
    assert.equal(
      counterValue(text, 'replyflow_effect_resolution_seconds_count', {
        target: 'sandbox-blind',
        state: 'succeeded',
        by: 'operator',
      }),
      1,
    );

    // A permanent error fails the effect at once.
    fake.next({ status: 404 });
    const failed = await startEvent(
      temporal.client,
      taskQueue,
      sandboxEvent({ conversationId: uniqueId('c') }),
    );
    await waitForState(failed, 'failed', 60_000);
    text = await until(
      'the failed outcome',
      (t) =>
        counterValue(t, 'replyflow_effect_outcomes_total', {
          target: 'sandbox',
          state: 'failed',
          by: 'worker',
        }) === 1,
    );
    await operatorDecides(failed, 'resolve', {
      action: 'discard',
      reason: 'test over',
    });
    assert.equal((await failed.result()).state, 'discarded');

    // The SDK's runtime metrics come through the same endpoint.
    text = await until('SDK task metrics', (t) => /^temporal_workflow_completed_total\{/m.test(t));
    assert.match(text, /^temporal_activity_execution_latency_(bucket|count)\{/m);
    assert.match(text, /^process_cpu_seconds_total /m);
  });

  it('labels send outcomes and retries with the tenant whose credential the send used', async () => {
    const tenant = `slack:${uniqueId('T')}`;
    const ofTenant = () => {
      const conversationId = uniqueId('c');
      const event = sandboxEvent({ conversationId });
      event.replyTo!.destination = { conversationId, tenant };
      return event;
    };
    fake.next({ status: 503 });
    const retried = await startEvent(temporal.client, taskQueue, ofTenant());
    assert.equal((await retried.result()).state, 'succeeded');
    fake.next({ status: 404 });
    const failed = await startEvent(temporal.client, taskQueue, ofTenant());
    await waitForState(failed, 'failed', 60_000);
    const labels = { target: 'sandbox', tenant };
    const text = await until(
      'the outcomes of the tenant',
      (t) =>
        counterValue(t, 'replyflow_effect_outcomes_total', { ...labels, state: 'failed', by: 'worker' }) ===
        1,
    );
    assert.equal(
      counterValue(text, 'replyflow_effect_outcomes_total', { ...labels, state: 'succeeded', by: 'worker' }),
      1,
    );
    assert.equal(
      counterValue(text, 'replyflow_send_retries_total', { ...labels, error_class: 'retryable' }),
      1,
    );
    await operatorDecides(failed, 'resolve', { action: 'discard', reason: 'test over' });
    await until(
      'the operator’s discard of the tenant’s effect',
      (t) =>
        counterValue(t, 'replyflow_effect_outcomes_total', {
          ...labels,
          state: 'discarded',
          by: 'operator',
        }) === 1,
    );
  });

  it('refuses to start a second worker on a metrics port in use, saying which, and exits', async () => {
    const second = spawnWorker({ ...workerEnv, LOG_LEVEL: 'error' });
    let output = '';
    second.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => second.once('exit', resolve));
    assert.equal(code, 1);
    assert.match(
      output,
      new RegExp(`WORKER_METRICS_PORT ${workerEnv.WORKER_METRICS_PORT} is already in use`),
    );
    assert.doesNotMatch(output, /Cannot close connection/);
    // The first worker is unaffected.
    assert.equal(worker.exitCode, null);
  });
});
