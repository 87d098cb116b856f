// The send protocol (DESIGN.md §3 step 5-6), in one activity: take the `sending` lease, check it
// immediately before writing the request, call the target with our effect id as idempotency key,
// and record what the target's answer proves. An outcome we cannot know is never retried blindly.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { TargetError } from '../src/targets/types';
import type { ActivityDeps } from './deps';
import type { EffectStatus, LookupOutcome, SendInput, SendOutcome, StepPlan } from './types';

/** The lease ends this long before Temporal's start-to-close timeout, so a retry finds it expired. */
const LEASE_MARGIN_MS = 1000;
/** The lease must still have this long to run when the request is written. */
const WRITE_MARGIN_MS = 200;

/** Exponential backoff from 1 s, capped at 10 min, never sooner than Retry-After, plus up to 20 % jitter (Temporal adds none). */
export function retryDelayMs(attempt: number, retryAfterMs?: number, random = Math.random): number {
  const exponential = Math.min(1000 * 2 ** Math.max(0, attempt - 1), 600_000);
  const base = Math.max(exponential, retryAfterMs ?? 0);
  return Math.round(base + base * 0.2 * random());
}

type Lease = { kind: 'lease'; token: number; expiresAt: Date } | { kind: 'outcome'; outcome: SendOutcome };

