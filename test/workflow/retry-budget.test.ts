// A retry budget spent while the last attempt's outcome is unknown (its row still `sending`) is an
// unknown outcome — looked up or held for two people — never a plain failure that one person could
// reprocess into a second reply.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createEffectsRepository, type EffectsRepository } from '../../src/db/effects';
import type { Pool } from '../../src/db/pool';
import { FakeTarget } from '../support/fake-target';
import { database, timeSkipping } from '../support/servers';
import { FAST_POLICY, sandboxEvent, startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows, startEvent, waitForState } from '../support/workflows';

/** Effects whose next `settleUnknown` fails, as if the worker died before recording the outcome. */
function effectsLosingTheUnknownRecord(pool: Pool): EffectsRepository & { fired: boolean } {
  const effects = createEffectsRepository(pool);
  const losing = {
    ...effects,
    fired: false,
    async settle(...args: Parameters<EffectsRepository['settle']>) {
      if (!losing.fired && args[2].step === 'settleUnknown') {
        losing.fired = true;
        throw new Error('connection terminated');
      }
      return effects.settle(...args);
    },
  };
  return losing;
}

describe('retry budget spent on an unknown outcome (time-skipping server)', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let fake: FakeTarget;
  let worker: { stop(): Promise<void> };
  let effects: ReturnType<typeof effectsLosingTheUnknownRecord>;
  const config = testConfig();

  before(async () => {
    env = await timeSkipping();
    fake = await new FakeTarget().start();
    effects = effectsLosingTheUnknownRecord((await database()).pool);
    worker = await startTestWorker({
      address: env.address,
      config: { ...config, SANDBOX_API_URL: fake.url },
      deps: { effects, policy: { ...FAST_POLICY, maxAttempts: 1 } },
    });
  });
  after(async () => {
    await worker?.stop();
    await fake?.stop();
  });

  it('holds, not fails, an effect whose only attempt wrote and died before recording the outcome', async () => {
    const conv = uniqueId('c');
    fake.next('accept-then-drop');
    const handle = await startEvent(
      env.client,
      config.TEMPORAL_TASK_QUEUE,
      sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind' }),
    );
    const held = await waitForState(handle, 'held');
    assert.ok(effects.fired, 'the attempt failed to record its unknown outcome');
    // Only the lost record leads here: the activity failed, its budget was spent, and the row still
    // said `sending`. An attempt that recorded its outcome would hold with the target's own error.
    assert.match(
      held.lastError ?? '',
      /^retry budget spent while the last attempt's outcome is unknown: connection terminated/,
    );
    assert.equal(held.lastErrorClass, 'unknown');
    assert.match(held.recommendedAction ?? '', /mark-sent .* or resend \(needs approval\)/);
    const [row] = await effectRows(`chat:sandbox:${conv}:m1:answer`);
    assert.equal(row.status, 'held');
    assert.equal(fake.sendsFor(row.id).length, 1);
    await handle.terminate('test done');
  });
});
