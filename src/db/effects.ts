// Owns: effects
// The effects table's one owner: every change of an effect row's status happens here, through a step
// named as model/send.pml names it, and only from the statuses its entry in EFFECT_STEPS allows.
// Everything else reads rows; nothing else writes `status`. The activities (activities/send.ts,
// activities/effects.ts) turn what these steps report into Temporal outcomes.
import type { ClaimInput, EffectStatus, StepPlan } from '../model';
import { parseTenant } from '../tenants/tenant-id';
import { type Pool, withClient } from './pool';

/**
 * The allowed transitions, one row per step. `succeeded` is evidence and may land late from any open
 * status. `failed` never overwrites `sending`: a spent retry budget says nothing about whether the
 * last attempt reached the target, and `prepareResend` must still see that its outcome is unknown.
 */
const EFFECT_STEPS = {
  /** A send attempt marks the row `sending` under its lease (`sending`/`unknown` only when resend-safe). */
  takeLease: { from: ['claimed', 'retry_wait', 'sending', 'unknown'], to: 'sending' },
  /** An earlier attempt's lease expired without a result, and the target does not dedupe: it may have sent. */
  judgeUnknown: { from: ['sending'], to: 'unknown' },
  /** The lease owner records what the target's answer proves (a retry, a refusal, or an unknown outcome). */
  settleRetry: { from: ['sending'], to: 'retry_wait' },
  settleFailed: { from: ['sending'], to: 'failed' },
  settleUnknown: { from: ['sending'], to: 'unknown' },
  /** The target has it: the send's answer, a lookup, or an operator's mark-sent. */
  recordSuccess: { from: ['claimed', 'sending', 'retry_wait', 'unknown', 'held', 'failed'], to: 'succeeded' },
  /** Nobody can tell whether it was sent: people decide. */
  hold: { from: ['sending', 'unknown'], to: 'held' },
  /** Known not sent and not sendable for now (responder down, retry budget spent on known failures). */
  fail: { from: ['claimed', 'retry_wait', 'failed'], to: 'failed' },
  /** An operator's discard. */
  discard: { from: ['held', 'failed', 'unknown', 'sending'], to: 'discarded' },
  /** The responder chose not to reply, before anything was sent (a first answer, or a reprocess's). */
  skip: { from: ['claimed', 'retry_wait'], to: 'skipped' },
  /** An approved resend or a reprocess, once no attempt holds the lease and none took one since it was read. */
  moveToRetry: { from: ['held', 'failed', 'unknown', 'sending', 'retry_wait'], to: 'retry_wait' },
} as const satisfies Record<string, { from: readonly EffectStatus[]; to: EffectStatus }>;

type EffectStep = keyof typeof EFFECT_STEPS;

/** Takes a new lease on row $1 for $2 ms (if `condition` holds); its token is the row's new attempt count. */
const takeLeaseSql = (
  condition = '',
) => `UPDATE effects SET status = '${EFFECT_STEPS.takeLease.to}', attempts = attempts + 1,
    lease_attempt = attempts + 1, lease_expires_at = now() + $2 * interval '1 millisecond',
    next_attempt_at = NULL, awaiting_turn = false, updated_at = now()
  WHERE id = $1 ${condition} RETURNING attempts, lease_expires_at`;

const leaseFrom = (row: { attempts: number; lease_expires_at: Date }): LeaseResult => ({
  kind: 'lease',
  token: row.attempts,
  expiresAt: row.lease_expires_at,
});

/** What `takeLease` found: a lease to send under, or why this attempt must not send. */
export type LeaseResult =
  | { kind: 'lease'; token: number; expiresAt: Date }
  | { kind: 'succeeded'; externalId: string; attempts: number }
  | { kind: 'unknown'; reason: string; leaseExpiresAt: Date; attempts: number }
  | { kind: 'lease-held'; leftMs: number }
  | { kind: 'not-sendable'; status: EffectStatus }
  | { kind: 'missing' };

