// The `sending` lease against stalled send attempts, on the real dev server, PostgreSQL and HTTP. No
// production hook: the worker gets an effects repository (src/db/effects.ts) whose named steps can be
// held (a paused worker, seen from the database) until the test opens them, and the fake target shows
// what was written.
import assert from 'node:assert/strict';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Config } from '../../src/config';
import { createEffectsRepository, type EffectsRepository, type LeaseResult } from '../../src/db/effects';
import type { Pool } from '../../src/db/pool';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import type { handleEvent } from '../../workflows';

import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import { operatorDecides, secondOperatorApproves } from '../support/operators';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { FAST_POLICY, sandboxEvent, testConfig, uniqueId, withWorker } from '../support/system';
import { effectRows, startEvent, waitForState } from '../support/workflows';

type Args = unknown[];
type Step = keyof EffectsRepository;

/**
 * Holds the first call of one repository step until `open(args)` resolves: either before the step
 * reaches PostgreSQL (`before`: for takeLease that holds the whole transaction, including
 * PostgreSQL's now()), or its answer on the way back (`answer`: the step ran, the worker paused
 * before reading the result).
 */
class StepGate {
  private caught = false;
  private markReached!: (args: Args) => void;
  /** Resolves with the held call's arguments (the effect id first) once the gate caught it. */
  readonly reached = new Promise<Args>((resolve) => {
    this.markReached = resolve;
  });

  constructor(
    readonly phase: 'before' | 'answer',
    readonly step: Step,
    readonly open: (args: Args) => Promise<void>,
  ) {}

  claim(step: Step, args: Args): boolean {
    if (this.caught || step !== this.step) return false;
    this.caught = true;
    this.markReached(args);
    return true;
  }
}

/** What a repository step answered, in the order the answers came. */
type Answer = { step: Step; result: unknown };

/** The effects repository on `pool`, with its steps passing through `gates` and answering into `answers`. */
function gatedEffects(pool: Pool, gates: StepGate[], answers: Answer[]): EffectsRepository {
  const effects = createEffectsRepository(pool);
  return Object.fromEntries(
    Object.entries(effects).map(([step, fn]) => [
      step,
      async (...args: Args) => {
        const gate = gates.find((g) => g.claim(step as Step, args));
        if (gate?.phase === 'before') await gate.open(args);
        const result = await (fn as (...a: Args) => Promise<unknown>)(...args);
        answers.push({ step: step as Step, result });
        if (gate?.phase === 'answer') await gate.open(args);
        return result;
      },
    ]),
  ) as EffectsRepository;
}

const isLeaseHeld = (result: unknown) => (result as LeaseResult).kind === 'lease-held';

/** Polls an observation (a row, a workflow's description) until it holds. */
const until = (what: string, holds: () => Promise<boolean>) =>
  eventually(what, holds, { timeoutMs: 60_000 }).then(() => undefined);

async function effectSays(effectId: unknown, condition: string): Promise<boolean> {
  const { pool } = await database();
  const { rows } = await pool.query<{ holds: boolean }>(
    `SELECT (${condition}) AS holds FROM effects WHERE id = $1`,
    [effectId],
  );
  return rows[0]?.holds === true;
}

