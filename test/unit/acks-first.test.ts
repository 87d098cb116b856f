// The gate of a receiver and a worker in one process (src/temporal/acks-first.ts), on a clock the test
// moves: the worker takes new tasks freely while starts are fast, yields while they are slow (no eager
// tasks, a rate that halves to its minimum), and climbs back once they are fast again.
import assert from 'node:assert/strict';
import type { CustomSlotSupplier, SlotInfo, SlotReserveContext } from '@temporalio/worker';
import { AcksFirst } from '../../src/temporal/acks-first';

const ctx = {
  slotType: 'workflow',
  taskQueue: 'q',
  workerIdentity: 'w',
  isSticky: false,
} as SlotReserveContext;

function gate(
  options: {
    workflowSlots?: number;
    minPerSecond?: number;
    maxSlowStartMs?: number;
    busyStarts?: number;
  } = {},
) {
  let now = 0;
  const acks = new AcksFirst({
    slowStartMs: 250,
    workflowSlots: options.workflowSlots ?? 100,
    activitySlots: 100,
    minPerSecond: options.minPerSecond ?? 5,
    maxSlowStartMs: options.maxSlowStartMs ?? 250,
    ...(options.busyStarts !== undefined && { busyStarts: options.busyStarts }),
    manual: true,
    now: () => now,
  });
  const tuner = acks.tuner();
  const workflow = tuner.workflowTaskSlotSupplier as CustomSlotSupplier<SlotInfo>;
  /** Moves the clock by `ms` in the gate's own steps of 100 ms, adjusting at each. */
  const pass = (ms: number) => {
    for (let t = 0; t < ms; t += 100) {
      now += 100;
      acks.adjust();
    }
  };
  const slowStart = () => {
    const settled = acks.startBegan();
    now += 400;
    settled();
  };
  return { acks, workflow, pass, slowStart, tick: (ms: number) => (now += ms) };
}

