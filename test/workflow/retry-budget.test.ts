// A retry budget spent while the last attempt's outcome is unknown (its row still `sending`) is an
// unknown outcome — looked up or held for two people — never a plain failure that one person could
// reprocess into a second reply.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool';
import { FakeTarget } from '../helpers/fake-target';
import { database, timeSkipping } from '../helpers/servers';
import { FAST_POLICY, sandboxEvent, startTestWorker, testConfig, uniqueId } from '../helpers/system';
import { effectRows, startEvent, waitForState } from '../helpers/workflows';

/** A pool whose next write of an `unknown` result fails, as if the worker died before recording it. */
function poolLosingTheUnknownRecord(pool: Pool): Pool {
  let armed = true;
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === 'query') {
        return (text: unknown, ...rest: unknown[]) => {
          if (
            armed &&
            typeof text === 'string' &&
            text.includes("status = 'unknown', lease_expires_at = now()")
          ) {
            armed = false;
            return Promise.reject(new Error('connection terminated'));
          }
          return (target.query as (...a: unknown[]) => unknown)(text, ...rest);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('retry budget spent on an unknown outcome (time-skipping server)', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let fake: FakeTarget;
  let worker: { stop(): Promise<void> };
  const config = testConfig();

  before(async () => {
    env = await timeSkipping();
    fake = await new FakeTarget().start();
    const { pool } = await database();
    worker = await startTestWorker({
      address: env.address,
      config: { ...config, SANDBOX_API_URL: fake.url },
      deps: { pool: poolLosingTheUnknownRecord(pool), policy: { ...FAST_POLICY, maxAttempts: 1 } },
    });
  });
  after(async () => {
    await worker?.stop();
    await fake?.stop();
  });

  it('holds the effect instead of failing it', async () => {
    const conv = uniqueId('c');
    fake.next('accept-then-drop');
    const handle = await startEvent(
      env.client,
      config.TEMPORAL_TASK_QUEUE,
      sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind' }),
    );
    const held = await waitForState(handle, 'held');
    assert.equal(held.lastErrorClass, 'unknown');
    assert.match(held.recommendedAction ?? '', /mark-sent .* or resend \(needs approval\)/);
    const [row] = await effectRows(`chat:sandbox:${conv}:m1:answer`);
    assert.equal(row.status, 'held');
    assert.equal(fake.sendsFor(row.id).length, 1);
    await handle.terminate('test done');
  });
});