/** What a lease owner learnt from the target, to record with `settle`. */
type Settlement =
  | { step: 'settleRetry'; delayMs: number; errorClass: string; error: string }
  | { step: 'settleFailed'; error: string }
  | { step: 'settleUnknown'; error: string };

/** A recorded change: which target, how old the effect was (for the outcome metrics), its attempts so far. */
interface Recorded {
  target: string;
  /** The tenant whose credential the send uses (the step's destination.tenant when it was claimed). */
  tenant?: string;
  ageSeconds: number;
  attempts: number;
}

/** The row as a resend sees it before deciding (prepareResend). */
interface ResendView {
  status: EffectStatus;
  /** Send attempts so far (each lease is one): what a hold is numbered by. */
  attempts: number;
  externalId: string | null;
  leaseExpiresAt: Date | null;
  leaseAttempt: number | null;
  createdAt: Date;
  /** An attempt holds a live lease. */
  leased: boolean;
  /** The lease ended at least the target's consistency delay ago (or there never was one). */
  settled: boolean;
}

type ClaimOutcome =
  | { kind: 'inserted' }
  | { kind: 'existing'; effectId: string; status: EffectStatus; workflowId: string; attempts: number };

const AGE = `EXTRACT(EPOCH FROM now() - created_at)::float8 AS age_seconds`;
/** Statuses that hold a conversation's later sends back: the send has not been settled yet. */
const PENDING = `('claimed', 'sending', 'retry_wait', 'unknown')`;
/** Statuses of an effect that was sent or may yet be: listed, so that a status added later counts as unsent. */
const ANSWERING: readonly EffectStatus[] = [
  'claimed',
  'sending',
  'retry_wait',
  'unknown',
  'held',
  'succeeded',
];

/** The tenant whose credential a step's send uses, when it names a well-formed one. */
function tenantOfStep(step: StepPlan): string | null {
  const tenant = step.destination.tenant;
  return tenant && parseTenant(tenant) ? tenant : null;
}

export type EffectsRepository = ReturnType<typeof createEffectsRepository>;