describe('acks first: the worker yields to slow starts', () => {
  it('hands out eager slots while starts are fast, up to the slot limit', () => {
    const { workflow, acks, tick } = gate({ workflowSlots: 3 });
    const fast = acks.startBegan();
    tick(20);
    fast();
    const permits = [1, 2, 3, 4].map(() => workflow.tryReserveSlot(ctx));
    assert.deepEqual(
      permits.map((p) => p !== null),
      [true, true, true, false],
    );
    workflow.releaseSlot({ permit: permits[0]! });
    assert.notEqual(workflow.tryReserveSlot(ctx), null);
  });

  it('declines eager slots and halves its rate down to the minimum while starts are slow', () => {
    const { workflow, acks, pass, slowStart } = gate();
    slowStart();
    assert.equal(acks.underPressure, true);
    assert.equal(workflow.tryReserveSlot(ctx), null);
    const rates: number[] = [];
    for (let i = 0; i < 12; i++) {
      slowStart();
      pass(100);
      rates.push(acks.perSecond);
    }
    assert.ok(
      rates.every((r, i) => i === 0 || r <= rates[i - 1]!),
      `rates fall: ${rates}`,
    );
    assert.equal(rates.at(-1), 5);
  });

  it('at the first sign of pressure halves what the worker was taking, not the rate it was allowed', () => {
    const { workflow, acks, pass } = gate({ workflowSlots: 1000 });
    // A second of fast starts with the worker taking ten eager tasks each tenth of a second: 100/s.
    for (let i = 0; i < 10; i++) {
      for (let t = 0; t < 10; t++) workflow.releaseSlot({ permit: workflow.tryReserveSlot(ctx)! });
      pass(100);
    }
    assert.ok(acks.perSecond >= 1000, `no limit while starts are fast (${acks.perSecond})`);
    const hung = acks.startBegan();
    pass(300);
    // One tick later the rate is about half of 100/s, where halving the allowed rate would still be 1000.
    const rate = acks.perSecond;
    assert.ok(rate > 5 && rate <= 50, `rate ${rate} after one tick of pressure`);
    hung();
  });

  it('counts a start still in flight past the threshold as pressure', () => {
    const { acks, workflow, tick } = gate();
    const settled = acks.startBegan();
    tick(100);
    assert.equal(acks.underPressure, false);
    tick(200);
    assert.equal(acks.underPressure, true);
    assert.equal(workflow.tryReserveSlot(ctx), null);
    settled();
  });

  it('counts as many starts in flight as busyStarts as pressure, however fast each is, and one fewer not', () => {
    const { acks, workflow, tick } = gate({ busyStarts: 3 });
    const first = acks.startBegan();
    const second = acks.startBegan();
    tick(10);
    assert.equal(acks.underPressure, false);
    const third = acks.startBegan();
    assert.equal(acks.underPressure, true);
    assert.equal(workflow.tryReserveSlot(ctx), null);
    acks.adjust();
    assert.equal(acks.perSecond, 5, 'a worker that took nothing lately goes to its minimum');
    // The third settles fast (20 ms): under the count again and no start slow, but three were in
    // flight at once since the last adjustment, so pressure until the next one.
    tick(10);
    third();
    assert.equal(acks.underPressure, true);
    assert.equal(workflow.tryReserveSlot(ctx), null);
    tick(100);
    acks.adjust();
    assert.equal(acks.underPressure, false, 'two in flight at the adjustment, and no more since');
    assert.notEqual(workflow.tryReserveSlot(ctx), null);
    first();
    second();
  });

  it('counts as pressure at the next adjustment a count of starts in flight that came and went between two', () => {
    const { acks, tick } = gate({ busyStarts: 3 });
    acks.adjust();
    const rate = acks.perSecond;
    // Three in flight for 30 ms, all settled before the adjustment: the count at it is 0.
    const settles = [acks.startBegan(), acks.startBegan(), acks.startBegan()];
    tick(30);
    for (const settled of settles) settled();
    tick(70);
    acks.adjust();
    assert.ok(acks.perSecond < rate, `the rate was cut (${rate} -> ${acks.perSecond})`);
    // Nothing since: the next adjustment climbs again.
    tick(100);
    const cut = acks.perSecond;
    acks.adjust();
    assert.ok(acks.perSecond > cut, `and climbs back once no burst came since (${cut} -> ${acks.perSecond})`);
  });

  it('grants waiting reservations at its minimum rate under pressure, and faster once starts are fast again', async () => {
    const { workflow, acks, pass } = gate({ minPerSecond: 5 });
    // A start that hangs: pressure for as long as it is in flight.
    const settled = acks.startBegan();
    pass(1200);
    assert.equal(acks.perSecond, 5);
    let granted = 0;
    const aborts = Array.from({ length: 40 }, () => new AbortController());
    const reservations = aborts.map((abort) =>
      workflow.reserveSlot(ctx, abort.signal).then(
        () => {
          granted += 1;
        },
        () => {},
      ),
    );
    // Two seconds under pressure: about ten.
    pass(2000);
    await Promise.resolve();
    assert.ok(granted >= 8 && granted <= 12, `granted ${granted} in 2 s at 5/s`);
    const underPressure = granted;
    // Two seconds of fast starts: the rate climbs, and the waiters are let through faster.
    settled();
    pass(2000);
    await Promise.resolve();
    assert.ok(acks.perSecond > 20, `rate ${acks.perSecond} after 2 s without pressure`);
    assert.ok(granted - underPressure > 20, `granted ${granted - underPressure} in the 2 s after`);
    // Aborted reservations are withdrawn, not granted later.
    for (const abort of aborts) abort.abort();
    await Promise.all(reservations);
    const after = granted;
    pass(1000);
    await Promise.resolve();
    assert.equal(granted, after);
  });

  it('under pressure lets a quiet conversation start eagerly, a few a second, and never a busy one', () => {
    const { acks, workflow, tick } = gate();
    // Before the pressure: everything eager; "burst" starts several times.
    for (let i = 0; i < 3; i++) assert.equal(acks.eagerFor('burst'), true);
    tick(1000);
    const hanging = acks.startBegan();
    tick(300);
    assert.equal(acks.underPressure, true);
    assert.equal(acks.eagerFor('burst'), false, 'the busy conversation queues');
    assert.equal(acks.eagerFor('quiet-1'), true);
    // The SDK reserves in the order the starts asked: the burst's three asks, made before the
    // pressure, come first; only the first (then a quiet conversation's) has a pass, the others are
    // declined, and the quiet conversation's pass stays its own.
    const reserved = [1, 2, 3, 4].map(() => workflow.tryReserveSlot(ctx) !== null);
    assert.deepEqual(
      reserved,
      [true, false, false, true],
      'only quiet starts get a slot despite the pressure',
    );
    assert.equal(workflow.tryReserveSlot(ctx), null, 'and only it');
    assert.equal(acks.eagerFor('quiet-2'), true);
    assert.equal(acks.eagerFor('quiet-3'), false, 'two a second at most');
    tick(1000);
    assert.equal(acks.eagerFor('quiet-4'), true);
    // A conversation counts as quiet again 10 s after its last start.
    tick(10_000);
    assert.equal(acks.eagerFor('burst'), true);
    hanging();
  });

  it('gives a quiet conversation a kept slot while starts are fast too, once a burst holds the shared ones', () => {
    const { acks, workflow, tick } = gate({ workflowSlots: 20 });
    const fast = acks.startBegan();
    tick(20);
    fast();
    // A burst's starts ask eagerly (fast starts: no yielding) and take the 16 shared slots.
    const burst = Array.from({ length: 16 }, () => {
      acks.eagerFor('burst');
      return workflow.tryReserveSlot(ctx);
    });
    assert.equal(burst.filter((p) => p !== null).length, 16);
    assert.equal(acks.underPressure, false);
    assert.equal(acks.eagerFor('burst'), true);
    assert.equal(workflow.tryReserveSlot(ctx), null, 'the burst has no slot left');
    assert.equal(acks.eagerFor('quiet-1'), true);
    assert.notEqual(workflow.tryReserveSlot(ctx), null, 'a new conversation still starts eagerly');
  });

  it('forgets an eager ask the SDK never reserved (its start failed), so it pairs with no later start', () => {
    const { acks, workflow, tick } = gate();
    assert.equal(acks.eagerFor('burst'), true, 'asked while fast; the start then fails before Temporal');
    const hanging = acks.startBegan();
    tick(2_500);
    assert.equal(acks.underPressure, true);
    assert.equal(acks.eagerFor('quiet-1'), true);
    assert.notEqual(workflow.tryReserveSlot(ctx), null, "the quiet start's reservation is its own");
    hanging();
  });

  it('keeps a few slots that only quiet conversations take, so a burst filling the rest cannot queue them', () => {
    const { acks, workflow, tick } = gate({ workflowSlots: 20 });
    const fast = acks.startBegan();
    tick(20);
    fast();
    // While starts are fast a burst's eager starts take every slot the others share: 20 less 4.
    const burst = Array.from({ length: 20 }, () => workflow.tryReserveSlot(ctx));
    assert.equal(burst.filter((p) => p !== null).length, 16);
    const hanging = acks.startBegan();
    tick(300);
    assert.equal(acks.underPressure, true);
    assert.equal(acks.eagerFor('quiet-1'), true);
    const quiet = workflow.tryReserveSlot(ctx);
    assert.notEqual(quiet, null, 'a quiet start gets one of the kept slots');
    assert.equal(workflow.tryReserveSlot(ctx), null, 'nothing else does');
    hanging();
    // Once starts are fast again (a second later, tokens to spare) the others still stop at their share.
    acks.adjust();
    tick(1000);
    acks.adjust();
    assert.equal(acks.underPressure, false);
    assert.equal(workflow.tryReserveSlot(ctx), null, 'the 16 shared slots are taken');
    workflow.releaseSlot({ permit: burst[0]! });
    assert.notEqual(workflow.tryReserveSlot(ctx), null, 'a released shared slot is taken again');
    // The quiet slot, released, is kept for quiet ones again: the others' share stays 16.
    workflow.releaseSlot({ permit: quiet! });
    assert.equal(workflow.tryReserveSlot(ctx), null);
  });

  it('against a distant Temporal counts as slow only three times its fastest starts, up to the maximum', () => {
    const { acks, tick } = gate({ maxSlowStartMs: 750 });
    const start = (ms: number) => {
      const settled = acks.startBegan();
      tick(ms);
      settled();
    };
    for (let i = 0; i < 5; i++) start(200);
    acks.adjust();
    assert.equal(acks.slowStartMs, 600);
    start(400);
    assert.equal(acks.underPressure, false, 'twice its fastest is its usual pace');
    start(700);
    assert.equal(acks.underPressure, true);
    const farther = gate({ maxSlowStartMs: 750 });
    const settled = farther.acks.startBegan();
    farther.tick(400);
    settled();
    assert.equal(farther.acks.slowStartMs, 750, 'never above the maximum');
  });
  it('on close asks for no more eager starts and waits for the starts in flight to settle', async () => {
    const { acks } = gate();
    const first = acks.startBegan();
    const second = acks.startBegan();
    let closed = false;
    const closing = acks.close(60_000).then(() => {
      closed = true;
    });
    assert.equal(acks.eagerFor('quiet-conversation'), false);
    first();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(closed, false, 'one start still in flight');
    second();
    await closing;
    assert.equal(closed, true);
  });

  it('closes at once with no start in flight, and at its timeout with one that never settles', async () => {
    await gate().acks.close(60_000);
    const { acks } = gate();
    acks.startBegan();
    const began = Date.now();
    await acks.close(50);
    assert.ok(Date.now() - began >= 45, 'waited for the timeout');
  });
});
