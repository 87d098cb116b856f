// The chaos run (bench/chaos/) on a two-node cluster of Temporal's own server on PostgreSQL, three
// times: a node SIGKILLed, both nodes restarted one after the other, PostgreSQL restarted, each in
// the middle of a few hundred duplicated, signed webhooks from a separate sender while sends to the
// target are in flight. Nothing acknowledged may be lost, nothing delivered twice, every held item
// must be explained, and a receiver may answer 503 only while a disruption lasts and shards move.
import assert from 'node:assert/strict';
import type { InjectorAction } from '../../bench/chaos/injector';
import { formatInjectorLog, formatReport, mustBeZero } from '../../bench/chaos/report';
import { type ChaosOptions, type ChaosResult, DEFAULT_CHAOS, runChaos } from '../../bench/chaos/run';

/** A few hundred events, sent over about a minute, so that the disruption lands while they arrive. */
const LOAD: Partial<ChaosOptions> = {
  server: 'cluster',
  events: 300,
  dup: 2,
  ratePerSecond: 5,
  laterMaxMs: 20_000,
  faultsPerKind: 1,
  inflightKills: 0,
  killEveryMs: 0,
  // The disruption under test alone: the dev-server run kills the `replyflow start` process.
  combinedKills: 0,
  quietTimeoutMs: 8 * 60_000,
  // 20 s into 54 s of first deliveries: whatever breaks, breaks while webhooks arrive.
  disruptAtMs: 20_000,
  // Two Temporal nodes, PostgreSQL, four replyflow processes and the sender share two cores here: with
  // the default 1.5 s a start can miss its deadline under load alone. 5 s stays below GitHub's 10 s.
  startDeadlineMs: 5000,
};

type Disruption = Extract<
  InjectorAction,
  { kind: 'kill-temporal-node' | 'restart-temporal-node' | 'restart-postgres' }
>;

function chaosOnCluster(
  title: string,
  options: Partial<ChaosOptions>,
  expect: (actions: Disruption[]) => void,
) {
  describe(title, function () {
    this.timeout(900_000);
    let result: ChaosResult;
    const progress: string[] = [];

    before(async () => {
      result = await runChaos({
        ...DEFAULT_CHAOS,
        ...LOAD,
        ...options,
        seed: options.seed ?? 17,
        log: (line) => progress.push(line),
      } as ChaosOptions);
    });

    const explainRun = () =>
      `${formatReport(result.report, title)}\n\ninjector log:\n${formatInjectorLog(result.report.injector)}\n\n${progress.join('\n')}`;
    const disruptions = () =>
      result.report.injector.filter((a): a is Disruption =>
        ['kill-temporal-node', 'restart-temporal-node', 'restart-postgres'].includes(a.kind),
      );

    it('acknowledges every event the sender delivered, each with one workflow', () => {
      assert.equal(result.report.acked, result.report.sent, explainRun());
      assert.equal(result.report.workflows, result.report.sent, explainRun());
    });

    it('broke what it promised while webhooks were still arriving', () => {
      const actions = disruptions();
      expect(actions);
      for (const action of actions) assert.ok(action.atMs < result.sendWindowMs, explainRun());
    });

    it('keeps every must-be-0 row at 0: nothing doubled, nothing acknowledged and lost, no hold unexplained', () => {
      assert.deepEqual(
        mustBeZero(result.report).filter(([, n]) => n !== 0),
        [],
        explainRun(),
      );
      for (const item of result.report.held)
        assert.ok(item.explanation, `${item.businessKey}\n${explainRun()}`);
    });

    it('answers 503 only while a disruption lasts and its shards move', () => {
      assert.deepEqual(
        result.report.unavailable.filter((u) => !u.explanation),
        [],
        explainRun(),
      );
    });
  });
}

describe('the chaos run on a two-node Temporal cluster on PostgreSQL', () => {
  chaosOnCluster(
    'one Temporal node SIGKILLed under load',
    { temporalFault: 'kill-node', restartPostgres: false, seed: 17 },
    (actions) => {
      assert.deepEqual(
        actions.map((a) => a.kind),
        ['kill-temporal-node'],
      );
    },
  );

  chaosOnCluster(
    'both Temporal nodes restarted one after the other under load',
    { temporalFault: 'rolling-restart', restartPostgres: false, seed: 23 },
    (actions) => {
      assert.deepEqual(
        actions.map((a) => (a.kind === 'restart-temporal-node' ? a.node : a.kind)),
        [1, 2],
      );
    },
  );

  chaosOnCluster(
    'PostgreSQL restarted under load',
    { temporalFault: 'none', restartPostgres: true, seed: 29 },
    (actions) => {
      assert.deepEqual(
        actions.map((a) => a.kind),
        ['restart-postgres'],
      );
    },
  );
});
