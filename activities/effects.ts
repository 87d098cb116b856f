// Effects under their business keys: claiming, recording results, and re-checking before a resend.
// Every status change is a conditional UPDATE, so no step can overwrite a state it did not expect.
import { ApplicationFailure } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import type { ClaimInput, ClaimResult, EffectStatus, StepPlan } from './types';

export type ResultInput =
  | { effectId: string; status: 'succeeded'; externalId: string; manual?: boolean }
  | { effectId: string; status: 'held' | 'failed'; errorClass: string; error: string }
  | { effectId: string; status: 'discarded'; manual: true };

/**
 * From which statuses each result may be recorded. `succeeded` is evidence and may land late.
 * `failed` never overwrites `sending`: a spent retry budget says nothing about whether the last
 * attempt reached the target, and prepareResend must still see that its outcome is unknown.
 */
const RECORDABLE_FROM: Record<ResultInput['status'], EffectStatus[]> = {
  succeeded: ['claimed', 'sending', 'retry_wait', 'unknown', 'held', 'failed'],
  held: ['sending', 'unknown'],
  failed: ['claimed', 'retry_wait', 'failed'],
  discarded: ['held', 'failed', 'unknown', 'sending'],
};

export type ResendCheck =
  | { kind: 'ready' }
  | { kind: 'already-sent'; externalId: string }
  | { kind: 'wait'; detail: string };

export function effectActivities({ pool, targets, metrics }: ActivityDeps) {
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
          'UnknownTargetError',
        );
      }
      const inserted = await pool.query(
        `INSERT INTO effects (id, target, business_key, step, step_index, integration, conversation_id, status, workflow_id, correlation_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'claimed', $8, $9)
         ON CONFLICT (target, business_key) DO NOTHING`,
        [
          input.effectId,
          input.step.target,
          input.businessKey,
          input.step.name,
          input.stepIndex,
          input.integration,
          input.conversationId ?? null,
          input.workflowId,
          input.correlationId,
        ],
      );
      if (inserted.rowCount === 1)
        return {
          kind: 'owned',
          effectId: input.effectId,
          status: 'claimed',
          capabilities: target.capabilities,
        };
      const { rows } = await pool.query<{ id: string; status: EffectStatus; workflow_id: string }>(
        'SELECT id, status, workflow_id FROM effects WHERE target = $1 AND business_key = $2',
        [input.step.target, input.businessKey],
      );
      const owner = rows[0]!;
      if (owner.workflow_id === input.workflowId) {
        return { kind: 'owned', effectId: owner.id, status: owner.status, capabilities: target.capabilities };
      }
      return { kind: 'duplicate', ownerWorkflowId: owner.workflow_id, ownerStatus: owner.status };
    },

    async recordResult(input: ResultInput): Promise<{ recorded: boolean; status: EffectStatus }> {
      const { rows } = await pool.query<{ status: EffectStatus; target: string; age_seconds: number }>(
        `UPDATE effects SET status = $2,
                external_id = COALESCE($3, external_id),
                last_error_class = COALESCE($4, last_error_class),
                last_error = COALESCE($5, last_error),
                completed_at = CASE WHEN $2 IN ('succeeded', 'discarded') THEN now() ELSE completed_at END,
                lease_expires_at = CASE WHEN $2 = 'held' THEN now() ELSE lease_expires_at END,
                updated_at = now()
          WHERE id = $1 AND status = ANY($6::text[])
          RETURNING status, target, EXTRACT(EPOCH FROM now() - created_at)::float8 AS age_seconds`,
        [
          input.effectId,
          input.status,
          input.status === 'succeeded' ? input.externalId : null,
          'errorClass' in input ? input.errorClass : null,
          'error' in input ? input.error : null,
          RECORDABLE_FROM[input.status],
        ],
      );
      if (rows[0]) {
        const by = 'manual' in input && input.manual ? 'operator' : 'worker';
        metrics.outcome(rows[0].target, input.status, by, rows[0].age_seconds);
        return { recorded: true, status: rows[0].status };
      }
      const current = await pool.query<{ status: EffectStatus }>('SELECT status FROM effects WHERE id = $1', [
        input.effectId,
      ]);
      return { recorded: false, status: current.rows[0]?.status ?? 'discarded' };
    },

    /**
     * Before any resend (approved or reprocess): re-read the row, look the result up again, and move
     * the row back to retry_wait only with a conditional UPDATE once no attempt holds the lease and
     * none took one since the row was read. A row still `sending` or `unknown` (the retry budget ran
     * out on an outcome nobody judged) is resent only when a lookup can prove it absent: the target
     * has one, and the lease expired at least the consistency delay ago.
     */
    async prepareResend(input: { effectId: string; step: StepPlan }): Promise<ResendCheck> {
      const target = targets.get(input.step.target);
      const { rows } = await pool.query<{
        status: EffectStatus;
        external_id: string | null;
        leased: boolean;
        settled: boolean;
        lease_expires_at: Date | null;
        lease_attempt: number | null;
        created_at: Date;
      }>(
        `SELECT status, external_id, lease_expires_at, lease_expires_at > now() AS leased, lease_attempt, created_at,
                COALESCE(lease_expires_at + $2 * interval '1 millisecond' <= now(), true) AS settled
           FROM effects WHERE id = $1`,
        [input.effectId, target?.capabilities.consistencyDelayMs ?? 0],
      );
      const row = rows[0];
      if (!row)
        throw ApplicationFailure.nonRetryable(
          `effect ${input.effectId} does not exist`,
          'EffectMissingError',
        );
      if (row.status === 'succeeded')
        return { kind: 'already-sent', externalId: row.external_id ?? '(unknown id)' };
      if (row.status === 'sending' && row.leased) {
        return {
          kind: 'wait',
          detail: `a send attempt holds the lease until ${row.lease_expires_at?.toISOString()}; try again after it`,
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
            notBefore: row.created_at,
          })
          .catch((err: unknown) => ({ failed: err instanceof Error ? err.message : String(err) }));
        // Without an answer from the lookup, a resend could double the effect: refuse, and say why.
        if ('failed' in found)
          return { kind: 'wait', detail: `could not look the result up (${found.failed}); try again later` };
        if (found.found) {
          const settled = await pool.query<{ age_seconds: number }>(
            `UPDATE effects SET status = 'succeeded', external_id = $2, completed_at = now(), updated_at = now()
              WHERE id = $1 AND status <> 'succeeded'
              RETURNING EXTRACT(EPOCH FROM now() - created_at)::float8 AS age_seconds`,
            [input.effectId, found.externalId],
          );
          // An operator's resend or reprocess found it already there: settled by that decision.
          if (settled.rows[0])
            metrics.outcome(input.step.target, 'succeeded', 'operator', settled.rows[0].age_seconds);
          return { kind: 'already-sent', externalId: found.externalId };
        }
      }
      const moved = await pool.query(
        `UPDATE effects SET status = 'retry_wait', updated_at = now()
          WHERE id = $1 AND status IN ('held', 'failed', 'unknown', 'sending', 'retry_wait')
            AND (lease_expires_at IS NULL OR lease_expires_at <= now())
            AND lease_attempt IS NOT DISTINCT FROM $2`,
        [input.effectId, row.lease_attempt],
      );
      return moved.rowCount === 1
        ? { kind: 'ready' }
        : { kind: 'wait', detail: 'the effect changed meanwhile; look at it again' };
    },
  };
}
