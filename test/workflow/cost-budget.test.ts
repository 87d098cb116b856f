// What an event costs Temporal, held to the budget docs/benchmarks.md states, from the recorded
// histories the replay test proves the current code still produces: a change that makes the happy
// path dearer (another workflow task, activity, signal, timer or upsert) fails here, not in a bill.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type HistoryCost, historyCost, transactions } from '../support/history-cost';

const HISTORIES = path.resolve(__dirname, '..', 'histories');
const costOf = (name: string): HistoryCost =>
  historyCost(JSON.parse(readFileSync(path.join(HISTORIES, `${name}.json`), 'utf8')).history);

/** The budget per path (docs/benchmarks.md, "What an event costs"). */
const BUDGET: Record<string, Partial<HistoryCost> & { transactions: number }> = {
  // One task: admits, claims, answers (the built-in FAQ), sends and records the outcome, each a
  // local activity; the workflow completes in it.
  succeeded: {
    workflowTasks: 1,
    activityTasks: 0,
    signalsSent: 0,
    signalsReceived: 0,
    timers: 0,
    starts: 1,
    // The SDK's TemporalChangeVersion for the one patch, then ours with the outcome.
    upserts: 2,
    transactions: 2,
  },
  // A 429 with Retry-After: the send's retry runs in the same task (a local activity's retry).
  retried: { workflowTasks: 1, activityTasks: 0, timers: 0, transactions: 2 },
  duplicate: { workflowTasks: 1, activityTasks: 0, signalsSent: 0, timers: 0, upserts: 2, transactions: 2 },
  stale: { workflowTasks: 1, activityTasks: 0, signalsSent: 0, timers: 0, upserts: 2, transactions: 2 },
};

describe('what an event costs Temporal, from recorded histories (docs/benchmarks.md)', () => {
  for (const [name, budget] of Object.entries(BUDGET)) {
    it(`keeps the ${name} path within its budget`, () => {
      const cost = costOf(name);
      for (const [key, limit] of Object.entries(budget)) {
        const actual = key === 'transactions' ? transactions(cost) : cost[key as keyof HistoryCost];
        assert.ok(actual <= limit, `${name}: ${key} ${actual} > budget ${limit}`);
      }
    });
  }

  it('costs a fraction of what it cost before sends were ordered by the effects table', () => {
    const before = costOf('v3-succeeded');
    const now = costOf('succeeded');
    assert.ok(
      transactions(now) * 2 <= transactions(before),
      `${transactions(now)} vs ${transactions(before)}`,
    );
    assert.ok(now.historyEvents * 2 <= before.historyEvents);
  });

  it('costs half of what it cost while the send was an activity task of its own', () => {
    const before = costOf('v4-succeeded');
    const now = costOf('succeeded');
    assert.ok(
      transactions(now) * 2 <= transactions(before),
      `${transactions(now)} vs ${transactions(before)}`,
    );
    assert.ok(now.cloudActions < before.cloudActions, `${now.cloudActions} vs ${before.cloudActions}`);
  });

  it('in a conversation with a send close ahead, costs the same: the later send waits inside its attempt', () => {
    const happy = transactions(costOf('succeeded'));
    for (const name of ['contended-earlier', 'contended-later']) {
      const cost = costOf(name);
      assert.equal(transactions(cost), happy, `${name}: ${transactions(cost)} transactions`);
      assert.equal(cost.signalsSent + cost.signalsReceived + cost.timers, 0, `${name}: no signal, no timer`);
    }
  });

  it('further back in a conversation, waits to be told: one signal, sent by the activity that settled', () => {
    const happy = transactions(costOf('succeeded'));
    const teller = costOf('tells-next-in-line');
    const told = costOf('told-its-turn');
    // The settling send activity signals the next in line itself: the teller's workflow pays nothing.
    assert.equal(teller.signalsSent, 0);
    assert.equal(transactions(teller), happy, `teller: ${transactions(teller)} transactions`);
    assert.equal(told.signalsReceived, 1);
    assert.equal(
      told.activityTasks,
      0,
      'the send that found the turn taken and the one that sent: both local',
    );
    assert.ok(transactions(teller) + transactions(told) <= 6, `${transactions(teller) + transactions(told)}`);
  });
});