describe('the sending lease against stalled send attempts (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(120_000);
  let fake: FakeTarget;
  let address: string;
  let realPool: Pool;
  let temporal: TemporalClient;
  let client: Client;
  let config: Config;
  let answers: Answer[];

  before(async () => {
    const [server, db] = await Promise.all([devServer(), database()]);
    address = server.address;
    realPool = db.pool;
    fake = await new FakeTarget().start();
    temporal = await connectClient(address, 'default', TEST_ENCRYPTION_KEY);
    client = temporal.client;
  });
  after(async () => {
    await temporal?.close();
    await fake?.stop();
  });
  beforeEach(() => {
    config = testConfig({ SANDBOX_API_URL: fake.url });
    answers = [];
  });

  /** A worker whose effect steps pass through `gates`, with a lease of `sendTimeoutMs` − 1 s. */
  const runWorker = <T>(gates: StepGate[], sendTimeoutMs: number, fn: () => Promise<T>) =>
    withWorker(
      {
        address,
        config,
        deps: { effects: gatedEffects(realPool, gates, answers), policy: { ...FAST_POLICY, sendTimeoutMs } },
      },
      fn,
    );

  const start = (conversationId: string, target: 'sandbox-lookup' | 'sandbox-blind') =>
    startEvent(client, config.TEMPORAL_TASK_QUEUE, sandboxEvent({ conversationId, messageId: 'm1', target }));

  /** Resend after held: asked by one person, approved by another. */
  const approvedResend = async (handle: WorkflowHandle<typeof handleEvent>) => {
    await operatorDecides(handle, 'resolve', { action: 'resend', reason: 'nothing arrived' });
    await waitForState(handle, 'awaiting_approval');
    const approvedAt = Date.now();
    await secondOperatorApproves(handle, 'checked the conversation');
    return approvedAt;
  };

  const effectOf = async (conversationId: string) =>
    (await effectRows(`chat:sandbox:${conversationId}:m1:answer`))[0];

  it('an attempt paused before its lease check until the lease expired does not write; the retry looks up, then holds', async () => {
    const conversationId = uniqueId('c');
    const stalled = new StepGate(
      'before',
      'leaseLeft',
      // Open once PostgreSQL says the lease is over: the check then runs with nothing left.
      ([effectId]) => until('the lease expired', () => effectSays(effectId, 'lease_expires_at <= now()')),
    );
    const { held, heldRow, sendsWhenHeld, approvedAt, result } = await runWorker(
      [stalled],
      3000,
      async () => {
        const handle = await start(conversationId, 'sandbox-lookup');
        const held = await waitForState(handle, 'held', 60_000);
        const heldRow = await effectOf(conversationId);
        const sendsWhenHeld = fake.sendsFor(heldRow.id).length;
        const approvedAt = await approvedResend(handle);
        return { held, heldRow, sendsWhenHeld, approvedAt, result: await handle.result() };
      },
    );
    const [effectId] = await stalled.reached;
    assert.equal(held.lastErrorClass, 'unknown', 'the retry found the lease expired: outcome unknown');
    assert.equal(heldRow.status, 'held');
    assert.equal(heldRow.attempts, 1, 'only the stalled attempt ever took a lease');
    assert.equal(sendsWhenHeld, 0, 'the stalled attempt wrote nothing');
    assert.equal(
      fake.lookups.filter((l) => l === effectId).length,
      3,
      'looked up at lease expiry, after the consistency delay, and again before the approved resend',
    );
    assert.equal(result.state, 'succeeded');
    const sends = fake.sendsFor(heldRow.id);
    assert.equal(sends.length, 1, 'one request in all: the approved resend');
    assert.ok(sends[0]!.at >= approvedAt);
    assert.equal(fake.deliveredTo(conversationId).length, 1);
  });

  it('an attempt whose lease-check answer comes back after the lease expired does not write either', async () => {
    const conversationId = uniqueId('c');
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    // The check runs while the lease is live; the worker pauses before reading its answer, and wakes
    // only after the retry judged the outcome unknown, the workflow held it, and an approved resend
    // delivered the reply: the story model/send.pml's lease-less variant tells, which ended in two
    // replies without the lease.
    const stalled = new StepGate('answer', 'leaseLeft', () => woken);
    const { result, approvedAt } = await runWorker([stalled], 3000, async () => {
      const handle = await start(conversationId, 'sandbox-blind');
      await waitForState(handle, 'held', 60_000);
      const approvedAt = await approvedResend(handle);
      const result = await handle.result();
      wake();
      return { result, approvedAt };
    });
    // The worker drains its running attempts before it stops: the stalled one has finished too.
    const row = await effectOf(conversationId);
    assert.equal(result.state, 'succeeded');
    const sends = fake.sendsFor(row.id);
    assert.equal(sends.length, 1, 'one request in all: the approved resend');
    assert.ok(sends[0]!.at >= approvedAt);
    assert.equal(fake.deliveredTo(conversationId).length, 1);
    assert.equal(row.attempts, 2, 'the stalled lease and the resend');
  });

  it('a retry that finds a live lease waits for it instead of sending', async () => {
    const conversationId = uniqueId('c');
    // Attempt 2's takeLease is held until attempt 1 holds a live lease; attempt 1 took it late,
    // having paused before its own takeLease until Temporal had started attempt 2 (the send is a
    // local activity: the worker timed attempt 1 out and retried it, as the server does an activity).
    const retry: StepGate = new StepGate('before', 'takeLease', ([effectId]) =>
      until('the first attempt holds a live lease', () =>
        effectSays(effectId, `status = 'sending' AND lease_attempt = 1 AND lease_expires_at > now()`),
      ),
    );
    const firstTake = new StepGate('before', 'takeLease', async () => {
      await retry.reached;
    });
    // Attempt 1 writes only once attempt 2 was refused: it found the lease held, and waits for it.
    const leaseHeld = () => answers.some((a) => a.step === 'takeLease' && isLeaseHeld(a.result));
    const firstCheck = new StepGate('before', 'leaseLeft', () =>
      until('the retry found the lease held', async () => leaseHeld()),
    );
    const result = await runWorker([firstTake, retry, firstCheck], 4000, async () =>
      (await start(conversationId, 'sandbox-blind')).result(),
    );
    const row = await effectOf(conversationId);
    assert.ok(leaseHeld());
    assert.deepEqual(
      answers.filter((a) => a.step === 'takeLease').map((a) => (a.result as LeaseResult).kind),
      ['lease', 'lease-held', 'succeeded'],
      'attempt 1 took the lease, attempt 2 found it held, the attempt after it found the reply recorded',
    );
    assert.equal(result.state, 'succeeded', 'the attempt after the lease found the reply recorded');
    assert.equal(row.status, 'succeeded');
    assert.equal(row.attempts, 1, 'the retries never took a lease of their own');
    assert.equal(fake.sendsFor(row.id).length, 1, 'one request: the lease owner’s');
    assert.equal(fake.deliveredTo(conversationId).length, 1);
  });

  it('holds, not fails, when the retry budget ran out on an attempt that may have written', async () => {
    const conversationId = uniqueId('c');
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    // The target commits the reply; the worker pauses before recording it, past its timeout, and with
    // one attempt allowed Temporal gives up. The row still says `sending`: the last attempt may have
    // written, and a blind target cannot be asked, so the effect is held for people, not parked as a
    // failure one person could reprocess into a second reply.
    const recording = new StepGate('before', 'recordSuccess', () => woken);
    const policy = { ...FAST_POLICY, sendTimeoutMs: 3000, maxAttempts: 1 };
    const { held, result } = await withWorker(
      { address, config, deps: { effects: gatedEffects(realPool, [recording], answers), policy } },
      async () => {
        const handle = await start(conversationId, 'sandbox-blind');
        const held = await waitForState(handle, 'held', 60_000);
        // The operator looks at the conversation, finds the reply, and says so.
        const [reply] = fake.deliveredTo(conversationId);
        await operatorDecides(handle, 'resolve', {
          action: 'mark-sent',
          reason: 'the reply is in the conversation',
          externalId: String(reply!.id),
        });
        const result = await handle.result();
        wake();
        return { held, result };
      },
    );
    assert.match(held.recommendedAction ?? '', /cannot be asked/);
    assert.equal(result.state, 'succeeded');
    const row = await effectOf(conversationId);
    assert.equal(row.status, 'succeeded');
    assert.equal(fake.sendsFor(row.id).length, 1, 'no blind second request');
    assert.equal(fake.deliveredTo(conversationId).length, 1);
  });
});
