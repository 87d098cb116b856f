// A worker killed (SIGKILL) after the target committed a reply and before the result was recorded
// must not cause a second reply. The worker runs as a real child process (`replyflow worker`); a
// fresh worker takes over once Temporal times the attempt out.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Config } from '../../src/config';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import type { handleEvent } from '../../workflows';
import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import {
  FAST_POLICY,
  sandboxEvent,
  startTestWorker,
  TEST_SANDBOX,
  testConfig,
  uniqueId,
} from '../support/system';
import { effectRows, startEvent, waitForState } from '../support/workflows';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'replyflow.js');

describe('crash between the target accepting and the record (worker SIGKILLed)', function () {
  this.timeout(180_000);
  let fake: FakeTarget;
  let temporal: TemporalClient;
  let client: Client;
  let address: string;
  let databaseUrl: string;

  before(async () => {
    const [server, db] = await Promise.all([devServer(), database()]);
    address = server.address;
    databaseUrl = db.url;
    fake = await new FakeTarget().start();
    temporal = await connectClient(address, 'default', TEST_ENCRYPTION_KEY);
    client = temporal.client;
    await crashWorkerAfterCommits();
  });
  after(async () => {
    await worker?.stop();
    await temporal?.close();
    await fake?.stop();
  });

  /** `replyflow worker` in its own process, as in production, with a 3 s send timeout (its lease). */
  function childWorker(config: Config): ChildProcess {
    return spawn(process.execPath, [BIN, 'worker'], {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: address,
        DATABASE_URL: databaseUrl,
        TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
        SANDBOX_API_URL: fake.url,
        SANDBOX_ENABLED: 'true',
        SANDBOX_WEBHOOK_SECRET: TEST_SANDBOX.webhookSecret,
        SANDBOX_API_TOKEN: TEST_SANDBOX.apiToken,
        REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        SEND_TIMEOUT: '3s',
        TURN_GATHER: '0s',
        LOG_LEVEL: 'silent',
      },
      stdio: 'ignore',
    });
  }

  type Target = 'sandbox' | 'sandbox-lookup' | 'sandbox-blind';
  const crashed = new Map<Target, { handle: WorkflowHandle<typeof handleEvent>; conversationId: string }>();
  let worker: { stop(): Promise<void> } | undefined;

  // One worker process takes a send to each kind of target; all three replies are committed at the
  // target before the worker hears back, and then the worker is killed. A fresh worker takes over.
  async function crashWorkerAfterCommits() {
    const config = testConfig({ SANDBOX_API_URL: fake.url });
    const child = childWorker(config);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    fake.next('commit-then-hold', 'commit-then-hold', 'commit-then-hold');
    for (const target of ['sandbox', 'sandbox-lookup', 'sandbox-blind'] as const) {
      const conversationId = uniqueId('c');
      const event = sandboxEvent({ conversationId, messageId: 'm1', target });
      crashed.set(target, {
        handle: await startEvent(client, config.TEMPORAL_TASK_QUEUE, event),
        conversationId,
      });
    }
    await eventually('the fake target committed each reply', () =>
      [...crashed.values()].every((c) => fake.deliveredTo(c.conversationId).length === 1),
    );
    child.kill('SIGKILL');
    await exited;
    worker = await startTestWorker({
      address,
      config,
      deps: { policy: { ...FAST_POLICY, sendTimeoutMs: 3000 } },
    });
  }

  const effectOf = async (conversationId: string) =>
    (await effectRows(`chat:sandbox:${conversationId}:m1:answer`))[0];

  it('settles by lookup where the target can be asked: one reply', async () => {
    const { handle, conversationId } = crashed.get('sandbox-lookup')!;
    assert.equal((await handle.result()).state, 'succeeded');
    const row = await effectOf(conversationId);
    assert.equal(row.status, 'succeeded');
    assert.equal(fake.sendsFor(row.id).length, 1, 'no second request reached the target');
    assert.equal(fake.deliveredTo(conversationId).length, 1);
  });

  it('resends with the same idempotency key where the target dedupes: still one reply', async () => {
    const { handle, conversationId } = crashed.get('sandbox')!;
    assert.equal((await handle.result()).state, 'succeeded');
    const row = await effectOf(conversationId);
    assert.equal(new Set(fake.sendsFor(row.id).map((s) => s.idempotencyKey)).size, 1);
    assert.equal(fake.deliveredTo(conversationId).length, 1);
  });

  it('holds for a person where the target can neither dedupe nor be asked', async () => {
    const { handle, conversationId } = crashed.get('sandbox-blind')!;
    const held = await waitForState(handle, 'held', 60_000);
    assert.equal(held.lastErrorClass, 'unknown');
    const row = await effectOf(conversationId);
    assert.equal(fake.sendsFor(row.id).length, 1);
    await handle.terminate('test done');
  });
});
