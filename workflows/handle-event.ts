// The event workflow: one webhook event in, at most one effect per business key out, or a human
// decides. Steps are activities with their own retry policies; the workflow owns the state machine
// (DESIGN.md §3) and never guesses when a send's outcome is unknown.
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type {
  DeliveryPolicy,
  EffectPlan,
  Plan,
  SendInput,
  SendOutcome,
  StepPlan,
  TargetCapabilities,
} from '../activities/types';
import type { InboundEvent } from '../src/providers/types';
import {
  conversationWorkflowId,
  releaseTurnSignal,
  TURN_REQUEST_RETRY_MS,
  turnGrantedSignal,
} from './conversation';
import {
  approveSignal,
  type OperatorDecision,
  type ReplyState,
  reprocessSignal,
  resolveSignal,
  type StatusView,
  statusQuery,
} from './messages';
import { actorOf, judge, type OperatorMessage, requestIdOf } from './operator';
import {
  Attempts,
  BusinessKey,
  ConversationId,
  FailedStep,
  Integration,
  LastErrorClass,
  RecommendedAction,
  ReplyState as ReplyStateKey,
} from './search-attributes';

export interface EventResult {
  state: ReplyState;
  reason?: string;
  effects: { businessKey: string; effectId?: string; externalId?: string; ownerWorkflowId?: string }[];
}

// Bookkeeping against PostgreSQL: retried until the database answers, so an outage delays work but
// never loses it.
const records = proxyActivities<Activities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});
/**
 * The same bookkeeping on the main path (ledger, plan, transition, claim, turn request, outcome) as
 * local activities: each is one marker in the history instead of a task through Temporal's queues
 * and a workflow task, which cut the dev server's CPU per event by a third (docs/benchmarks.md). They
 * are idempotent, so the re-run a crashed worker causes is harmless. Workflows started before this
 * change replay on `records` (the patch below).
 */
const localRecords = proxyLocalActivities<Activities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});
const LOCAL_BOOKKEEPING_PATCH = 'local-bookkeeping';
const responder = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '2s', maximumAttempts: 5, nonRetryableErrorTypes: ['PermanentResponderError'] },
});
const lookups = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '2s', maximumAttempts: 5 },
});
const alerts = proxyActivities<Activities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '2s', maximumAttempts: 5 },
});

/** Sends carry their lease: start-to-close is the lease, schedule-to-close bounds the retry budget. */
function sender(policy: DeliveryPolicy) {
  return proxyActivities<Activities>({
    startToCloseTimeout: policy.sendTimeoutMs,
    scheduleToCloseTimeout: policy.maxElapsedMs,
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '10m',
      maximumAttempts: policy.maxAttempts,
      nonRetryableErrorTypes: ['PermanentTargetError'],
    },
  });
}

type Held = 'held' | 'failed';

