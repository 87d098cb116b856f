// The turns of one conversation: its effects are sent one at a time, in the order of their source
// messages (not arrival order); different conversations have their own turns workflow and run in
// parallel. Event workflows ask for a turn (signal-with-start) and give it back when their send is
// settled, held or failed, so a held reply never blocks the rest of its conversation.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { releaseTurnSignal, requestTurnSignal, type TurnRequest, turnGrantedSignal } from './messages';

interface TurnsState {
  queue?: TurnRequest[];
  /** Requests already granted, so a late retry of one is not granted twice (bounded). */
  served?: string[];
  /** Wait before the first grant of a run, so that late-arriving earlier messages sort first. */
  gatherMs?: number;
}

/** An event workflow that has not been granted its turn by then asks again (see the idle end below). */
export const TURN_REQUEST_RETRY_MS = 60_000;
/** A turn not given back in this time is taken back (its holder is stuck or gone); the next one goes on. */
const TURN_TIMEOUT_MS = 15 * 60_000;
const GRANTS_BEFORE_CONTINUE_AS_NEW = 500;

export async function conversationTurns(state: TurnsState = {}): Promise<void> {
  const queue: TurnRequest[] = [...(state.queue ?? [])];
  let holder: string | undefined;
  const served = new Set<string>(state.served ?? []);

  setHandler(
    requestTurnSignal,
    (request) => {
      // Retried requests (activity retries) and requests already served are not queued again.
      const known = request.requestId === holder || served.has(request.requestId);
      if (known || queue.some((q) => q.requestId === request.requestId)) return;
      queue.push(request);
      queue.sort((a, b) => (a.orderKey < b.orderKey ? -1 : a.orderKey > b.orderKey ? 1 : 0));
    },
    { description: 'An event workflow asks for its turn to send: {"workflowId","requestId","orderKey"}' },
  );
  setHandler(
    releaseTurnSignal,
    ({ requestId }) => {
      if (requestId === holder) holder = undefined;
    },
    { description: 'The event workflow holding the turn gives it back' },
  );

  let grants = 0;
  // Nobody waiting: end at once (no timer is left behind); the next request starts a new run. A
  // request racing this end is not lost for good: its event workflow asks again after
  // TURN_REQUEST_RETRY_MS.
  // Each run waits a moment before its first grant, so that earlier messages delivered a little
  // later still sort first.
  await sleep(state.gatherMs ?? 2000);
  while (queue.length > 0) {
    const next = queue.shift()!;
    holder = next.requestId;
    served.add(next.requestId);
    try {
      await getExternalWorkflowHandle(next.workflowId).signal(turnGrantedSignal, {
        requestId: next.requestId,
      });
    } catch {
      holder = undefined; // the event workflow is gone: nothing to wait for
    }
    if (!(await condition(() => holder === undefined, TURN_TIMEOUT_MS))) {
      log.warn('turn not given back in time; moving on', { holder });
      holder = undefined;
    }
    grants += 1;
    if (grants >= GRANTS_BEFORE_CONTINUE_AS_NEW || workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof conversationTurns>({ queue, served: [...served].slice(-1000), gatherMs: 0 });
    }
  }
  await condition(allHandlersFinished);
}
