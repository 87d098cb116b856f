// The event workflow: one webhook event in, at most one effect per business key out, or a human
// decides (docs/architecture.md). This function wires the parts and runs the main path; the parts are
// the run's view (run-view.ts), the operator desk (operator-desk.ts), the conversation's turns
// (turn-client.ts) and the effect attempt (effect-attempt.ts). It never guesses when a send's
// outcome is unknown.
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  currentUpdateInfo,
  patched,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { Admission, FirstStep } from '../activities/admit';
import { Failure } from '../src/failures';
import { isRefusedPayload, PLAN_STEP, type Plan, type PlanFailureDetails } from '../src/model';
import type { InboundEvent } from '../src/providers/types';
import { mainPathRecords, records } from './activity-stubs';
import { ConversationLine } from './conversation-line';
import { EffectAttempt } from './effect-attempt';
import { ParkExpiredError } from './errors';
import {
  DECISION_NAMES,
  DECISION_SIGNALS,
  DECISION_UPDATES,
  DECISIONS,
  type ReplyState,
  statusQuery,
  tenantRevokedSignal,
  turnGrantedSignal,
  yourTurnSignal,
} from './messages';
import { unsealedSignal } from './operator';
import { OperatorDesk, type Resumed } from './operator-desk';
import {
  LOCAL_SENDS,
  ONE_TASK_SENDS,
  PLAN_FAILED_PARKS,
  PLAN_FAILED_PARKS_AT_START,
  SEALED_DECISIONS,
} from './patches';
import { type EventResult, RunView } from './run-view';
import { TurnClient } from './turn-client';

export type { EventResult } from './run-view';

const DUPLICATE_REASON = 'event already in the ledger (processed before)';

/** The hold of a failed plan's `n`th planning attempt: decisions are bound to it (RunView.hold). */
const planHold = (n: number) => `plan:${n}`;

/** Which planning attempt a run continues at: the one its predecessor waited at, if it waited on a failed plan. */
function planningAttemptOf(resumed: Resumed | undefined): number {
  const n = /^plan:(\d+)$/.exec(resumed?.effectId ?? '')?.[1];
  return n ? Number(n) : 1;
}

/** The details of a route mapping failure the admission reported, if that is what `err` is. */
function planFailureOf(err: unknown): PlanFailureDetails | undefined {
  let e: unknown = err;
  while (e instanceof ActivityFailure) e = e.cause;
  if (!(e instanceof ApplicationFailure) || e.type !== Failure.RouteMapping) return undefined;
  const details = e.details?.[0] as PlanFailureDetails | undefined;
  return typeof details?.route === 'string' && details.policy ? details : undefined;
}

/**
 * Why an input is not an event the receiver started, if it is not: not encrypted by a known key, or
 * something else encrypted (a decision sealed by the codec server, started from the Web UI).
 */
function inputRefusal(event: unknown): string | undefined {
  if (isRefusedPayload(event)) return event.replyflowRefusedPayload;
  const e = event as Partial<InboundEvent> & { seal?: unknown };
  if (typeof e?.provider !== 'string' || typeof e.eventId !== 'string' || e.seal !== undefined)
    return 'not an event from the receiver';
  // The receiver starts each event under its own id: another event's captured ciphertext started
  // under a future id is that other event, not this one.
  if (e.workflowId !== workflowInfo().workflowId) return 'the event of another workflow';
  return undefined;
}

/**
 * @param resumed what a run of this workflow that waited for a decision handed on when it continued
 * as new (its history had grown long): the new run carries on with the event and finds the effect
 * row as that run left it.
 */
