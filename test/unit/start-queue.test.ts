// The receiver's queue of event starts (src/receiver/start-queue.ts): a few at Temporal at once, the
// rest in order (a conversation holding none first), and a delivery that waited too long is refused
// having sent nothing.
import assert from 'node:assert/strict';
import { StartTurnTimeoutError } from '../../src/receiver/errors';
import { StartQueue } from '../../src/receiver/start-queue';

/** A start the test finishes when it wants, and whether it began. */
function heldStart() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const start = { began: false, finish, run: async () => {} };
  start.run = async () => {
    start.began = true;
    await done;
  };
  return start;
}

describe('the start queue: a few starts at Temporal at once, the rest wait their turn', () => {
  it('runs `limit` starts at once and the next in the order they came as each finishes', async () => {
    const queue = new StartQueue(2);
    const starts = [heldStart(), heldStart(), heldStart(), heldStart()];
    const runs = starts.map((s) => queue.run(10_000, s.run));
    await Promise.resolve();
    assert.deepEqual(
      starts.map((s) => s.began),
      [true, true, false, false],
    );
    assert.equal(queue.waiting, 2);
    starts[1]!.finish();
    await runs[1];
    assert.deepEqual(
      starts.map((s) => s.began),
      [true, true, true, false],
      'the oldest waiter goes next',
    );
    for (const s of starts) s.finish();
    await Promise.all(runs);
    assert.equal(queue.waiting, 0);
    // Every place is free again: as many new starts as the limit begin at once.
    const again = [heldStart(), heldStart()];
    const more = again.map((s) => queue.run(10_000, s.run));
    await Promise.resolve();
    assert.deepEqual(
      again.map((s) => s.began),
      [true, true],
    );
    for (const s of again) s.finish();
    await Promise.all(more);
  });

  it('gives a freed place to a conversation holding none before the rest of a burst in another', async () => {
    const queue = new StartQueue(2);
    const burst = [heldStart(), heldStart(), heldStart(), heldStart()];
    const runs = burst.map((s) => queue.run(10_000, s.run, 'T1:C-burst'));
    const quiet = heldStart();
    runs.push(queue.run(10_000, quiet.run, 'T2:C-quiet'));
    await Promise.resolve();
    assert.equal(queue.waiting, 3);
    burst[0]!.finish();
    await runs[0];
    assert.equal(quiet.began, true, 'the other conversation went before the burst waiting ahead of it');
    assert.deepEqual(
      burst.map((s) => s.began),
      [true, true, false, false],
    );
    quiet.finish();
    await runs[4];
    assert.deepEqual(
      burst.map((s) => s.began),
      [true, true, true, false],
      'then the burst again, in the order it came',
    );
    for (const s of burst) s.finish();
    await Promise.all(runs);
    assert.equal(queue.waiting, 0);
  });

  it('refuses a delivery whose turn did not come in time, without running its start', async () => {
    const queue = new StartQueue(1);
    const busy = heldStart();
    const running = queue.run(10_000, busy.run);
    const late = heldStart();
    await assert.rejects(queue.run(20, late.run), StartTurnTimeoutError);
    assert.equal(late.began, false, 'nothing was sent for it');
    assert.equal(queue.waiting, 0);
    // The refused waiter left no hole: the next one runs once the place frees.
    const next = heldStart();
    const waitingNext = queue.run(10_000, next.run);
    busy.finish();
    await running;
    await Promise.resolve();
    assert.equal(next.began, true);
    next.finish();
    await waitingNext;
  });

  it('frees the place of a start that failed', async () => {
    const queue = new StartQueue(1);
    await assert.rejects(
      queue.run(10_000, async () => {
        throw new Error('refused');
      }),
      /refused/,
    );
    const next = heldStart();
    const run = queue.run(10, next.run);
    await Promise.resolve();
    assert.equal(next.began, true, 'it did not wait');
    next.finish();
    await run;
  });
});
