// One effect of an event, step by step: claim the business key, prepare the body once, send it through
// the lease-guarded protocol (activities/send.ts, model/send.pml) in its conversation's order, settle
// an unknown outcome by lookup, and hand held or failed work to the operator desk.
import {
  ActivityFailure,
  ApplicationFailure,
  log,
  patched,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { FirstStep } from '../activities/admit';
import { errorMessage, Failure } from '../src/failures';
import {
  claimInput,
  type EffectPlan,
  type MessageBody,
  type Plan,
  type PreparedReply,
  type SendInput,
  type SendOutcome,
  type StepPlan,
  stepBusinessKey,
  stepForBody,
  TURN_WAIT_MS,
} from '../src/model';
import type { InboundEvent } from '../src/providers/types';
import { localResponder, lookups, records, responder, type Sender, sender } from './activity-stubs';
import type { Ordering } from './conversation-line';
import type { AnswerLeft, EffectContext } from './effect-context';
import type { ReplyState } from './messages';
import type { OperatorDesk } from './operator-desk';
import { ADOPT_EFFECT_ROW } from './patches';
import type { RunView } from './run-view';

/**
 * How a run sends, by the patches it recorded: `turns` (a turns workflow per conversation), `one-task`
 * (order kept by the effects table, the send an activity task), `local` (the same, the send a local
 * activity inside the workflow task, which also records the event's outcome when it is the last step).
 */
type SendPath = 'turns' | 'one-task' | 'local';

/** `ledgerRecorded`: the send itself marked the event succeeded in the ledger. */
type Sent = { kind: 'succeeded'; externalId: string; ledgerRecorded?: boolean } | { kind: 'held' | 'failed' };
type Settled = Exclude<SendOutcome, { result: 'wait' }>;
type Prepared = { body: SendInput['body']; answer?: AnswerLeft } | { done: ReplyState };

/**
 * The n-th message (from 2) of an answer to `step`: an effect of its own, under its own business key,
 * to the same destination, with the body the responder already wrote.
 */
function laterMessage(effect: EffectPlan, step: StepPlan, body: MessageBody, n: number): EffectPlan {
  return {
    integration: effect.integration,
    businessKey: `${stepBusinessKey(effect, step)}#${n}`,
    conversationId: effect.conversationId,
    steps: [{ ...step, content: { kind: 'message', body } }],
  };
}

export class EffectAttempt {
  /** The event's outcome is in the ledger already: the send of the last step recorded it. */
  outcomeRecorded = false;
  private readonly oneTaskSends: boolean;
  /** The answer whose later messages are being sent. */
  private sending?: AnswerLeft;

  /**
   * @param path how this run sends. Since `one-task`: the built-in responder runs in the workflow task,
   * the conversation's order and gather window are kept by the send activity, and search attributes
   * change once per task. Runs started before keep their way.
   */
  constructor(
    private readonly event: InboundEvent,
    private readonly plan: Plan,
    private readonly run: RunView,
    private readonly desk: OperatorDesk,
    private readonly ordering: Ordering,
    private readonly bookkeeping: typeof records,
    private readonly path: SendPath,
    /** The first step of the first effect, as the admission claimed (and answered) it. */
    private first?: FirstStep,
  ) {
    this.oneTaskSends = path !== 'turns';
  }

  /** Runs the steps of one effect in order; completed steps are never redone. */
  async runEffect(effect: EffectPlan, policy: EffectContext['policy']): Promise<ReplyState> {
    this.run.showEffect(effect);
    for (const [index, step] of effect.steps.entries()) {
      const outcome = await this.runStep(effect, step, index, policy);
      if (outcome !== 'succeeded') return outcome;
    }
    return 'succeeded';
  }

  private async runStep(
    effect: EffectPlan,
    step: StepPlan,
    stepIndex: number,
    policy: EffectContext['policy'],
  ): Promise<ReplyState> {
    this.run.atStep(step.name);
    // Claim the business key. The admission claimed the first step already, with the input only it
    // builds (activities/admit.ts); the run takes its answer. A conflict is not "done": the owner's
    // row decides.
    const first = this.first;
    this.first = undefined;
    // Drawn unless the admission's claim is this run's, even when unused (the claim is another's):
    // runs always drew it so, and every draw after it stays the same.
    const effectId = first?.claim.kind === 'owned' ? first.claim.effectId : uuid4();
    const businessKey = stepBusinessKey(effect, step);
    const claim =
      first?.claim ??
      (await this.bookkeeping.claimEffect(
        claimInput({
          effectId,
          workflowId: workflowInfo().workflowId,
          correlationId: this.event.correlationId,
          plan: this.plan,
          effect,
          stepIndex,
          ordered: this.oneTaskSends,
        }),
      ));
    if (claim.kind === 'duplicate') {
      this.run.ownedElsewhere(businessKey, claim);
      return 'duplicate';
    }
    const ctx: EffectContext = {
      effectId: claim.effectId,
      step,
      businessKey,
      policy,
      capabilities: claim.capabilities,
    };
    this.run.atStep(step.name, ctx.effectId);
    if (claim.status === 'succeeded') {
      this.run.settled({ businessKey, effectId: ctx.effectId });
      // A run that continued as new while a later message of this answer waited carries on with it.
      const left = step.content.kind === 'reply' ? this.desk.resumedAnswer(businessKey) : undefined;
      return left ? this.sendLater(left, policy) : 'succeeded';
    }
    if (claim.status === 'discarded' && patched(ADOPT_EFFECT_ROW)) {
      this.run.explain('discarded by an operator');
      return 'discarded';
    }
    // The responder answers once; every attempt sends these same bytes (or nothing, if it chose so).
    const prepared =
      first?.text !== undefined
        ? await this.answered(ctx, effect, { text: first.text, messages: first.messages })
        : await this.prepareBody(ctx, effect);
    if ('done' in prepared) {
      if (prepared.done === 'succeeded') this.run.settled({ businessKey, effectId: ctx.effectId });
      return prepared.done;
    }
    ctx.body = prepared.body;
    ctx.step = stepForBody(step, prepared.body);
    ctx.answer = prepared.answer;
    let gatherUntil = this.gatherUntil(policy);
    const local = this.path === 'local';
    let send = sender(
      policy,
      gatherUntil ? policy.turnGatherMs : 0,
      this.oneTaskSends ? TURN_WAIT_MS : 0,
      local,
    );
    // The run's last step: its send records the event's outcome with its own.
    const last =
      local &&
      !prepared.answer &&
      effect === this.plan.effects.at(-1) &&
      stepIndex === effect.steps.length - 1
        ? { provider: this.event.provider, eventId: this.event.eventId }
        : undefined;
    let found =
      (claim.status === 'held' || claim.status === 'failed') && patched(ADOPT_EFFECT_ROW)
        ? this.adopt(claim.status, claim.attempts)
        : undefined;
    for (;;) {
      const sent =
        found ??
        (await this.ordering.around(() =>
          this.sendAndSettle(send, ctx, { body: prepared.body, gatherUntil, ledgerOnSuccess: last }),
        ));
      found = undefined;
      gatherUntil = undefined;
      if (sent.kind === 'succeeded' && sent.ledgerRecorded) this.outcomeRecorded = true;
      const decision =
        sent.kind === 'succeeded'
          ? ({ kind: 'done', state: 'succeeded', externalId: sent.externalId } as const)
          : await this.desk.awaitDecision(sent.kind, ctx);
      if (decision.kind === 'done') {
        if (decision.state !== 'succeeded') return decision.state;
        this.run.settled({ businessKey, effectId: ctx.effectId, externalId: decision.externalId });
        return step.content.kind === 'reply' && ctx.answer ? this.sendLater(ctx.answer, policy) : 'succeeded';
      }
      // An approved resend or a reprocess: the row is back in retry_wait; the same protocol runs.
      if (decision.asTask) send = sender(policy, 0, this.oneTaskSends ? TURN_WAIT_MS : 0);
    }
  }

  /**
   * Sends the later messages of an answer in order, each under the protocol of its own, once the one
   * before it succeeded. A message that ends otherwise (held and discarded, say) ends the event so;
   * the ones after it are not sent.
   */
  private async sendLater(answer: AnswerLeft, policy: EffectContext['policy']): Promise<ReplyState> {
    this.sending = answer;
    while (answer.rest.length > 0) {
      const outcome = await this.runEffect(answer.rest[0]!, policy);
      if (outcome !== 'succeeded') return outcome;
      answer.rest.shift();
    }
    this.sending = undefined;
    return 'succeeded';
  }

  /**
   * Takes a held or failed row at its word (a run a reset replaced left it so): no send, the same
   * wait for a decision, numbered by the row's attempts.
   */
  private adopt(status: 'held' | 'failed', attempts = 0): Sent {
    this.run.countAttempts(attempts);
    this.run.setState(status, {
      lastErrorClass: status === 'held' ? 'unknown' : this.run.details.lastErrorClass,
      recommendedAction:
        status === 'held'
          ? 'found held by an earlier run: check the target, then mark-sent (with its id) or resend (needs approval)'
          : 'found failed by an earlier run: see `replyflow show`; reprocess when fixed',
    });
    return { kind: status };
  }

  /**
   * The body to send: the responder's answer (written once) or the route's mapped payload. A
   * responder that keeps failing parks the effect as failed at step `prepareReply`; reprocess asks it
   * again. Nothing has been sent at that point.
   */
  private async prepareBody(ctx: EffectContext, effect: EffectPlan): Promise<Prepared> {
    const { step } = ctx;
    if (step.content.kind === 'payload') return { body: { json: step.content.body } };
    if (step.content.kind === 'message') return { body: step.content.body, answer: this.sending };
    const resumed = this.desk.resumedBody(ctx.effectId);
    if (resumed) return { body: resumed, answer: this.desk.resumedAnswer(ctx.businessKey) };
    let answering = this.oneTaskSends && this.plan.responderIsLocal ? localResponder : responder;
    for (;;) {
      try {
        // A task reads the event from the run's history (activities/run-event.ts): its input would
        // hold it a second time.
        const reply = await answering.prepareReply(
          answering === localResponder ? { event: this.event, step } : { step },
        );
        this.run.atStep(step.name);
        return await this.answered(ctx, effect, reply);
      } catch (err) {
        const message = errorMessage(err);
        const failed = await records.recordResult({
          effectId: ctx.effectId,
          status: 'failed',
          errorClass: 'responder',
          error: `responder: ${message}`,
        });
        this.run.countAttempts(failed.attempts);
        this.run.setState('failed', {
          step: 'prepareReply',
          lastErrorClass: 'responder',
          lastError: message,
          recommendedAction:
            'fix the responder (RESPONDER_MODULE, RESPONDER_URL or the FAQ file), then reprocess',
        });
        const decision = await this.desk.awaitDecision('failed', ctx);
        if (decision.kind === 'done') return { done: decision.state };
        if (decision.asTask) answering = responder;
      }
    }
  }

  /**
   * The responder's answer as the body to send (its first message), and its later messages; no
   * message is its choice not to reply: the effect is settled as skipped (nothing sent, nothing held
   * back behind it) and the event ends succeeded.
   */
  private async answered(ctx: EffectContext, effect: EffectPlan, reply: PreparedReply): Promise<Prepared> {
    const [firstMessage, ...later] = reply.messages ?? [];
    if (firstMessage) {
      const rest = later.map((body, i) => laterMessage(effect, ctx.step, body, i + 2));
      return {
        body: firstMessage,
        ...(rest.length > 0 ? { answer: { replyKey: ctx.businessKey, rest } } : {}),
      };
    }
    const { text } = reply;
    if (text !== null) return { body: { text } };
    await records.recordResult({ effectId: ctx.effectId, status: 'skipped' });
    this.run.explain('skipped: the responder chose not to reply');
    return { done: 'succeeded' };
  }

  /**
   * The send's gather window: until the source message's occurrence plus TURN_GATHER (at most that
   * long from now, whatever the sender's clock says), for an event of a conversation.
   */
  private gatherUntil(policy: EffectContext['policy']): string | undefined {
    const occurred = Date.parse(this.event.occurredAt ?? '');
    if (!this.oneTaskSends || !this.plan.transition || Number.isNaN(occurred)) return undefined;
    return new Date(Math.min(occurred, Date.now()) + policy.turnGatherMs).toISOString();
  }

  /** One pass of the send protocol, settled: succeeded, or parked as held or failed. */
  private async sendAndSettle(
    send: Sender,
    ctx: EffectContext,
    input: Pick<SendInput, 'body' | 'gatherUntil' | 'ledgerOnSuccess'>,
  ): Promise<Sent> {
    const { run } = this;
    // Runs with one-task sends show `processing` in the status query only: the search attributes
    // change with how the send ends (one upsert, not two, on the happy path).
    if (this.oneTaskSends) run.sendingUnshown();
    else run.setState('processing');
    const outcome = await this.attemptInTurn(send, ctx, input);
    run.countAttempts(outcome.attempts);
    if (outcome.result === 'succeeded') {
      // Runs with one-task sends show the success once, with the final state.
      run.sendSucceeded(!this.oneTaskSends);
      return {
        kind: 'succeeded',
        externalId: outcome.externalId,
        ledgerRecorded: input.ledgerOnSuccess !== undefined,
      };
    }
    if (outcome.result === 'failed') {
      run.setState('failed', {
        lastErrorClass: outcome.errorClass,
        lastError: outcome.error,
        recommendedAction: outcome.fix,
      });
      return { kind: 'failed' };
    }
    run.setState('unknown', { lastErrorClass: 'unknown', lastError: outcome.reason });
    const found = await this.lookUpUnknown(ctx, outcome);
    if (found) return { kind: 'succeeded', externalId: found };
    const held = await records.recordResult({
      effectId: ctx.effectId,
      status: 'held',
      errorClass: 'unknown',
      error: outcome.reason,
    });
    run.countAttempts(held.attempts);
    run.setState('held', {
      recommendedAction: ctx.capabilities.lookup
        ? 'not found by lookup: check the target, then mark-sent (with its id) or resend (needs approval)'
        : 'the target cannot be asked: check it by hand, then mark-sent (with its id) or resend (needs approval)',
    });
    return { kind: 'held' };
  }

  /** Sends in the conversation's order: while an earlier send is pending, waits for the turn. */
  private async attemptInTurn(
    send: Sender,
    ctx: EffectContext,
    input: Pick<SendInput, 'body' | 'gatherUntil' | 'ledgerOnSuccess'>,
  ): Promise<Settled> {
    for (let gather = input.gatherUntil; ; gather = undefined) {
      this.ordering.expectTurn();
      const outcome = await this.attemptSend(
        send,
        { ...input, effectId: ctx.effectId, step: ctx.step, gatherUntil: gather },
        ctx,
      );
      if (outcome.result !== 'wait') return outcome;
      await this.ordering.waitForTurn();
    }
  }

  /** The send activity with its retry policy; a spent budget becomes a failed or unknown outcome. */
  private async attemptSend(send: Sender, input: SendInput, ctx: EffectContext): Promise<SendOutcome> {
    try {
      return await send.send(input);
    } catch (err) {
      // The retry budget is spent (attempts or elapsed time) or the activity failed for good.
      const type =
        err instanceof ActivityFailure && err.cause instanceof ApplicationFailure
          ? err.cause.type
          : undefined;
      const message = errorMessage(err);
      log.warn('send gave up', { workflowId: workflowInfo().workflowId, type });
      const recorded = await records.recordResult({
        effectId: ctx.effectId,
        status: 'failed',
        errorClass: 'retryable',
        error: 'retry budget spent',
      });
      const attempts = recorded.attempts ?? this.run.details.attempts;
      // The row is held already (a run a reset replaced held it): held it stays, for two people.
      const heldElsewhere = recorded.status === 'held' && patched(ADOPT_EFFECT_ROW);
      if (
        !recorded.recorded &&
        (recorded.status === 'sending' || recorded.status === 'unknown' || heldElsewhere)
      ) {
        // The last attempt may have reached the target (its row still says so): that is an unknown
        // outcome, settled by lookup or held for two people, never a plain failure to reprocess.
        return {
          result: 'unknown',
          reason: `retry budget spent while the last attempt's outcome is unknown: ${message}`,
          leaseExpiresAt: new Date(Date.now() + ctx.policy.sendTimeoutMs).toISOString(),
          attempts,
        };
      }
      return {
        result: 'failed',
        errorClass: 'permanent',
        error: `retry budget spent: ${message}`,
        fix:
          type === Failure.RetryableTarget
            ? 'check the target; reprocess when it is healthy'
            : 'see the last error; reprocess when fixed',
        attempts,
      };
    }
  }

  /**
   * Unknown outcome, and the target does not dedupe on our key (the send activity already resends
   * with the same key where it does): look the result up once the owner's lease has expired, and
   * again after the target's consistency delay, because "not found yet" is not proof.
   * @returns the external id when found.
   */
  private async lookUpUnknown(
    ctx: EffectContext,
    outcome: Extract<SendOutcome, { result: 'unknown' }>,
  ): Promise<string | undefined> {
    const { effectId, step, capabilities } = ctx;
    if (!capabilities.lookup) return undefined;
    const leaseLeft = Date.parse(outcome.leaseExpiresAt) - Date.now();
    if (leaseLeft > 0) await sleep(leaseLeft);
    for (const delay of [0, capabilities.consistencyDelayMs]) {
      if (delay > 0) await sleep(delay);
      // A lookup that keeps failing (missing scope, target down) proves nothing either way: hold.
      const found = await lookups.lookup({ effectId, step }).catch((err: unknown) => {
        log.warn('lookup failed', { workflowId: workflowInfo().workflowId, error: errorMessage(err) });
        return { found: false as const };
      });
      if (found.found) {
        await records.recordResult({ effectId, status: 'succeeded', externalId: found.externalId });
        return found.externalId;
      }
    }
    return undefined;
  }
}