export async function handleEvent(event: InboundEvent, resumed?: Resumed): Promise<EventResult> {
  // Only the receiver starts event workflows, with an input encrypted by a known key; a plaintext
  // start (anyone with access to Temporal) fails here, before anything is recorded or sent.
  const refusal =
    inputRefusal(event) ?? (isRefusedPayload(resumed) ? resumed.replyflowRefusedPayload : undefined);
  if (refusal)
    throw ApplicationFailure.nonRetryable(`event input refused: ${refusal}`, Failure.PayloadRefused);
  // Each patch a run records costs a marker and an upsert of TemporalChangeVersion (the SDK's): new
  // runs record only the newest, which implies the ones before it (workflows/patches.ts). It is asked
  // here, not after the failed admission: a patch first asked right after a local activity's result
  // can, in a replay whose markers fall in two workflow tasks (the activity outlived a task under
  // load), be asked before the SDK knows its marker is in the history: `patched()` then answers false
  // and the replay fails as nondeterministic (seen in CI). Runs started before keep asking where they did.
  const plannedAtStart = patched(PLAN_FAILED_PARKS_AT_START);
  const localSends = plannedAtStart || patched(LOCAL_SENDS);
  const oneTaskSends = localSends || patched(ONE_TASK_SENDS);
  const bookkeeping = mainPathRecords(oneTaskSends);
  const { workflowId } = workflowInfo();
  const run = new RunView(
    oneTaskSends ? { ReplyState: 'received', ConversationId: event.conversation?.id } : undefined,
  );
  const desk = new OperatorDesk(run, resumed, (handedOn) =>
    continueAsNew<typeof handleEvent>(event, handedOn),
  );
  const line = oneTaskSends ? new ConversationLine() : new TurnClient(workflowId, bookkeeping);

  if (line instanceof ConversationLine) setHandler(yourTurnSignal, () => line.onOffered());
  else
    setHandler(turnGrantedSignal, (grant) => {
      if (!isRefusedPayload(grant)) return line.onGranted(grant.requestId);
    });
  for (const name of DECISION_NAMES) {
    const [update, signal] = [DECISION_UPDATES[name], DECISION_SIGNALS[name]];
    const description = `${DECISIONS[name].shape}. Sealed by the codec server for the operator logged in there; answers Accepted, or fails with the reason it was rejected.`;
    setHandler(
      update,
      async (input) =>
        OperatorDesk.updateAnswer(await desk.decide(name, input, `update:${currentUpdateInfo()?.id}`)),
      { description },
    );
    // Runs started before decisions were sealed recorded their signals unverified; replaying those
    // histories takes that path. Every signal that arrives now is verified like an update.
    setHandler(
      signal,
      (payload) =>
        patched(SEALED_DECISIONS)
          ? desk.decide(name, payload, desk.nextSignalDelivery()).then(() => undefined)
          : desk.receiveUnsealed(unsealedSignal(name, payload)),
      {
        description: `${description} Prefer the update: a signal's verdict is only in status and the audit log.`,
      },
    );
  }
  setHandler(tenantRevokedSignal, (notice) => desk.noticeRevocation(notice?.tenant), {
    description:
      "Sent by replyflow when a tenant's installation is revoked: held work for it ends once the store confirms.",
  });
  setHandler(
    statusQuery,
    () => ({ ...run.details, state: run.state, hold: run.hold(), operatorHistory: desk.history }),
    {
      description:
        'State, step, attempts, last error class, recommended action, business key, the hold a decision answers, and operator history',
    },
  );

  /** Ends the run: its state shown and recorded in the ledger, late operator messages answered. */
  const finish = async (final: ReplyState, reason?: string): Promise<EventResult> => {
    run.setState(final, { reason });
    if (!(final === 'succeeded' && attempt?.outcomeRecorded))
      await bookkeeping.recordOutcome({
        provider: event.provider,
        eventId: event.eventId,
        outcome: final,
        reason,
      });
    await desk.rejectStray();
    await desk.auditsWritten();
    await condition(allHandlersFinished);
    return run.result(final, reason);
  };

  /**
   * A plan a route cannot map waits as failed, alerted, its failure in the ledger (no effect row
   * exists: nothing was planned), for a reprocess or a discard. @throws ParkExpiredError when nobody decided.
   */
  const parkFailedPlan = async (failure: PlanFailureDetails, planning: number) => {
    const hold = planHold(planning);
    run.planFailed(hold, failure.integration, {
      step: PLAN_STEP,
      lastErrorClass: 'route_mapping',
      lastError: failure.error,
      recommendedAction: failure.fix,
    });
    await bookkeeping.recordOutcome({
      provider: event.provider,
      eventId: event.eventId,
      outcome: 'failed',
      reason: failure.error,
    });
    return desk.awaitDecision('failed', {
      kind: 'plan',
      effectId: hold,
      businessKey: `event:${event.provider}:${event.eventId}`,
      policy: failure.policy,
    });
  };
  /** The admission, planned again on each reprocess of a failed plan; undefined: it was discarded. */
  const admit = async (): Promise<Admission | undefined> => {
    // A reprocess admits again as a regular activity task (RESEND_AS_TASK in the desk).
    let admitting = bookkeeping;
    for (let planning = planningAttemptOf(resumed); ; planning += 1) {
      try {
        // A task reads the event from the run's history (activities/run-event.ts), so that each
        // reprocess does not add the event to it again.
        const admission = await admitting.admitEvent({
          ...(admitting === records ? {} : { event }),
          workflowId,
          firstEffectId: uuid4(),
          firstRunId: workflowInfo().firstExecutionRunId,
        });
        run.planned();
        return admission;
      } catch (err) {
        const failure = planFailureOf(err);
        // Runs started before PLAN_FAILED_PARKS failed here, and replay so.
        if (!failure || !(plannedAtStart || patched(PLAN_FAILED_PARKS))) throw err;
        const decision = await parkFailedPlan(failure, planning);
        if (decision.kind === 'done') return undefined;
        if (decision.asTask) admitting = records;
      }
    }
  };
  /** Failed work nobody decided on in time: the run fails, its outcome recorded. */
  const parkExpired = async (err: ParkExpiredError): Promise<never> => {
    await finish('failed', run.details.reason);
    throw ApplicationFailure.nonRetryable(err.message, Failure.EffectFailed);
  };

  // The ledger (the event id is known beyond Temporal's retention), the routes (which effects the
  // event asks for) and the business state (a late or disallowed event is refused and recorded).
  let plan: Plan;
  let first: FirstStep | undefined;
  let attempt: EffectAttempt | undefined;
  if (oneTaskSends) {
    const admission = await admit().catch((err: unknown) => {
      if (err instanceof ParkExpiredError) return parkExpired(err);
      throw err;
    });
    if (!admission) return finish('discarded', run.details.reason);
    if (!admission.firstTime) return finish('duplicate', DUPLICATE_REASON);
    plan = admission.plan;
    first = admission.first;
    if (admission.refusal) return finish('stale', admission.refusal);
  } else {
    const ledger = await bookkeeping.recordEvent(event);
    if (!ledger.firstTime) return finish('duplicate', DUPLICATE_REASON);
    plan = await bookkeeping.planEffects(event);
    if (line instanceof TurnClient) line.transition = plan.transition;
    if (plan.transition) {
      const moved = await bookkeeping.applyTransition({
        request: plan.transition,
        provider: event.provider,
        eventId: event.eventId,
        workflowId,
      });
      if (!moved.applied) return finish('stale', moved.reason);
    }
  }
  if (plan.effects.length === 0) return finish('succeeded', 'no route produces an effect for this event');
  // Runs with one-task sends show `processing` with the effect, when the send starts.
  if (!oneTaskSends) run.setState('processing');

  const path = localSends ? 'local' : oneTaskSends ? 'one-task' : 'turns';
  attempt = new EffectAttempt(event, plan, run, desk, line, bookkeeping, path, first);
  try {
    for (const effect of plan.effects) {
      const outcome = await attempt.runEffect(effect, plan.policy);
      if (outcome !== 'succeeded') return finish(outcome, run.details.reason);
    }
  } catch (err) {
    if (!(err instanceof ParkExpiredError)) throw err;
    return parkExpired(err);
  }
  // A reason only when there is one to give (a responder that chose not to reply).
  return finish('succeeded', run.details.reason);
}
