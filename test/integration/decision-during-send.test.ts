// An operator decision that arrives while the send runs, on the real dev server, PostgreSQL and HTTP.
// The send is a local activity inside the workflow task (the `local-sends` patch), so the workflow
// reads the decision only once that task is over: the send has settled, and the decision is judged
// against the state it settled in; it never interrupts the send. (The time-skipping test server
// cannot show this: it skips past the task's timeout while the send is held.)
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import { operatorDecides, staffOperators } from '../support/operators';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { FAST_POLICY, sandboxEvent, testConfig, uniqueId, withWorker } from '../support/system';
import { auditRows, startEvent } from '../support/workflows';

describe('a decision that arrives while the send runs (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(120_000);
  let fake: FakeTarget;
  let address: string;
  let temporal: TemporalClient;
  let client: Client;
  let config: Config;

  before(async () => {
    const [server] = await Promise.all([devServer(), database()]);
    address = server.address;
    fake = await new FakeTarget().start();
    temporal = await connectClient(address, 'default', TEST_ENCRYPTION_KEY);
    client = temporal.client;
    config = testConfig({ SANDBOX_API_URL: fake.url });
  });
  const requestsFor = (conversationId: string) =>
    fake.requests.filter((r) => r.method === 'POST' && r.conversationId === conversationId).length;

  after(async () => {
    await temporal?.close();
    await fake?.stop();
  });

  it('waits for the send, then is refused with the state it found; the reply goes out once', async () => {
    const conversationId = uniqueId('c');
    // The target answers after 9 s: longer than the worker's heartbeat of the workflow task (8 s of
    // its 10 s timeout), shorter than the lease (12 s). The send succeeds.
    fake.next({ delayMs: 9_000 });
    const policy = { ...FAST_POLICY, sendTimeoutMs: 13_000 };
    const { asker } = await staffOperators();
    const { early, inFlightWhenSent, result, handle } = await withWorker(
      { address, config, deps: { policy } },
      async () => {
        const handle = await startEvent(
          client,
          config.TEMPORAL_TASK_QUEUE,
          sandboxEvent({ conversationId, messageId: 'm1', target: 'sandbox-blind' }),
        );
        await eventually('the request reached the target', () => requestsFor(conversationId) === 1);
        // Bound to a hold by hand: the workflow answers no query while its task runs the send.
        const deciding = operatorDecides(
          handle,
          'resolve',
          { action: 'discard', reason: 'too soon' },
          'whatever-it-will-be:1',
        );
        // Sent while the target still holds its answer.
        const inFlightWhenSent = fake.requests.find((r) => r.conversationId === conversationId)?.answeredAt;
        return { early: await deciding, inFlightWhenSent, result: await handle.result(), handle };
      },
    );
    assert.equal(inFlightWhenSent, undefined, 'the decision was sent while the send ran');
    assert.equal(early, 'Rejected: nothing awaits a decision in state succeeded');
    assert.equal(result.state, 'succeeded', 'the decision did not interfere with the send');
    const audit = (await auditRows(handle.workflowId)).map((r) => [
      r.actor,
      r.action,
      r.state_before,
      r.state_after,
      r.result,
    ]);
    assert.deepEqual(audit, [
      [
        asker.account.name,
        'discard',
        'succeeded',
        'succeeded',
        'rejected: nothing awaits a decision in state succeeded',
      ],
    ]);
    assert.equal(requestsFor(conversationId), 1, 'one request');
    assert.equal(fake.deliveredTo(conversationId).length, 1, 'one reply');
  });
});