export async function handleEvent(event: InboundEvent): Promise<EventResult> {
  const bookkeeping = patched(LOCAL_BOOKKEEPING_PATCH) ? localRecords : records;
  const { workflowId } = workflowInfo();
  let state: ReplyState = 'received';
  const view: Omit<StatusView, 'state' | 'operatorHistory'> = { attempts: 0 };
  const history: OperatorDecision[] = [];
  const inbox: { message: OperatorMessage; arrivedIn: ReplyState }[] = [];
  const seenRequestIds = new Set<string>();
  let resendRequestedBy: string | undefined;
  const results: EventResult['effects'] = [];

  let plan: Plan | undefined;
  let turnRequest = 0;
  let waitingFor: string | undefined;
  let granted: string | undefined;
  setHandler(turnGrantedSignal, async ({ requestId }) => {
    if (requestId === waitingFor) {
      granted = requestId;
      return;
    }
    // A grant nobody waits for (a late duplicate): give it straight back so the conversation moves on.
    const key = plan?.transition?.conversationKey;
    if (key) await giveTurnBack(key, requestId);
  });

  const receive = (message: OperatorMessage) => {
    inbox.push({ message, arrivedIn: state });
  };
  setHandler(resolveSignal, (payload) => receive({ signal: 'resolve', payload }), {
    description:
      'Decide a held or failed item: {"action":"mark-sent"|"resend"|"discard","operator","reason","externalId"?,"requestId"?}',
  });
  setHandler(approveSignal, (payload) => receive({ signal: 'approve', payload }), {
    description:
      'Approve a pending resend (a different person from the one who asked): {"approver","reason","requestId"?}',
  });
  setHandler(reprocessSignal, (payload) => receive({ signal: 'reprocess', payload }), {
    description: 'Run failed work again through the same checks: {"operator","reason","requestId"?}',
  });
  setHandler(statusQuery, () => ({ ...view, state, operatorHistory: history }), {
    description:
      'State, step, attempts, last error class, recommended action, business key and operator history',
  });

  const setState = (next: ReplyState, extra: Partial<typeof view> = {}) => {
    state = next;
    Object.assign(view, extra);
    upsertSearchAttributes([
      { key: ReplyStateKey, value: next },
      { key: Attempts, value: view.attempts },
      ...(view.recommendedAction ? [{ key: RecommendedAction, value: view.recommendedAction }] : []),
      ...(view.lastErrorClass ? [{ key: LastErrorClass, value: view.lastErrorClass }] : []),
      ...(view.step && (next === 'held' || next === 'failed') ? [{ key: FailedStep, value: view.step }] : []),
    ]);
  };

  /** Records a message's verdict in the status view and the append-only audit log. */
  const record = async (
    message: OperatorMessage,
    result: 'accepted' | 'rejected',
    detail: string | undefined,
    before: ReplyState,
    after: ReplyState,
  ) => {
    const requestId = requestIdOf(message);
    if (requestId) seenRequestIds.add(requestId);
    const p = message.payload as unknown as Record<string, unknown>;
    const action = message.signal === 'resolve' ? String(p?.action ?? '(missing)') : message.signal;
    const decision: OperatorDecision = {
      at: new Date().toISOString(),
      signal: message.signal,
      action,
      actor: actorOf(message),
      reason: typeof p?.reason === 'string' ? p.reason.slice(0, 500) : undefined,
      requestId,
      result,
      detail,
      stateBefore: before,
      stateAfter: after,
    };
    history.push(decision);
    await records.writeAudit({
      actor: decision.actor,
      approver: message.signal === 'approve' ? decision.actor : undefined,
      action,
      workflowId,
      businessKey: view.businessKey,
      stateBefore: before,
      stateAfter: after,
      reason: decision.reason,
      result: result === 'accepted' ? (detail ? `accepted: ${detail}` : 'accepted') : `rejected: ${detail}`,
      requestId,
    });
  };

  /** Messages that arrive while nothing awaits a decision change nothing, and are recorded so. */
  const rejectStray = async () => {
    while (inbox.length > 0) {
      const { message, arrivedIn } = inbox.shift()!;
      const requestId = requestIdOf(message);
      const detail =
        requestId && seenRequestIds.has(requestId)
          ? `repeated requestId ${requestId}`
          : `nothing awaits a decision in state ${arrivedIn}`;
      await record(message, 'rejected', detail, state, state);
    }
  };

  const finish = async (final: ReplyState, reason?: string): Promise<EventResult> => {
    setState(final, { reason });
    await bookkeeping.recordOutcome({
      provider: event.provider,
      eventId: event.eventId,
      outcome: final,
      reason,
    });
    await rejectStray();
    await condition(allHandlersFinished);
    return { state: final, reason, effects: results };
  };

  // 1. Ledger: the event id is known beyond Temporal's retention.
  const ledger = await bookkeeping.recordEvent(event);
  if (!ledger.firstTime) return finish('duplicate', 'event already in the ledger (processed before)');

  // 2. Routes: which effects this event asks for, and the delivery policy to use.
  plan = await bookkeeping.planEffects(event);

  // 3. Business state decides, not arrival time: a late or disallowed event is refused (and recorded).
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
  setState('processing');

  for (const effect of plan.effects) {
    const outcome = await runEffect(effect, plan.policy);
    if (outcome !== 'succeeded') return finish(outcome, view.reason);
  }
  return finish('succeeded');

  /** Runs the steps of one effect in order; completed steps are never redone. */
  async function runEffect(effect: EffectPlan, policy: DeliveryPolicy): Promise<ReplyState> {
    view.businessKey = effect.businessKey;
    upsertSearchAttributes([
      { key: BusinessKey, value: effect.businessKey },
      { key: Integration, value: effect.integration },
      ...(effect.conversationId ? [{ key: ConversationId, value: effect.conversationId }] : []),
    ]);
    for (const [index, step] of effect.steps.entries()) {
      const outcome = await runStep(effect, step, index, policy);
      if (outcome !== 'succeeded') return outcome;
    }
    return 'succeeded';
  }

  async function runStep(
    effect: EffectPlan,
    step: StepPlan,
    stepIndex: number,
    policy: DeliveryPolicy,
  ): Promise<ReplyState> {
    const businessKey = effect.steps.length > 1 ? `${effect.businessKey}#${step.name}` : effect.businessKey;
    view.step = step.name;
    // 3. Claim the business key. A conflict is not "done": the owner's row decides.
    const claim = await bookkeeping.claimEffect({
      effectId: uuid4(),
      workflowId,
      correlationId: event.correlationId,
      integration: effect.integration,
      businessKey,
      conversationId: effect.conversationId,
      step,
      stepIndex,
    });
    if (claim.kind === 'duplicate') {
      results.push({ businessKey, ownerWorkflowId: claim.ownerWorkflowId });
      view.ownerWorkflowId = claim.ownerWorkflowId;
      view.reason = `business key owned by ${claim.ownerWorkflowId} (${claim.ownerStatus})`;
      return 'duplicate';
    }
    const { effectId, capabilities } = claim;
    view.effectId = effectId;
    if (claim.status === 'succeeded') {
      results.push({ businessKey, effectId });
      return 'succeeded';
    }
    // 4. The responder answers once; every attempt sends these same bytes.
    const prepared = await prepareBody(effectId, step, policy, businessKey);
    if ('done' in prepared) {
      if (prepared.done === 'succeeded') results.push({ businessKey, effectId });
      return prepared.done;
    }
    const { body } = prepared;
    const send = sender(policy);

    for (;;) {
      const sent = await withTurn(() => sendAndSettle(send, effectId, step, body, capabilities));
      if (sent.kind === 'succeeded') {
        results.push({ businessKey, effectId, externalId: sent.externalId });
        return 'succeeded';
      }
      const decision = await awaitOperator(sent.kind, effectId, step, policy, businessKey);
      if (decision.kind === 'done') {
        if (decision.state === 'succeeded')
          results.push({ businessKey, effectId, externalId: decision.externalId });
        return decision.state;
      }
      // An approved resend or a reprocess: the row is back in retry_wait; the same protocol runs.
    }
  }

  /**
   * The body to send: the responder's answer (written once) or the route's mapped payload. A
   * responder that keeps failing parks the effect as failed at step `prepareReply`; reprocess asks it
   * again. Nothing has been sent at that point.
   */
  async function prepareBody(
    effectId: string,
    step: StepPlan,
    policy: DeliveryPolicy,
    businessKey: string,
  ): Promise<{ body: SendInput['body'] } | { done: ReplyState }> {
    if (step.content.kind === 'payload') return { body: { json: step.content.body } };
    for (;;) {
      try {
        const { text } = await responder.prepareReply({ event, step });
        view.step = step.name;
        return { body: { text } };
      } catch (err) {
        const cause = err instanceof ActivityFailure ? err.cause : err;
        const message = cause instanceof Error ? cause.message : String(cause);
        await records.recordResult({
          effectId,
          status: 'failed',
          errorClass: 'responder',
          error: `responder: ${message}`,
        });
        setState('failed', {
          step: 'prepareReply',
          lastErrorClass: 'responder',
          lastError: message,
          recommendedAction: 'fix the responder (RESPONDER_URL or the FAQ file), then reprocess',
        });
        const decision = await awaitOperator('failed', effectId, step, policy, businessKey);
        if (decision.kind === 'done') return { done: decision.state };
      }
    }
  }

  /** One pass of the send protocol, settled: succeeded, or parked as held or failed. */
  async function sendAndSettle(
    send: ReturnType<typeof sender>,
    effectId: string,
    step: StepPlan,
    body: SendInput['body'],
    capabilities: TargetCapabilities,
  ): Promise<{ kind: 'succeeded'; externalId: string } | { kind: Held }> {
    setState('processing');
    const outcome = await attemptSend(send, { effectId, step, body });
    view.attempts = outcome.attempts;
    if (outcome.result === 'succeeded') {
      setState('processing', { lastErrorClass: undefined, recommendedAction: undefined });
      return { kind: 'succeeded', externalId: outcome.externalId };
    }
    if (outcome.result === 'failed') {
      setState('failed', {
        lastErrorClass: outcome.errorClass,
        lastError: outcome.error,
        recommendedAction: outcome.fix,
      });
      return { kind: 'failed' };
    }
    setState('unknown', { lastErrorClass: 'unknown', lastError: outcome.reason });
    const found = await lookUpUnknown(effectId, step, outcome, capabilities);
    if (found) return { kind: 'succeeded', externalId: found };
    await records.recordResult({ effectId, status: 'held', errorClass: 'unknown', error: outcome.reason });
    setState('held', {
      recommendedAction: capabilities.lookup
        ? 'not found by lookup: check the target, then mark-sent (with its id) or resend (needs approval)'
        : 'the target cannot be asked: check it by hand, then mark-sent (with its id) or resend (needs approval)',
    });
    return { kind: 'held' };
  }

  /**
   * Runs `fn` holding the conversation's turn, so one conversation sends one effect at a time in
   * source order. The turn is given back however `fn` ends, held and failed included.
   */
  async function withTurn<T>(fn: () => Promise<T>): Promise<T> {
    const transition = plan?.transition;
    if (!transition) return fn();
    turnRequest += 1;
    const requestId = `${workflowId}#${turnRequest}`;
    waitingFor = requestId;
    do {
      await bookkeeping.requestTurn({
        conversationKey: transition.conversationKey,
        workflowId,
        requestId,
        orderKey: transition.orderKey,
      });
    } while (!(await condition(() => granted === requestId, TURN_REQUEST_RETRY_MS)));
    waitingFor = undefined;
    try {
      return await fn();
    } finally {
      await giveTurnBack(transition.conversationKey, requestId);
    }
  }

  async function giveTurnBack(conversationKey: string, requestId: string): Promise<void> {
    await getExternalWorkflowHandle(conversationWorkflowId(conversationKey))
      .signal(releaseTurnSignal, { requestId })
      .catch(() => log.warn('could not give the turn back; it will time out', { requestId }));
  }

  async function attemptSend(
    send: ReturnType<typeof sender>,
    input: Parameters<Activities['send']>[0],
  ): Promise<SendOutcome> {
    try {
      return await send.send(input);
    } catch (err) {
      // The retry budget is spent (attempts or elapsed time) or the activity failed for good.
      const cause = err instanceof ActivityFailure ? err.cause : err;
      const message = cause instanceof Error ? cause.message : String(cause);
      const type = cause instanceof ApplicationFailure ? cause.type : undefined;
      log.warn('send gave up', { workflowId, type });
      const recorded = await records.recordResult({
        effectId: input.effectId,
        status: 'failed',
        errorClass: 'retryable',
        error: 'retry budget spent',
      });
      if (!recorded.recorded && (recorded.status === 'sending' || recorded.status === 'unknown')) {
        // The last attempt may have reached the target (its row still says so): that is an unknown
        // outcome, settled by lookup or held for two people, never a plain failure to reprocess.
        return {
          result: 'unknown',
          reason: `retry budget spent while the last attempt's outcome is unknown: ${message}`,
          leaseExpiresAt: new Date(Date.now() + (plan?.policy.sendTimeoutMs ?? 0)).toISOString(),
          attempts: view.attempts,
        };
      }
      return {
        result: 'failed',
        errorClass: 'permanent',
        error: `retry budget spent: ${message}`,
        fix:
          type === 'RetryableTargetError'
            ? 'check the target; reprocess when it is healthy'
            : 'see the last error; reprocess when fixed',
        attempts: view.attempts,
      };
    }
  }

  /**
   * Unknown outcome, and the target does not dedupe on our key (the send activity already resends
   * with the same key where it does): look the result up once the owner's lease has expired, and
   * again after the target's consistency delay, because "not found yet" is not proof.
   * @returns the external id when found.
   */
  async function lookUpUnknown(
    effectId: string,
    step: StepPlan,
    outcome: Extract<SendOutcome, { result: 'unknown' }>,
    capabilities: TargetCapabilities,
  ): Promise<string | undefined> {
    if (!capabilities.lookup) return undefined;
    const leaseLeft = Date.parse(outcome.leaseExpiresAt) - Date.now();
    if (leaseLeft > 0) await sleep(leaseLeft);
    for (const delay of [0, capabilities.consistencyDelayMs]) {
      if (delay > 0) await sleep(delay);
      // A lookup that keeps failing (missing scope, target down) proves nothing either way: hold.
      const found = await lookups.lookup({ effectId, step }).catch((err: unknown) => {
        log.warn('lookup failed', { workflowId, error: err instanceof Error ? err.message : String(err) });
        return { found: false as const };
      });
      if (found.found) {
        await records.recordResult({ effectId, status: 'succeeded', externalId: found.externalId });
        return found.externalId;
      }
    }
    return undefined;
  }

  /**
   * Tells operators (log, alert webhook). An alert channel that stays down must not fail the
   * workflow: the item stays held or failed, visible by its search attributes, and the next reminder
   * tries again; `replyflow reconcile` lists held work without a delivered alert.
   */
  async function raiseAlert(
    kind: 'held' | 'failed' | 'reminder',
    businessKey: string,
    level: number,
  ): Promise<void> {
    try {
      await alerts.alert({
        kind,
        workflowId,
        businessKey,
        step: view.step,
        recommendedAction: view.recommendedAction,
        errorClass: view.lastErrorClass,
        level,
      });
    } catch (err) {
      log.warn('alert not delivered', {
        kind,
        level,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /** Held or failed: wait for an operator, remind while nobody decides, never resolve on its own. */
  async function awaitOperator(
    waitingIn: Held,
    effectId: string,
    step: StepPlan,
    policy: DeliveryPolicy,
    businessKey: string,
  ): Promise<{ kind: 'done'; state: ReplyState; externalId?: string } | { kind: 'resend' | 'reprocess' }> {
    await raiseAlert(waitingIn, businessKey, 0);
    let reminders = 0;
    const parkedUntil = Date.now() + policy.failedParkMs;
    for (;;) {
      const timeout =
        state === 'failed'
          ? parkedUntil - Date.now()
          : policy.reminderScheduleMs[Math.min(reminders, policy.reminderScheduleMs.length - 1)]!;
      const arrived = await condition(() => inbox.length > 0, Math.max(timeout, 1));
      if (!arrived) {
        if (state === 'failed') {
          view.reason = 'nobody reprocessed or discarded it in time';
          await finish('failed', view.reason);
          throw ApplicationFailure.nonRetryable(
            `effect ${businessKey} failed: ${view.lastError ?? 'unknown error'}`,
            'EffectFailed',
          );
        }
        reminders += 1;
        await raiseAlert('reminder', businessKey, reminders);
        continue;
      }
      const { message, arrivedIn } = inbox.shift()!;
      const before = state;
      const verdict =
        arrivedIn === 'held' || arrivedIn === 'awaiting_approval' || arrivedIn === 'failed'
          ? judge(message, { state, seenRequestIds, resendRequestedBy })
          : { ok: false as const, detail: `nothing awaits a decision in state ${arrivedIn}` };
      if (!verdict.ok) {
        await record(message, 'rejected', verdict.detail, before, before);
        continue;
      }
      switch (verdict.action) {
        case 'mark-sent': {
          await records.recordResult({
            effectId,
            status: 'succeeded',
            externalId: verdict.externalId,
            manual: true,
          });
          setState('succeeded', { recommendedAction: undefined });
          await record(message, 'accepted', `marked sent as ${verdict.externalId}`, before, 'succeeded');
          return { kind: 'done', state: 'succeeded', externalId: verdict.externalId };
        }
        case 'discard': {
          await records.recordResult({ effectId, status: 'discarded', manual: true });
          setState('discarded', { recommendedAction: undefined });
          await record(message, 'accepted', undefined, before, 'discarded');
          view.reason = 'discarded by an operator';
          return { kind: 'done', state: 'discarded' };
        }
        case 'request-resend': {
          resendRequestedBy = actorOf(message);
          setState('awaiting_approval', {
            recommendedAction: 'a different person approves the resend (approve signal)',
          });
          view.pendingResend = {
            operator: resendRequestedBy,
            reason: String((message.payload as { reason?: unknown }).reason),
          };
          await record(message, 'accepted', 'awaiting approval', before, 'awaiting_approval');
          break;
        }
        case 'approve-resend': {
          // Every resend first re-reads the row and looks the result up again.
          const check = await records.prepareResend({ effectId, step });
          view.pendingResend = undefined;
          resendRequestedBy = undefined;
          if (check.kind === 'already-sent') {
            setState('succeeded', { recommendedAction: undefined });
            await record(
              message,
              'accepted',
              `found already sent (${check.externalId}): no resend`,
              before,
              'succeeded',
            );
            return { kind: 'done', state: 'succeeded', externalId: check.externalId };
          }
          if (check.kind === 'wait') {
            setState('held');
            await record(message, 'rejected', check.detail, before, 'held');
            break;
          }
          setState('processing');
          await record(message, 'accepted', 'resend approved', before, 'processing');
          return { kind: 'resend' };
        }
        case 'reprocess': {
          const check = await records.prepareResend({ effectId, step });
          if (check.kind === 'already-sent') {
            setState('succeeded', { recommendedAction: undefined });
            await record(
              message,
              'accepted',
              `found already sent (${check.externalId})`,
              before,
              'succeeded',
            );
            return { kind: 'done', state: 'succeeded', externalId: check.externalId };
          }
          if (check.kind === 'wait') {
            await record(message, 'rejected', check.detail, before, before);
            break;
          }
          setState('processing');
          await record(message, 'accepted', undefined, before, 'processing');
          return { kind: 'reprocess' };
        }
      }
    }
  }
}
