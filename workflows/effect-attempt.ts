// One effect of an event, step by step: claim the business key, prepare the body once, send it through
// the lease-guarded protocol (activities/send.ts, model/send.pml) while holding the conversation's
// turn, settle an unknown outcome by lookup, and hand held or failed work to the operator desk.
import { ActivityFailure, ApplicationFailure, log, sleep, uuid4, workflowInfo } from '@temporalio/workflow';
import { errorMessage, Failure } from '../src/failures';
import type { EffectPlan, SendInput, SendOutcome, StepPlan } from '../src/model';
import type { InboundEvent } from '../src/providers/types';
import { lookups, records, responder, type Sender, sender } from './activity-stubs';
import type { EffectContext } from './effect-context';
import type { ReplyState } from './messages';
import type { OperatorDesk } from './operator-desk';
import type { RunView } from './run-view';
import type { TurnClient } from './turn-client';

type Sent = { kind: 'succeeded'; externalId: string } | { kind: 'held' | 'failed' };

export class EffectAttempt {
  constructor(
    private readonly event: InboundEvent,
    private readonly run: RunView,
    private readonly desk: OperatorDesk,
    private readonly turns: TurnClient,
    private readonly bookkeeping: typeof records,
  ) {}

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
    const businessKey = effect.steps.length > 1 ? `${effect.businessKey}#${step.name}` : effect.businessKey;
    const { details } = this.run;
    details.step = step.name;
    // Claim the business key. A conflict is not "done": the owner's row decides.
    const claim = await this.bookkeeping.claimEffect({
      effectId: uuid4(),
      workflowId: workflowInfo().workflowId,
      correlationId: this.event.correlationId,
      integration: effect.integration,
      businessKey,
      conversationId: effect.conversationId,
      step,
      stepIndex,
    });
    if (claim.kind === 'duplicate') {
      this.run.settled({ businessKey, ownerWorkflowId: claim.ownerWorkflowId });
      details.ownerWorkflowId = claim.ownerWorkflowId;
      details.reason = `business key owned by ${claim.ownerWorkflowId} (${claim.ownerStatus})`;
      return 'duplicate';
    }
    const ctx: EffectContext = {
      effectId: claim.effectId,
      step,
      businessKey,
      policy,
      capabilities: claim.capabilities,
    };
    details.effectId = ctx.effectId;
    if (claim.status === 'succeeded') {
      this.run.settled({ businessKey, effectId: ctx.effectId });
      return 'succeeded';
    }
    // The responder answers once; every attempt sends these same bytes.
    const prepared = await this.prepareBody(ctx);
    if ('done' in prepared) {
      if (prepared.done === 'succeeded') this.run.settled({ businessKey, effectId: ctx.effectId });
      return prepared.done;
    }
    const send = sender(policy);
    for (;;) {
      const sent = await this.turns.withTurn(() => this.sendAndSettle(send, ctx, prepared.body));
      const decision =
        sent.kind === 'succeeded'
          ? ({ kind: 'done', state: 'succeeded', externalId: sent.externalId } as const)
          : await this.desk.awaitDecision(sent.kind, ctx);
      if (decision.kind === 'done') {
        if (decision.state === 'succeeded')
          this.run.settled({ businessKey, effectId: ctx.effectId, externalId: decision.externalId });
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
  private async prepareBody(ctx: EffectContext): Promise<{ body: SendInput['body'] } | { done: ReplyState }> {
    const { step } = ctx;
    if (step.content.kind === 'payload') return { body: { json: step.content.body } };
    for (;;) {
      try {
        const { text } = await responder.prepareReply({ event: this.event, step });
        this.run.details.step = step.name;
        return { body: { text } };
      } catch (err) {
        const message = errorMessage(err);
        await records.recordResult({
          effectId: ctx.effectId,
          status: 'failed',
          errorClass: 'responder',
          error: `responder: ${message}`,
        });
        this.run.setState('failed', {
          step: 'prepareReply',
          lastErrorClass: 'responder',
          lastError: message,
          recommendedAction: 'fix the responder (RESPONDER_URL or the FAQ file), then reprocess',
        });
        const decision = await this.desk.awaitDecision('failed', ctx);
        if (decision.kind === 'done') return { done: decision.state };
      }
    }
  }

  /** One pass of the send protocol, settled: succeeded, or parked as held or failed. */
  private async sendAndSettle(send: Sender, ctx: EffectContext, body: SendInput['body']): Promise<Sent> {
    const { run } = this;
    run.setState('processing');
    const outcome = await this.attemptSend(send, ctx, body);
    run.details.attempts = outcome.attempts;
    if (outcome.result === 'succeeded') {
      run.setState('processing', { lastErrorClass: undefined, recommendedAction: undefined });
      return { kind: 'succeeded', externalId: outcome.externalId };
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
    await records.recordResult({
      effectId: ctx.effectId,
      status: 'held',
      errorClass: 'unknown',
      error: outcome.reason,
    });
    run.setState('held', {
      recommendedAction: ctx.capabilities.lookup
        ? 'not found by lookup: check the target, then mark-sent (with its id) or resend (needs approval)'
        : 'the target cannot be asked: check it by hand, then mark-sent (with its id) or resend (needs approval)',
    });
    return { kind: 'held' };
  }

  /** The send activity with its retry policy; a spent budget becomes a failed or unknown outcome. */
  private async attemptSend(send: Sender, ctx: EffectContext, body: SendInput['body']): Promise<SendOutcome> {
    try {
      return await send.send({ effectId: ctx.effectId, step: ctx.step, body });
    } catch (err) {
      // The retry budget is spent (attempts or elapsed time) or the activity failed for good.
      const type =
        err instanceof ActivityFailure && err.cause instanceof ApplicationFailure
          ? err.cause.type
          : undefined;
      const message = errorMessage(err);
      const attempts = this.run.details.attempts;
      log.warn('send gave up', { workflowId: workflowInfo().workflowId, type });
      const recorded = await records.recordResult({
        effectId: ctx.effectId,
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
