// The event workflow: one webhook event in, at most one effect per business key out, or a human
// decides (docs/architecture.md). This function wires the parts and runs the main path; the parts are
// the run's view (run-view.ts), the operator desk (operator-desk.ts), the conversation's turns
// (turn-client.ts) and the effect attempt (effect-attempt.ts). It never guesses when a send's
// outcome is unknown.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  currentUpdateInfo,
  patched,
  type SignalDefinition,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { Failure } from '../src/failures';
import { isRefusedPayload } from '../src/model';
import type { InboundEvent } from '../src/providers/types';
import { mainPathRecords } from './activity-stubs';
import { EffectAttempt } from './effect-attempt';
import {
  approveSignal,
  approveUpdate,
  type DecisionName,
  type ReplyState,
  reprocessSignal,
  reprocessUpdate,
  resolveSignal,
  resolveUpdate,
  statusQuery,
  turnGrantedSignal,
} from './messages';
import { unsealedSignal } from './operator';
import { OperatorDesk, ParkExpired } from './operator-desk';
import { type EventResult, RunView } from './run-view';
import { TurnClient } from './turn-client';

export type { EventResult } from './run-view';

const SEALED_DECISIONS_PATCH = 'sealed-decisions';

export async function handleEvent(event: InboundEvent): Promise<EventResult> {
  // Only the receiver starts event workflows, with an input encrypted by a known key; a plaintext
  // start (anyone with access to Temporal) fails here, before anything is recorded or sent.
  if (isRefusedPayload(event))
    throw ApplicationFailure.nonRetryable(
      `event input refused: ${event.replyflowRefusedPayload}`,
      Failure.PayloadRefused,
    );
  const bookkeeping = mainPathRecords();
  const { workflowId } = workflowInfo();
  const run = new RunView();
  const desk = new OperatorDesk(run);
  const turns = new TurnClient(workflowId, bookkeeping);

  setHandler(turnGrantedSignal, (grant) => {
    if (!isRefusedPayload(grant)) return turns.onGranted(grant.requestId);
  });
  const decisions: [DecisionName, typeof resolveUpdate, SignalDefinition<[unknown]>, string][] = [
    [
      'resolve',
      resolveUpdate,
      resolveSignal,
      'Decide a held or failed item: {"workflowId","action":"mark-sent"|"resend"|"discard","reason","externalId"?}',
    ],
    [
      'approve',
      approveUpdate,
      approveSignal,
      'Approve a pending resend (a different operator from the one who asked): {"workflowId","reason"}',
    ],
    ['reprocess', reprocessUpdate, reprocessSignal, 'Run failed work again: {"workflowId","reason"}'],
  ];
  for (const [name, update, signal, shape] of decisions) {
    const description = `${shape}. Sealed by the codec server for the operator logged in there; answers Accepted or Rejected.`;
    setHandler(update, (input) => desk.decide(name, input, `update:${currentUpdateInfo()?.id}`), {
      description,
    });
    // Runs started before decisions were sealed recorded their signals unverified; replaying those
    // histories takes that path. Every signal that arrives now is verified like an update.
    setHandler(
      signal,
      (payload) =>
        patched(SEALED_DECISIONS_PATCH)
          ? desk.decide(name, payload, desk.nextSignalDelivery()).then(() => undefined)
          : desk.receiveUnsealed(unsealedSignal(name, payload)),
      {
        description: `${description} Prefer the update: a signal's verdict is only in status and the audit log.`,
      },
    );
  }
  setHandler(statusQuery, () => ({ ...run.details, state: run.state, operatorHistory: desk.history }), {
    description:
      'State, step, attempts, last error class, recommended action, business key and operator history',
  });

  /** Ends the run: its state shown and recorded in the ledger, late operator messages answered. */
  const finish = async (final: ReplyState, reason?: string): Promise<EventResult> => {
    run.setState(final, { reason });
    await bookkeeping.recordOutcome({
      provider: event.provider,
      eventId: event.eventId,
      outcome: final,
      reason,
    });
    await desk.rejectStray();
    await condition(allHandlersFinished);
    return run.result(final, reason);
  };

  // The ledger: the event id is known beyond Temporal's retention.
  const ledger = await bookkeeping.recordEvent(event);
  if (!ledger.firstTime) return finish('duplicate', 'event already in the ledger (processed before)');

  // Routes: which effects this event asks for, and the delivery policy to use.
  const plan = await bookkeeping.planEffects(event);
  turns.transition = plan.transition;

  // Business state decides, not arrival time: a late or disallowed event is refused (and recorded).
  if (plan.transition) {
    const moved = await bookkeeping.applyTransition({
      request: plan.transition,
      provider: event.provider,
      eventId: event.eventId,
      workflowId,
    });
    if (!moved.applied) return finish('stale', moved.reason);
  }
  if (plan.effects.length === 0) return finish('succeeded', 'no route produces an effect for this event');
  run.setState('processing');

  const attempt = new EffectAttempt(event, run, desk, turns, bookkeeping);
  try {
    for (const effect of plan.effects) {
      const outcome = await attempt.runEffect(effect, plan.policy);
      if (outcome !== 'succeeded') return finish(outcome, run.details.reason);
    }
  } catch (err) {
    if (!(err instanceof ParkExpired)) throw err;
    await finish('failed', run.details.reason);
    throw ApplicationFailure.nonRetryable(err.message, Failure.EffectFailed);
  }
  return finish('succeeded');
}
