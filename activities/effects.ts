// Effects under their business keys, as the workflow asks for them: claim the key, record a result
// the workflow decided (held, failed, discarded, or found sent), and re-check before a resend. Every
// status change goes through src/db/effects.ts, which allows only the transitions in its table.
import { ApplicationFailure } from '@temporalio/activity';
import { errorMessage, Failure } from '../src/failures';
import type { ClaimInput, ClaimResult, EffectStatus, ResendCheck, StepPlan } from '../src/model';
import type { ActivityDeps } from './deps';
import { tellNextInLine } from './next-in-line';

export type ResultInput =
  | { effectId: string; status: 'succeeded'; externalId: string; manual?: boolean }
  | { effectId: string; status: 'held' | 'failed'; errorClass: string; error: string }
  /** By an operator (`manual`), or by the run itself when nothing can be sent any more. */
  | { effectId: string; status: 'discarded'; manual?: boolean }
  /** The responder chose not to reply. */
  | { effectId: string; status: 'skipped' };

export function effectActivities({ effects, targets, metrics }: ActivityDeps) {
  function record(input: ResultInput) {
    switch (input.status) {
      case 'succeeded':
        return effects.recordSuccess(input.effectId, input.externalId);
      case 'held':
        return effects.hold(input.effectId, input.errorClass, input.error);
      case 'failed':
        return effects.fail(input.effectId, input.errorClass, input.error);
      case 'discarded':
        return effects.discard(input.effectId);
      case 'skipped':
        return effects.skip(input.effectId);
    }
  }

  return {
    /**
     * Claims the business key for this workflow. A conflict is not "done": the existing row decides —
     * ours (an earlier attempt) → carry on from its status; another workflow's → duplicate.
     */
    async claimEffect(input: ClaimInput): Promise<ClaimResult> {
      const target = targets.get(input.step.target);
      if (!target) {
        throw ApplicationFailure.nonRetryable(
          `no target named "${input.step.target}" is configured`,
          Failure.UnknownTarget,
        );
      }
      const claim = await effects.claim(input);
      if (claim.kind === 'inserted')
        return {
          kind: 'owned',
          effectId: input.effectId,
          status: 'claimed',
          capabilities: target.capabilities,
        };
      if (claim.workflowId === input.workflowId)
        return {
          kind: 'owned',
          effectId: claim.effectId,
          status: claim.status,
          capabilities: target.capabilities,
          attempts: claim.attempts,
        };
      return { kind: 'duplicate', ownerWorkflowId: claim.workflowId, ownerStatus: claim.status };
    },

    /**
     * Records a result when the row's status allows it; otherwise reports the status it has. A
     * recorded result settles the effect for its conversation: the next send waiting there is told.
     * `attempts`: the row's send attempts so far, which number the hold a decision will answer.
     */
    async recordResult(
      input: ResultInput,
    ): Promise<{ recorded: boolean; status: EffectStatus; attempts?: number }> {
      const recorded = await record(input);
      if (recorded) {
        const by = 'manual' in input && input.manual ? 'operator' : 'worker';
        metrics.outcome(recorded, input.status, by, recorded.ageSeconds);
        await tellNextInLine(effects, input.effectId);
        return { recorded: true, status: input.status, attempts: recorded.attempts };
      }
      const row = await effects.status(input.effectId);
      return { recorded: false, status: row?.status ?? 'discarded', attempts: row?.attempts };
    },

    /**
     * Before any resend (approved or reprocess): re-read the row, look the result up again, and move
     * the row back to retry_wait only once no attempt holds the lease and none took one since the row
     * was read. A row still `sending` or `unknown` (the retry budget ran out on an outcome nobody
     * judged) is resent only when a lookup can prove it absent: the target has one, and the lease
     * expired at least the consistency delay ago. `holdAttempts`: the attempts of the hold the
     * decision answered; a row with more attempts (an attempt since) is not moved: `moved`.
     */
    async prepareResend(input: {
      effectId: string;
      step: StepPlan;
      holdAttempts?: number;
    }): Promise<ResendCheck> {
      const target = targets.get(input.step.target);
      const row = await effects.readForResend(input.effectId, target?.capabilities.consistencyDelayMs ?? 0);
      if (!row)
        throw ApplicationFailure.nonRetryable(
          `effect ${input.effectId} does not exist`,
          Failure.EffectMissing,
        );
      if (row.status === 'succeeded')
        return { kind: 'already-sent', externalId: row.externalId ?? '(unknown id)' };
      if (
        input.holdAttempts !== undefined &&
        (row.attempts !== input.holdAttempts || row.status === 'discarded')
      )
        return { kind: 'moved', status: row.status, attempts: row.attempts };
      if (row.status === 'sending' && row.leased) {
        return {
          kind: 'wait',
          detail: `a send attempt holds the lease until ${row.leaseExpiresAt?.toISOString()}; try again after it`,
        };
      }
      if ((row.status === 'sending' || row.status === 'unknown') && !(target?.lookup && row.settled)) {
        return {
          kind: 'wait',
          detail: target?.lookup
            ? 'the last attempt may have reached the target: try again once its consistency delay has passed'
            : 'the last attempt may have reached the target, which cannot be asked: check it by hand, then mark-sent or discard',
        };
      }
      if (target?.lookup) {
        const found = await target
          .lookup({
            effectId: input.effectId,
            step: input.step,
            signal: AbortSignal.timeout(20_000),
            notBefore: row.createdAt,
          })
          .catch((err: unknown) => ({ failed: errorMessage(err) }));
        // Without an answer from the lookup, a resend could double the effect: refuse, and say why.
        if ('failed' in found)
          return { kind: 'wait', detail: `could not look the result up (${found.failed}); try again later` };
        if (found.found) {
          // An operator's resend or reprocess found it already there: settled by that decision.
          const recorded = await effects.recordSuccess(input.effectId, found.externalId);
          if (recorded) metrics.outcome(recorded, 'succeeded', 'operator', recorded.ageSeconds);
          return { kind: 'already-sent', externalId: found.externalId };
        }
      }
      return (await effects.moveToRetry(input.effectId, row.leaseAttempt, input.holdAttempts))
        ? { kind: 'ready' }
        : { kind: 'wait', detail: 'the effect changed meanwhile; look at it again' };
    },
  };
}
