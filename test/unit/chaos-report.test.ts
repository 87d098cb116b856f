// The chaos run's verdict on a killed `replyflow start` (bench/chaos/report.ts): its down window is a
// disruption for the 503s it causes, with the same grace as Temporal's, and an eagerly started task
// it had in flight that nobody took over fails the run.
import assert from 'node:assert/strict';
import type { InjectorAction } from '../../bench/chaos/injector';
import { type ChaosReport, explainUnavailable, mustBeZero, passed } from '../../bench/chaos/report';

const killed: InjectorAction = {
  kind: 'kill-combined',
  atMs: 10_000,
  upAtMs: 16_000,
  slot: 0,
  pid: 4242,
  newPid: 4343,
  eagerWorkflowId: 'webhook:sandbox:e1',
};
const GRACE_MS = 6_500;

const clean: ChaosReport = {
  server: 'dev-server',
  sent: 1,
  acked: 1,
  deliveries: 2,
  requests: 3,
  answers: { '202': 1, '200': 1, error: 1 },
  notAcked: [],
  workflows: 1,
  workflowStates: { succeeded: 1 },
  effects: { succeeded: 1 },
  deliveredTwice: [],
  ackedWithoutOutcome: [],
  succeededNotAtTarget: [],
  messagesWithoutEffect: [],
  guessedUnknowns: [],
  faultsNotTaken: [],
  held: [],
  unavailable: [],
  transportFailures: { total: 1, whileCombinedDown: 1 },
  eagerTakeovers: [
    { workflowId: 'webhook:sandbox:e1', killedPid: 4242, takenOverBy: 'replyflow start', settled: true },
  ],
  failed: [],
  crashes: [],
  failedStarts: [],
  replyflowReconcileConsistent: true,
  injector: [killed],
};

describe('chaos report: a SIGKILLed replyflow start', () => {
  it('counts a 503 while it is down, and within the grace after it serves again, as inside that disruption', () => {
    assert.equal(explainUnavailable(12_000, [killed], GRACE_MS).during, 'kill-combined');
    assert.equal(explainUnavailable(16_000 + GRACE_MS, [killed], GRACE_MS).during, 'kill-combined');
  });

  it('counts a 503 before the kill or past the grace as outside every disruption', () => {
    assert.deepEqual(explainUnavailable(9_999, [killed], GRACE_MS), {});
    assert.deepEqual(explainUnavailable(16_001 + GRACE_MS, [killed], GRACE_MS), {});
  });

  it('puts a 503 in overlapping disruptions down to the one that began last', () => {
    const temporal: InjectorAction = { kind: 'restart-temporal', atMs: 14_000, upAtMs: 15_000 };
    assert.equal(explainUnavailable(12_000, [killed, temporal], GRACE_MS).during, 'kill-combined');
    assert.equal(explainUnavailable(14_500, [killed, temporal], GRACE_MS).during, 'restart-temporal');
  });

  it('passes when every eager task it had in flight was taken over and settled', () => {
    assert.equal(passed(clean), true);
  });

  it('fails the run when an eager task it had in flight was never taken over', () => {
    const lost: ChaosReport = {
      ...clean,
      eagerTakeovers: [{ ...clean.eagerTakeovers[0]!, takenOverBy: 'none', settled: false }],
    };
    assert.equal(passed(lost), false);
    assert.deepEqual(
      mustBeZero(lost).filter(([, n]) => n !== 0),
      [['eager tasks of a killed replyflow start never taken over', 1]],
    );
  });
});