export function createEffectsRepository(pool: Pool) {
  /**
   * Moves one row by `step` when its status allows it (and `guard` holds), setting `set` as well.
   * @returns the recorded change, or undefined when the row was not in a status the step starts from.
   */
  async function move(
    effectId: string,
    step: EffectStep,
    set: string,
    values: unknown[] = [],
    guard = '',
  ): Promise<Recorded | undefined> {
    const { from, to } = EFFECT_STEPS[step];
    const { rows } = await pool.query<{
      target: string;
      tenant: string | null;
      age_seconds: number;
      attempts: number;
    }>(
      `UPDATE effects SET status = '${to}', ${set ? `${set}, ` : ''}updated_at = now()
        WHERE id = $1 AND status = ANY($2::text[]) ${guard}
        RETURNING target, tenant, attempts, ${AGE}`,
      [effectId, from, ...values],
    );
    const row = rows[0];
    return (
      row && {
        target: row.target,
        ...(row.tenant ? { tenant: row.tenant } : {}),
        ageSeconds: row.age_seconds,
        attempts: row.attempts,
      }
    );
  }

  /** How many earlier sends of the effect's conversation are still pending (0: its turn, or not ordered). */
  async function earlierPending(effectId: string): Promise<number> {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM effects me JOIN effects e ON e.conversation_key = me.conversation_key
        WHERE me.id = $1 AND e.status IN ${PENDING} AND (e.order_key, e.id) < (me.order_key, me.id)`,
      [effectId],
    );
    return rows[0]?.n ?? 0;
  }

  return {
    /** Inserts the effect under its business key, or reports the row that already holds the key. */
    async claim(input: ClaimInput): Promise<ClaimOutcome> {
      const inserted = await pool.query(
        `INSERT INTO effects (id, target, business_key, step, step_index, integration, conversation_id, status,
                              workflow_id, correlation_id, conversation_key, order_key, tenant)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'claimed', $8, $9, $10, $11, $12)
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
          input.order?.conversationKey ?? null,
          input.order?.orderKey ?? null,
          tenantOfStep(input.step),
        ],
      );
      if (inserted.rowCount === 1) return { kind: 'inserted' };
      const { rows } = await pool.query<{
        id: string;
        status: EffectStatus;
        workflow_id: string;
        attempts: number;
      }>('SELECT id, status, workflow_id, attempts FROM effects WHERE target = $1 AND business_key = $2', [
        input.step.target,
        input.businessKey,
      ]);
      const owner = rows[0]!;
      return {
        kind: 'existing',
        effectId: owner.id,
        status: owner.status,
        workflowId: owner.workflow_id,
        attempts: owner.attempts,
      };
    },

    /**
     * In one transaction with the row locked: marks it `sending` under a new lease (its token is the
     * row's attempt counter, its expiry `leaseMs` from now on PostgreSQL's clock), or says why this
     * attempt must not send. `resendSafe(attempt)`: whether that earlier attempt carried an
     * idempotency key the target dedupes on. An expired lease on a target that does not dedupe is
     * judged `unknown` here.
     */
    async takeLease(
      effectId: string,
      leaseMs: number,
      resendSafe: (attempt: number) => boolean,
    ): Promise<LeaseResult> {
      // The common case in one statement: a claimed or retry_wait row has nothing to judge first.
      const fresh = await pool.query<{ attempts: number; lease_expires_at: Date }>(
        takeLeaseSql(`AND status IN ('claimed', 'retry_wait')`),
        [effectId, leaseMs],
      );
      if (fresh.rows[0]) return leaseFrom(fresh.rows[0]);
      return withClient(pool, async (client) => {
        try {
          await client.query('BEGIN');
          const { rows } = await client.query<{
            status: EffectStatus;
            attempts: number;
            external_id: string | null;
            leased: boolean;
            lease_expires_at: Date | null;
          }>(
            'SELECT status, attempts, external_id, lease_expires_at, lease_expires_at > now() AS leased FROM effects WHERE id = $1 FOR UPDATE',
            [effectId],
          );
          const row = rows[0];
          if (!row) {
            await client.query('ROLLBACK');
            return { kind: 'missing' };
          }
          const unknown = (reason: string): LeaseResult => ({
            kind: 'unknown',
            reason,
            leaseExpiresAt: row.lease_expires_at ?? new Date(),
            attempts: row.attempts,
          });
          switch (row.status) {
            case 'succeeded':
              await client.query('COMMIT');
              return { kind: 'succeeded', externalId: row.external_id ?? '', attempts: row.attempts };
            case 'sending':
              if (row.leased) {
                // A previous attempt may still be running (a stalled worker): wait for its lease to end.
                await client.query('ROLLBACK');
                return {
                  kind: 'lease-held',
                  leftMs: Math.max((row.lease_expires_at?.getTime() ?? Date.now()) - Date.now(), 0),
                };
              }
              if (!resendSafe(row.attempts)) {
                // The earlier attempt may have reached the target: its outcome is unknown.
                await client.query(
                  `UPDATE effects SET status = '${EFFECT_STEPS.judgeUnknown.to}', updated_at = now() WHERE id = $1`,
                  [effectId],
                );
                await client.query('COMMIT');
                return unknown(
                  'an earlier attempt ended without recording its result: it may have been sent',
                );
              }
              break;
            case 'unknown':
              if (!resendSafe(row.attempts)) {
                await client.query('COMMIT');
                return unknown('the outcome of an earlier attempt is unknown');
              }
              break;
            case 'claimed':
            case 'retry_wait':
              break;
            default:
              await client.query('ROLLBACK');
              return { kind: 'not-sendable', status: row.status };
          }
          const taken = await client.query<{ attempts: number; lease_expires_at: Date }>(takeLeaseSql(), [
            effectId,
            leaseMs,
          ]);
          await client.query('COMMIT');
          return leaseFrom(taken.rows[0]!);
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw err;
        }
      });
    },

    /** Checks the lease: ms left on PostgreSQL's clock, or 0 when this attempt no longer owns it. */
    async leaseLeft(effectId: string, token: number): Promise<number> {
      const { rows } = await pool.query<{ left_ms: number }>(
        `SELECT EXTRACT(EPOCH FROM (lease_expires_at - now())) * 1000 AS left_ms FROM effects
          WHERE id = $1 AND status = 'sending' AND lease_attempt = $2`,
        [effectId, token],
      );
      return Math.max(0, Number(rows[0]?.left_ms ?? 0));
    },

    /** The lease owner records the target's answer and ends its lease; a no-op once it lost the lease. */
    async settle(effectId: string, token: number, settlement: Settlement): Promise<void> {
      const guard = 'AND lease_attempt = $3';
      switch (settlement.step) {
        case 'settleRetry':
          await move(
            effectId,
            'settleRetry',
            `lease_expires_at = now(), next_attempt_at = now() + $4 * interval '1 millisecond',
             last_error_class = $5, last_error = $6`,
            [token, settlement.delayMs, settlement.errorClass, settlement.error],
            guard,
          );
          return;
        case 'settleFailed':
          await move(
            effectId,
            'settleFailed',
            `lease_expires_at = now(), last_error_class = 'permanent', last_error = $4`,
            [token, settlement.error],
            guard,
          );
          return;
        case 'settleUnknown':
          await move(
            effectId,
            'settleUnknown',
            `lease_expires_at = now(), last_error_class = 'unknown', last_error = $4`,
            [token, settlement.error],
            guard,
          );
          return;
      }
    },

    /**
     * Records that the target has the effect, with its id, whatever happened to the lease meanwhile:
     * it is evidence, never a reason to send. The one place a row becomes `succeeded`.
     */
    recordSuccess(effectId: string, externalId: string): Promise<Recorded | undefined> {
      return move(
        effectId,
        'recordSuccess',
        'external_id = $3, completed_at = now(), lease_expires_at = now()',
        [externalId],
      );
    },

    /** Unknown and not found: held for people. */
    hold(effectId: string, errorClass: string, error: string): Promise<Recorded | undefined> {
      return move(effectId, 'hold', 'last_error_class = $3, last_error = $4, lease_expires_at = now()', [
        errorClass,
        error,
      ]);
    },

    fail(effectId: string, errorClass: string, error: string): Promise<Recorded | undefined> {
      return move(effectId, 'fail', 'last_error_class = $3, last_error = $4', [errorClass, error]);
    },

    discard(effectId: string): Promise<Recorded | undefined> {
      return move(effectId, 'discard', 'completed_at = now()');
    },

    skip(effectId: string): Promise<Recorded | undefined> {
      return move(effectId, 'skip', 'completed_at = now()');
    },

    /** Before a resend: the row, with whether a lease is live and whether a lookup can now be exact. */
    async readForResend(effectId: string, consistencyDelayMs: number): Promise<ResendView | undefined> {
      const { rows } = await pool.query<{
        status: EffectStatus;
        attempts: number;
        external_id: string | null;
        leased: boolean;
        settled: boolean;
        lease_expires_at: Date | null;
        lease_attempt: number | null;
        created_at: Date;
      }>(
        `SELECT status, attempts, external_id, lease_expires_at, lease_expires_at > now() AS leased, lease_attempt, created_at,
                COALESCE(lease_expires_at + $2 * interval '1 millisecond' <= now(), true) AS settled
           FROM effects WHERE id = $1`,
        [effectId, consistencyDelayMs],
      );
      const row = rows[0];
      return (
        row && {
          status: row.status,
          attempts: row.attempts,
          externalId: row.external_id,
          leaseExpiresAt: row.lease_expires_at,
          leaseAttempt: row.lease_attempt,
          createdAt: row.created_at,
          leased: row.leased,
          settled: row.settled,
        }
      );
    },

    /**
     * Moves the row back to `retry_wait` for a resend, only if no attempt holds the lease and none
     * took one since the row was read (`leaseAttempt` as read), nor since the hold the decision
     * answered (`holdAttempts`, when given): one decision, at most one resend.
     * @returns whether it moved.
     */
    async moveToRetry(
      effectId: string,
      leaseAttempt: number | null,
      holdAttempts?: number,
    ): Promise<boolean> {
      const moved = await move(
        effectId,
        'moveToRetry',
        '',
        [leaseAttempt, holdAttempts ?? null],
        `AND (lease_expires_at IS NULL OR lease_expires_at <= now()) AND lease_attempt IS NOT DISTINCT FROM $3
         AND ($4::int IS NULL OR attempts = $4)`,
      );
      return moved !== undefined;
    },

    earlierPending,

    /**
     * The send gives up waiting inside its attempt: its workflow will wait to be told. Marked first,
     * checked after, so that an earlier send settling meanwhile either is seen here or sees the mark.
     * @returns how many earlier sends are still pending (0: go on after all).
     */
    async awaitTurn(effectId: string): Promise<number> {
      await pool.query('UPDATE effects SET awaiting_turn = true WHERE id = $1', [effectId]);
      return earlierPending(effectId);
    },

    /**
     * Once this effect no longer holds its conversation back: the workflow of the conversation's
     * earliest pending send, when that one waits to be told (see awaitTurn) and is not this effect's own.
     */
    async nextInLine(effectId: string): Promise<string | undefined> {
      const { rows } = await pool.query<{
        workflow_id: string;
        status: EffectStatus;
        awaiting_turn: boolean;
        mine: string;
      }>(
        `SELECT e.workflow_id, e.status, e.awaiting_turn, me.workflow_id AS mine
           FROM effects me JOIN effects e ON e.conversation_key = me.conversation_key
          WHERE me.id = $1 AND e.status IN ${PENDING}
          ORDER BY e.order_key, e.id LIMIT 1`,
        [effectId],
      );
      const next = rows[0];
      return next?.status === 'claimed' && next.awaiting_turn && next.workflow_id !== next.mine
        ? next.workflow_id
        : undefined;
    },

    /** Held rows last changed before `before`: what operators should be deciding. */
    async heldSince(
      before: Date,
    ): Promise<{ effectId: string; workflowId: string; businessKey: string; status: EffectStatus }[]> {
      const { rows } = await pool.query<{
        id: string;
        workflow_id: string;
        business_key: string;
        status: EffectStatus;
      }>(
        `SELECT id, workflow_id, business_key, status FROM effects
          WHERE status = 'held' AND updated_at < $1 ORDER BY updated_at`,
        [before],
      );
      return rows.map((r) => ({
        effectId: r.id,
        workflowId: r.workflow_id,
        businessKey: r.business_key,
        status: r.status,
      }));
    },

    /**
     * How many effects are in each of `statuses`, and how long ago the oldest of them was last moved
     * by a step (only the steps above set `updated_at`): for held work, how long it has waited for a
     * person. Statuses without rows are left out.
     */
    async openByStatus(
      statuses: readonly EffectStatus[],
    ): Promise<Map<EffectStatus, { count: number; oldestSeconds: number }>> {
      const { rows } = await pool.query<{ status: EffectStatus; count: string; oldest_seconds: number }>(
        `SELECT status, count(*) AS count, EXTRACT(EPOCH FROM now() - min(updated_at))::float8 AS oldest_seconds
           FROM effects WHERE status = ANY($1::text[]) GROUP BY status`,
        [statuses],
      );
      return new Map(
        rows.map((r) => [r.status, { count: Number(r.count), oldestSeconds: Math.max(0, r.oldest_seconds) }]),
      );
    },

    /** When the effect was claimed: lookups scan the target's history from there. */
    async claimedAt(effectId: string): Promise<Date | undefined> {
      const { rows } = await pool.query<{ created_at: Date }>(
        'SELECT created_at FROM effects WHERE id = $1',
        [effectId],
      );
      return rows[0]?.created_at;
    },

    async status(effectId: string): Promise<{ status: EffectStatus; attempts: number } | undefined> {
      const { rows } = await pool.query<{ status: EffectStatus; attempts: number }>(
        'SELECT status, attempts FROM effects WHERE id = $1',
        [effectId],
      );
      return rows[0];
    },

    /**
     * Whether the effect under this business key was sent or is on its way (claimed, sending, retrying,
     * unknown, held: it may be in the channel): the default Slack route's "a thread the bot is in"
     * (src/routes.ts answersByDefault). Failed, discarded or any other settled-unsent row says the bot
     * stayed out. One probe of the (target, business_key) unique index, as cheap as a read gets.
     */
    async answering(target: string, businessKey: string): Promise<boolean> {
      const { rows } = await pool.query(
        `SELECT 1 FROM effects WHERE target = $1 AND business_key = $2 AND status = ANY($3::text[])`,
        [target, businessKey, ANSWERING],
      );
      return rows.length > 0;
    },

    /** `sending` rows whose lease expired more than `slackMs` ago (or never had one): reconcile's report. */
    async expiredLeases(
      slackMs: number,
    ): Promise<{ effectId: string; workflowId: string; businessKey: string; leaseExpiresAt: Date | null }[]> {
      const { rows } = await pool.query<{
        id: string;
        workflow_id: string;
        business_key: string;
        lease_expires_at: Date | null;
      }>(
        `SELECT id, workflow_id, business_key, lease_expires_at FROM effects
          WHERE status = 'sending' AND (lease_expires_at IS NULL OR lease_expires_at < now() - $1 * interval '1 millisecond')
          ORDER BY lease_expires_at NULLS FIRST`,
        [slackMs],
      );
      return rows.map((r) => ({
        effectId: r.id,
        workflowId: r.workflow_id,
        businessKey: r.business_key,
        leaseExpiresAt: r.lease_expires_at,
      }));
    },

    /** The effect rows a workflow owns, and the row of its business key when another workflow owns it. */
    async viewsOf(workflowId: string, businessKey?: string): Promise<EffectView[]> {
      const { rows } = await pool.query(
        `SELECT id, target, business_key, step, status, attempts, last_error_class, last_error, external_id,
                workflow_id, lease_expires_at, created_at, updated_at, completed_at
           FROM effects
          WHERE workflow_id = $1 OR ($2::text IS NOT NULL AND business_key = $2)
          ORDER BY created_at, step_index`,
        [workflowId, businessKey ?? null],
      );
      const iso = (d: Date | null) => d?.toISOString() ?? null;
      return rows.map((r) => ({
        id: r.id,
        target: r.target,
        businessKey: r.business_key,
        step: r.step,
        status: r.status,
        attempts: r.attempts,
        lastErrorClass: r.last_error_class,
        lastError: r.last_error,
        externalId: r.external_id,
        workflowId: r.workflow_id,
        leaseExpiresAt: iso(r.lease_expires_at),
        createdAt: iso(r.created_at)!,
        updatedAt: iso(r.updated_at)!,
        completedAt: iso(r.completed_at),
      }));
    },
  };
}

/** An effect row as operators see it; `last_error` is a classified summary, never message text. */
export interface EffectView {
  id: string;
  target: string;
  businessKey: string;
  step: string;
  status: string;
  attempts: number;
  lastErrorClass: string | null;
  lastError: string | null;
  externalId: string | null;
  workflowId: string;
  leaseExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}
