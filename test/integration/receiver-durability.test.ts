// Durable before 2xx: with Temporal down the receiver answers 503 + Retry-After within the senders'
// deadlines and never a 2xx; once Temporal is back, the sender's redelivery is accepted and processed
// exactly once; a dev server killed right after a 2xx loses none of the events it acknowledged. Runs
// its own dev server (on a SQLite file with `replyflow start`'s settings, so a restart keeps its
// state), never the shared one.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ReceiverHandle } from '../../src/receiver';
import { RETRY_AFTER_SECONDS } from '../../src/receiver/app';
import { connectClient } from '../../src/temporal/client';
import { type DevServer, startDevServer } from '../../src/temporal/dev-server';
import { FakeTarget } from '../support/fake-target';
import { counterValue, metricsOf, post, sandboxRequest, startTestReceiver } from '../support/receiver';
import { database, TEST_ENCRYPTION_KEY } from '../support/servers';
import { testConfig, withWorker } from '../support/system';
import { effectRows } from '../support/workflows';

/** LINE's ack deadline, the shortest of our senders' (Slack: 3 s). */
const LINE_DEADLINE_MS = 2000;

describe('receiver: durable before 2xx (own dev server, stopped and restarted)', function () {
  this.timeout(180_000);
  const config = testConfig();
  const dbFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-durability-')), 'temporal.sqlite');
  let server: DevServer | undefined;
  let receiver: ReceiverHandle;
  const target = new FakeTarget();

  before(async () => {
    await database();
    await target.start();
    server = await startDevServer({ port: 0, dbFile });
    receiver = await startTestReceiver({ config, temporalAddress: server.address });
  });
  after(async () => {
    await receiver?.stop();
    await server?.stop();
    await target.stop();
  });

  const ready = async () => {
    const response = await fetch(`${receiver.url}/readyz`);
    return { status: response.status, body: await response.json() };
  };

  it('answers 503 with Retry-After before the deadline while Temporal is down, then accepts the redelivery and replies once', async () => {
    const port = server!.port;
    const first = sandboxRequest(config);
    assert.equal((await ready()).status, 200);

    await server!.stop();
    server = undefined;
    const before = await metricsOf(receiver);
    // Several deliveries while down, as senders retry: each gets its 503 in time, none a 2xx.
    for (let attempt = 0; attempt < 3; attempt++) {
      const delivery = sandboxRequest(config, {
        eventId: first.eventId,
        conversationId: first.conversationId,
      });
      const sentAt = performance.now();
      const response = await post(receiver, delivery);
      const elapsed = performance.now() - sentAt;
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), String(RETRY_AFTER_SECONDS));
      assert.deepEqual(await response.json(), { error: 'temporarily unavailable, retry later' });
      assert.ok(elapsed < LINE_DEADLINE_MS, `503 took ${Math.round(elapsed)} ms`);
    }
    // Counted by why: Temporal unreachable or too slow to confirm, never the worker or the store.
    const after = await metricsOf(receiver);
    const moved = (reason: string) =>
      counterValue(after, 'replyflow_webhook_unavailable_total', { provider: 'sandbox', reason }) -
      counterValue(before, 'replyflow_webhook_unavailable_total', { provider: 'sandbox', reason });
    assert.equal(moved('temporal_down') + moved('temporal_slow'), 3);
    assert.equal(moved('temporal_refused') + moved('store_down'), 0);
    assert.deepEqual(await ready(), {
      status: 503,
      body: { status: 'unavailable', checks: { temporal: 'down', postgres: 'up', searchAttributes: 'down' } },
    });

    server = await startDevServer({ port, dbFile });
    assert.equal((await ready()).status, 200);
    const redelivery = sandboxRequest(config, {
      eventId: first.eventId,
      conversationId: first.conversationId,
    });
    const accepted = await post(receiver, redelivery);
    assert.equal(accepted.status, 202, 'the first redelivery after the restart is accepted');
    const { workflowId } = (await accepted.json()) as { workflowId: string };
    assert.equal(workflowId, `webhook:sandbox:${first.eventId}`);

    const temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    try {
      const result = await withWorker(
        { address: server.address, config: { ...config, SANDBOX_API_URL: target.url } },
        () => temporal.client.workflow.getHandle(workflowId).result(),
      );
      assert.equal(result.state, 'succeeded');
    } finally {
      await temporal.close();
    }
    const again = await post(receiver, sandboxRequest(config, { eventId: first.eventId }));
    assert.equal(again.status, 200);
    assert.equal(((await again.json()) as { status: string }).status, 'duplicate');

    const [effect] = await effectRows(`chat:sandbox:${first.conversationId}:m1:answer`);
    assert.equal(effect.status, 'succeeded');
    assert.equal(target.sendsFor(effect.id).length, 1, 'the target received exactly one send');
    assert.equal(target.deliveredTo(first.conversationId).length, 1);
  });

  it('loses no acknowledged event when the dev server is SIGKILLed right after a 202 (write-ahead log)', async () => {
    const deliveries = Array.from({ length: 20 }, () => sandboxRequest(config));
    let killed: Promise<void> | undefined;
    const statuses = await Promise.all(
      deliveries.map(async (delivery) => {
        const response = await post(receiver, delivery);
        // The first acknowledgement pulls the plug: commits still in flight are what is at stake.
        if (response.status === 202) killed ??= server!.kill();
        return response.status;
      }),
    );
    await killed;
    const port = server!.port;
    const acknowledged = deliveries.filter((_, i) => statuses[i] === 202);
    assert.ok(acknowledged.length > 0);
    assert.ok(
      statuses.every((s) => s === 202 || s === 503),
      `only 202 or 503: ${statuses}`,
    );
    server = await startDevServer({ port, dbFile });
    const temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    try {
      const missing = [];
      for (const delivery of acknowledged) {
        const workflowId = `webhook:sandbox:${delivery.eventId}`;
        const found = await temporal.client.workflow
          .getHandle(workflowId)
          .describe()
          .then(
            () => true,
            () => false,
          );
        if (!found) missing.push(workflowId);
      }
      assert.deepEqual(missing, [], `${acknowledged.length} acknowledged, these lost`);
    } finally {
      await temporal.close();
    }
  });
});
