// A flood of unauthenticated decisions cannot end a held item: anyone with access to Temporal can
// signal a workflow as often as they like, and every signal lands in its history, which Temporal ends
// at a fixed length. Refusals of what cannot carry a seal cost about one event each, and a wait whose
// history grows long continues as new. A dev server of its own, with the history limits lowered (the
// defaults are 4,096 events to the suggestion, 51,200 to the end), so that the flood stays small:
// 600 signals are at least 600 events, past the suggestion however Temporal batches them.
import assert from 'node:assert/strict';
import { Client } from '@temporalio/client';
import { eventStartOptions } from '../../src/receiver/start-event';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { type DevServer, startDevServer } from '../../src/temporal/dev-server';
import { resolveSignal } from '../../workflows/messages';
import { Tenant } from '../../workflows/search-attributes';
import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import { decide, twoOperators } from '../support/operators';
import { TEST_ENCRYPTION_KEY } from '../support/servers';
import { sandboxEvent, startTestWorker, testConfig, uniqueId } from '../support/system';
import { auditRows, effectRows, startEvent, waitForState } from '../support/workflows';

const FLOOD = 600;

describe('a flood of unsealed decisions (a dev server with low history limits, PostgreSQL)', function () {
  this.timeout(240_000);
  let server: DevServer;
  let fake: FakeTarget;
  let client: TemporalClient;
  let worker: { stop(): Promise<void> };
  const config = () => testConfig({ SANDBOX_API_URL: fake.url });
  let settings: ReturnType<typeof testConfig>;

  before(async () => {
    server = await startDevServer({
      port: 0,
      dynamicConfig: {
        'limit.historyCount.suggestContinueAsNew': 200,
        'limit.historyCount.warn': 1000,
        'limit.historyCount.error': 2000,
      },
    });
    fake = await new FakeTarget().start();
    settings = config();
    client = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    worker = await startTestWorker({ address: server.address, config: settings });
  });
  after(async () => {
    await worker?.stop();
    await client?.close();
    await fake?.stop();
    await server?.stop();
  });

  it('keeps the item held and decidable through 600 plaintext signals, each audited as refused', async () => {
    const { asker, approver } = await twoOperators();
    const conversationId = uniqueId('c');
    fake.next('accept-then-drop');
    // Started as the receiver starts it, with a tenant: its search attributes must outlive the run.
    const tenant = `slack:${uniqueId('T')}`;
    const handle = await client.client.workflow.start(
      'handleEvent',
      eventStartOptions(
        { ...sandboxEvent({ conversationId, messageId: 'm1', target: 'sandbox-blind' }), tenant },
        settings.TEMPORAL_TASK_QUEUE,
      ),
    );
    await waitForState(handle, 'held');
    const firstRun = (await handle.describe()).runId;
    const [row] = await effectRows(`chat:sandbox:${conversationId}:m1:answer`);

    // What the attacker has: the server's address, no payload key.
    const plain = new Client({ connection: client.connection, namespace: 'default' });
    for (let sent = 0; sent < FLOOD; sent += 50)
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          plain.workflow
            .getHandle(handle.workflowId)
            .signal(resolveSignal, { action: 'resend', operator: 'ana', reason: `flood ${sent + i}` }),
        ),
      );

    // Until every signal is audited as refused, or the item is gone (the history limit ended it).
    const seen = await eventually(
      'every signal audited, or the workflow closed',
      async () => ({
        refused: (await auditRows(handle.workflowId)).filter(
          (a) => a.result === 'rejected: plaintext: not encrypted by a known key',
        ).length,
        execution: (await handle.describe()).status.name,
      }),
      {
        until: (s) => s.refused >= FLOOD || s.execution !== 'RUNNING',
        describe: (s) => `${s.refused} refusals, ${s.execution}`,
        timeoutMs: 120_000,
      },
    );
    assert.equal(seen.execution, 'RUNNING', 'the held item is still there');
    assert.equal(seen.refused, FLOOD);
    // The wait goes on in a new run once the last refusals are written.
    const now = await eventually('a new run carries the wait', () => handle.describe(), {
      until: (d) => d.runId !== firstRun || d.status.name !== 'RUNNING',
      describe: (d) => `${d.status.name}, run ${d.runId}`,
    });
    assert.equal(now.status.name, 'RUNNING');
    assert.equal(now.typedSearchAttributes.get(Tenant), tenant, 'the new run keeps the Tenant');
    assert.equal((await waitForState(handle, 'held')).state, 'held');
    assert.equal(fake.sendsFor(row.id).length, 1, 'nothing was sent meanwhile');

    assert.equal(
      await decide(handle, asker, 'resolve', { action: 'resend', reason: 'after the flood' }),
      'Accepted: awaiting approval',
    );
    assert.equal(
      await decide(handle, approver, 'approve', { reason: 'checked' }),
      'Accepted: resend approved',
    );
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(fake.sendsFor(row.id).length, 2, 'one approval, one resend');
  });

  it('carries the rest of an answer into the new run: a later message held through the flood, then the last sent', async () => {
    const { asker } = await twoOperators();
    const bot = testConfig({ SANDBOX_API_URL: fake.url, RESPONDER_MODULE: 'test/bots/rich-bot.ts' });
    const botWorker = await startTestWorker({ address: server.address, config: bot });
    try {
      const conversationId = uniqueId('c');
      // The first message is sent; the second is committed but its answer lost: held (no lookup).
      fake.next('accept', 'accept-then-drop');
      const handle = await startEvent(
        client.client,
        bot.TEMPORAL_TASK_QUEUE,
        sandboxEvent({ conversationId, messageId: 'm1', text: 'plain three', target: 'sandbox-blind' }),
      );
      const key = `chat:sandbox:${conversationId}:m1:answer`;
      assert.equal((await waitForState(handle, 'held')).businessKey, `${key}#2`);
      const firstRun = (await handle.describe()).runId;
      const plain = new Client({ connection: client.connection, namespace: 'default' });
      for (let sent = 0; sent < 250; sent += 50)
        await Promise.all(
          Array.from({ length: 50 }, () =>
            plain.workflow.getHandle(handle.workflowId).signal(resolveSignal, { action: 'resend' } as never),
          ),
        );
      await eventually('a new run carries the wait', () => handle.describe(), {
        until: (d) => d.runId !== firstRun || d.status.name !== 'RUNNING',
        timeoutMs: 120_000,
      });
      const held = await waitForState(handle, 'held');
      assert.equal(held.businessKey, `${key}#2`, 'the new run waits on the same message');
      assert.deepEqual(
        fake.deliveredTo(conversationId).map((d) => d.text),
        ['one', 'two'],
      );
      await decide(handle, asker, 'resolve', {
        action: 'mark-sent',
        reason: 'it is there',
        externalId: 'x2',
      });
      assert.equal((await handle.result()).state, 'succeeded');
      assert.deepEqual(
        fake.deliveredTo(conversationId).map((d) => d.text),
        ['one', 'two', 'three'],
      );
      assert.deepEqual(
        (await effectRows(key)).map((r) => [r.business_key, r.status]),
        [
          [key, 'succeeded'],
          [`${key}#2`, 'succeeded'],
          [`${key}#3`, 'succeeded'],
        ],
      );
    } finally {
      await botWorker.stop();
    }
  });
});
