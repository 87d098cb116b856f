// A delivery that found no place among WEBHOOK_START_CONCURRENCY is refused at half its deadline
// having sent nothing, and its 503 is counted as `temporal_queued`, apart from a start Temporal itself
// did not confirm (`temporal_slow`): operators and bench:system tell the two apart. The real starter
// on the dev server, its one place held by a start that does not finish.
import assert from 'node:assert/strict';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { unavailableReason } from '../../src/receiver/app';
import { DeadlineCalls } from '../../src/receiver/deadline-calls';
import { TemporalUnavailableError } from '../../src/receiver/errors';
import { temporalEventStarter } from '../../src/receiver/start-event';
import { StartQueue } from '../../src/receiver/start-queue';
import { connectClient, payloadCodec, type TemporalClient } from '../../src/temporal/client';
import { devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { sandboxEvent, uniqueId } from '../support/system';

const DEADLINE_MS = 400;

describe('a start that waited for its turn (dev server)', function () {
  this.timeout(60_000);
  let temporal: TemporalClient;
  let client: Client;

  before(async () => {
    temporal = await connectClient((await devServer()).address, 'default', TEST_ENCRYPTION_KEY);
    client = new Client({ connection: temporal.connection, namespace: 'default' });
  });
  after(async () => {
    await temporal?.close();
  });

  it('is refused at half the deadline with nothing started, counted temporal_queued; the next turn starts it', async () => {
    const queue = new StartQueue(1);
    const starter = temporalEventStarter({
      client,
      calls: new DeadlineCalls(temporal.connection, false),
      taskQueue: uniqueId('q-'),
      deadlineMs: DEADLINE_MS,
      queue,
      inputCodec: payloadCodec(TEST_ENCRYPTION_KEY, {}, { refuseUnencrypted: true }),
    });
    let finishHeld!: () => void;
    const held = queue.run(60_000, () => new Promise<void>((resolve) => (finishHeld = resolve)));
    const event = sandboxEvent({ conversationId: uniqueId('c') });

    const began = performance.now();
    const refusal = await starter.start(event).then(
      () => assert.fail('a start without a place was accepted'),
      (err: unknown) => err as Error,
    );
    const waited = performance.now() - began;
    assert.ok(refusal instanceof TemporalUnavailableError, String(refusal));
    assert.equal(unavailableReason(refusal), 'temporal_queued');
    assert.ok(
      waited >= DEADLINE_MS / 2 - 5,
      `it waited for its turn: refused after ${Math.round(waited)} ms`,
    );
    await assert.rejects(client.workflow.getHandle(event.workflowId).describe(), WorkflowNotFoundError);

    finishHeld();
    await held;
    assert.equal(await starter.start(event), 'accepted', 'the redelivery finds the place free');
    const handle = client.workflow.getHandle(event.workflowId);
    assert.equal((await handle.describe()).status.name, 'RUNNING');
    await handle.terminate('test done: no worker polls its task queue');
  });
});