export function sendActivities({ pool, targets, logger, metrics }: ActivityDeps) {
  /**
   * Marks the row `sending` under a new lease, or says why this attempt must not send.
   * `resendSafe(attempt)`: whether that earlier attempt carried an idempotency key the target dedupes on.
   */
  async function takeLease(
    effectId: string,
    leaseMs: number,
    resendSafe: (attempt: number) => boolean,
  ): Promise<Lease> {
    const client = await pool.connect();
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
      if (!row)
        throw ApplicationFailure.nonRetryable(`effect ${effectId} does not exist`, 'EffectMissingError');
      const unknown = (reason: string): Lease => ({
        kind: 'outcome',
        outcome: {
          result: 'unknown',
          reason,
          leaseExpiresAt: (row.lease_expires_at ?? new Date()).toISOString(),
          attempts: row.attempts,
        },
      });
      switch (row.status) {
        case 'succeeded':
          await client.query('COMMIT');
          return {
            kind: 'outcome',
            outcome: { result: 'succeeded', externalId: row.external_id ?? '', attempts: row.attempts },
          };
        case 'sending':
          if (row.leased) {
            // A previous attempt may still be running (stalled worker): wait for its lease to end.
            await client.query('ROLLBACK');
            const leftMs = (row.lease_expires_at?.getTime() ?? Date.now()) - Date.now();
            throw ApplicationFailure.create({
              message: 'an earlier send attempt still holds the lease',
              type: 'LeaseHeldError',
              nextRetryDelay: Math.max(leftMs, 0) + LEASE_MARGIN_MS,
            });
          }
          if (!resendSafe(row.attempts)) {
            // The earlier attempt may have reached the target: its outcome is unknown.
            await client.query(`UPDATE effects SET status = 'unknown', updated_at = now() WHERE id = $1`, [
              effectId,
            ]);
            await client.query('COMMIT');
            return unknown('an earlier attempt ended without recording its result: it may have been sent');
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
          throw ApplicationFailure.nonRetryable(
            `effect is ${row.status}: not sendable`,
            'EffectNotSendableError',
          );
      }
      const taken = await client.query<{ attempts: number; lease_expires_at: Date }>(
        `UPDATE effects SET status = 'sending', attempts = attempts + 1, lease_attempt = attempts + 1,
                lease_expires_at = now() + $2 * interval '1 millisecond', next_attempt_at = NULL, updated_at = now()
          WHERE id = $1 RETURNING attempts, lease_expires_at`,
        [effectId, leaseMs],
      );
      await client.query('COMMIT');
      return { kind: 'lease', token: taken.rows[0]!.attempts, expiresAt: taken.rows[0]!.lease_expires_at };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  /** Remaining lease in ms (PostgreSQL's clock), or 0 when this attempt no longer owns it. */
  async function leaseLeft(effectId: string, token: number): Promise<number> {
    const { rows } = await pool.query<{ left_ms: number }>(
      `SELECT EXTRACT(EPOCH FROM (lease_expires_at - now())) * 1000 AS left_ms FROM effects
        WHERE id = $1 AND status = 'sending' AND lease_attempt = $2`,
      [effectId, token],
    );
    return Math.max(0, Number(rows[0]?.left_ms ?? 0));
  }

  /** Updates the row only while this attempt still owns it. */
  async function settle(effectId: string, token: number, set: string, values: unknown[] = []): Promise<void> {
    await pool.query(
      `UPDATE effects SET ${set}, updated_at = now() WHERE id = $1 AND lease_attempt = $2 AND status = 'sending'`,
      [effectId, token, ...values],
    );
  }

  /** Turns a classified failure into the next state: retry (same key), failed, or unknown. */
  async function handleFailure(
    err: unknown,
    effectId: string,
    token: number,
    resendSafe: boolean,
    attempt: number,
    log: ActivityDeps['logger'],
    target: string,
  ): Promise<SendOutcome> {
    const classified =
      err instanceof TargetError
        ? err
        : new TargetError('unknown', `unexpected error while sending: ${(err as Error).message}`);
    log.warn({ errorClass: classified.errorClass, error: classified.message }, 'send failed');
    const keyed = classified.details.resendSafe ?? resendSafe;
    if (classified.errorClass === 'retryable' || (classified.errorClass === 'unknown' && keyed)) {
      // Known not applied, or the target dedupes on our key: the next attempt resends with the same key.
      metrics.retry(target, classified.errorClass);
      const delay = retryDelayMs(attempt, classified.details.retryAfterMs);
      await settle(
        effectId,
        token,
        `status = 'retry_wait', lease_expires_at = now(), next_attempt_at = now() + $3 * interval '1 millisecond',
         last_error_class = $4, last_error = $5`,
        [delay, classified.errorClass, classified.message],
      );
      throw ApplicationFailure.create({
        message: classified.message,
        type: 'RetryableTargetError',
        nextRetryDelay: delay,
      });
    }
    if (classified.errorClass === 'permanent') {
      metrics.outcome(target, 'failed', 'worker');
      await settle(
        effectId,
        token,
        `status = 'failed', lease_expires_at = now(), last_error_class = 'permanent', last_error = $3`,
        [classified.message],
      );
      return {
        result: 'failed',
        errorClass: 'permanent',
        error: classified.message,
        fix: classified.details.fix ?? 'fix the cause, then reprocess',
        attempts: token,
      };
    }
    // Unknown: this attempt is over (it saw the failure), so it ends its own lease now.
    await settle(
      effectId,
      token,
      `status = 'unknown', lease_expires_at = now(), last_error_class = 'unknown', last_error = $3`,
      [classified.message],
    );
    return {
      result: 'unknown',
      reason: classified.message,
      leaseExpiresAt: new Date().toISOString(),
      attempts: token,
    };
  }

  return {
    async send(input: SendInput): Promise<SendOutcome> {
      const { info } = Context.current();
      const target = targets.get(input.step.target);
      if (!target)
        throw ApplicationFailure.nonRetryable(`no target named "${input.step.target}"`, 'UnknownTargetError');
      const resendSafe = (attempt: number) =>
        target.resendSafe?.(input.step, attempt) ?? target.capabilities.idempotencyKey;
      const lease = await takeLease(
        input.effectId,
        Math.max(info.startToCloseTimeoutMs - LEASE_MARGIN_MS, 1000),
        resendSafe,
      );
      if (lease.kind === 'outcome') return lease.outcome;
      const { token } = lease;
      const log = logger.child({ effectId: input.effectId, target: target.name, attempt: token });

      // The lease check and the request write must be as close as possible: a stalled attempt
      // that wakes up after its lease expired must not write (the retry already moved on). The lease
      // is counted from before the check was sent, so a pause while its answer was on the way back
      // (a paused worker, a long GC) counts against it too.
      const checkedAt = performance.now();
      const left = (await leaseLeft(input.effectId, token)) - (performance.now() - checkedAt);
      if (left < WRITE_MARGIN_MS) {
        log.warn('lease expired before the request was written: not sending');
        throw ApplicationFailure.create({
          message: 'lease expired before the request was written',
          type: 'LeaseExpiredError',
        });
      }
      let externalId: string;
      try {
        ({ externalId } = await target.send({
          effectId: input.effectId,
          step: input.step,
          body: input.body,
          signal: AbortSignal.timeout(Math.floor(left - WRITE_MARGIN_MS)),
          attempt: token,
        }));
      } catch (err) {
        return handleFailure(err, input.effectId, token, resendSafe(token), info.attempt, log, target.name);
      }
      // A late answer still counts as evidence that it was sent, whatever happened to the lease. If
      // this write fails (a crash between the target's acceptance and the record), the row stays
      // `sending` under this lease, and the next attempt treats the outcome as unknown.
      const sent = await pool.query<{ age_seconds: number }>(
        `UPDATE effects SET status = 'succeeded', external_id = $2, completed_at = now(), updated_at = now(),
                lease_expires_at = now(), last_error_class = NULL, last_error = NULL
          WHERE id = $1 AND status NOT IN ('succeeded', 'discarded')
          RETURNING EXTRACT(EPOCH FROM now() - created_at)::float8 AS age_seconds`,
        [input.effectId, externalId],
      );
      if (sent.rows[0]) metrics.outcome(target.name, 'succeeded', 'worker', sent.rows[0].age_seconds);
      log.info('sent');
      return { result: 'succeeded', externalId, attempts: token };
    },

    /**
     * Asks the target whether our effect is already there (by effect id / reference), from the time
     * the effect was claimed. A permanent lookup error is not retried: the workflow then holds.
     */
    async lookup(input: { effectId: string; step: StepPlan }): Promise<LookupOutcome> {
      const target = targets.get(input.step.target);
      if (!target?.lookup) return { found: false };
      const { rows } = await pool.query<{ created_at: Date }>(
        'SELECT created_at FROM effects WHERE id = $1',
        [input.effectId],
      );
      try {
        return await target.lookup({
          effectId: input.effectId,
          step: input.step,
          signal: AbortSignal.timeout(20_000),
          notBefore: rows[0]?.created_at,
        });
      } catch (err) {
        if (err instanceof TargetError && err.errorClass === 'permanent')
          throw ApplicationFailure.nonRetryable(err.message, 'PermanentLookupError');
        throw err;
      }
    },
  };
}
