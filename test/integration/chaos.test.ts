// The chaos run (bench/chaos.ts) at CI size: the whole system as processes with its own Temporal
// dev server and PostgreSQL (both restarted once), duplicated webhooks from a separate sender, SIGKILLs
// of workers (one with a committed send in flight) and of the `replyflow start` process (while a
// workflow task it started eagerly is in flight) and a fault of each kind armed on the target. Nothing
// acknowledged may be lost, nothing may be delivered twice, and every held item must be explained.
import assert from 'node:assert/strict';
import { formatInjectorLog, formatReport, mustBeZero } from '../../bench/chaos/report';
import { type ChaosResult, DEFAULT_CHAOS, runChaos } from '../../bench/chaos/run';

describe('chaos run at CI size (faults injected, system restarted under load)', function () {
  this.timeout(600_000);
  let result: ChaosResult;
  const progress: string[] = [];

  before(async () => {
    result = await runChaos({
      ...DEFAULT_CHAOS,
      events: 60,
      dup: 3,
      ratePerSecond: 3,
      laterMaxMs: 15_000,
      faultsPerKind: 1,
      inflightKills: 1,
      killEveryMs: 25_000,
      quietTimeoutMs: 5 * 60_000,
      seed: 8,
      log: (line) => progress.push(line),
    });
  });

  after(() => {
    // A run at this size takes about a minute; when one takes much longer, say where the time went
    // (the run's own timeline), since nothing fails for it.
    if (result && result.elapsedMs > 150_000)
      console.log(
        `      chaos run took ${Math.round(result.elapsedMs / 1000)} s:\n${progress.join('\n')}\n${formatInjectorLog(result.report.injector)}`,
      );
  });

  const explainRun = () =>
    `${formatReport(result.report, 'chaos run')}\n\ninjector log:\n${formatInjectorLog(result.report.injector)}\n\n${progress.join('\n')}`;

  it('acknowledges every event the senders delivered', () => {
    assert.equal(result.report.acked, result.report.sent, explainRun());
    assert.equal(result.report.workflows, result.report.sent, explainRun());
  });

  it('injected what it promised: a worker kill, a replyflow start kill, both restarts and every fault', () => {
    const kinds = result.report.injector.map((a) => a.kind);
    assert.ok(kinds.includes('kill-in-flight') || kinds.includes('kill-worker'), explainRun());
    assert.ok(
      result.report.injector.some((a) => a.kind === 'kill-combined' && a.eagerWorkflowId),
      explainRun(),
    );
    assert.ok(kinds.includes('restart-temporal'), explainRun());
    assert.ok(kinds.includes('restart-postgres'), explainRun());
    assert.equal(result.report.faultsNotTaken.length, 0, explainRun());
  });

  it('keeps every must-be-0 row at 0: no double delivery, no lost event, no unexplained hold', () => {
    assert.deepEqual(
      mustBeZero(result.report).filter(([, n]) => n !== 0),
      [],
      explainRun(),
    );
  });

  it('holds where the target can neither dedupe nor be asked, and says why', () => {
    assert.ok(result.report.held.length > 0, explainRun());
    for (const item of result.report.held)
      assert.ok(item.explanation, `${item.businessKey}\n${explainRun()}`);
  });
});
