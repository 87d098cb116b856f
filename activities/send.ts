// The send protocol in one activity (docs/architecture.md, model/send.pml): take the effect's
// `sending` lease, check it immediately before writing the request, call the target with our effect
// id as idempotency key, and record what the target's answer proves. The effect row changes only
// through src/db/effects.ts; this file turns what it reports into Temporal outcomes. An outcome we
// cannot know is never retried blindly.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { errorMessage, Failure } from '../src/failures';
import {
  type LookupOutcome,
  type SendInput,
  type SendOutcome,
  type StepPlan,
  TURN_WAIT_MS,
} from '../src/model';
import { TargetError } from '../src/targets/errors';
import type { SendLabels } from '../src/worker-metrics';
import type { ActivityDeps } from './deps';
import { writeOutcome } from './ledger';
import { tellNextInLine } from './next-in-line';

/** The lease ends this long before Temporal's start-to-close timeout, so a retry finds it expired. */
const LEASE_MARGIN_MS = 1000;
/** The lease must still have this long to run when the request is written. */
const WRITE_MARGIN_MS = 200;
/** A send waits inside its attempt (TURN_WAIT_MS at most) only when that many earlier sends at most are pending; further back, it waits to be told. */
const TURN_WAIT_POSITIONS = 3;
const TURN_POLL_MS = 25;
/**
 * A paced send waits this long at most for its destination's slot (src/db/send-pacing.ts), and never
 * more than a quarter of its lease; further off, it goes unpaced and the target's 429 decides.
 */
const MAX_PACE_WAIT_MS = 5000;
/**
 * Slots are this much further apart than the provider's interval. A slot is taken before the lease,
 * its check and the target's token read, whose time varies: with slots exactly 1,000 ms apart,
 * `npm run bench:tenants` saw Slack posts arrive 934–1,209 ms apart, and a strict limit refused a
 * third of them.
 */
const PACE_MARGIN_MS = 100;

/** Exponential backoff from 1 s, capped at 10 min, never sooner than Retry-After, plus up to 20 % jitter (Temporal adds none). */
export function retryDelayMs(attempt: number, retryAfterMs?: number, random = Math.random): number {
  const exponential = Math.min(1000 * 2 ** Math.max(0, attempt - 1), 600_000);
  const base = Math.max(exponential, retryAfterMs ?? 0);
  return Math.round(base + base * 0.2 * random());
}

interface Attempt {
  effectId: string;
  /** The lease's token: this attempt's number on the row. */
  token: number;
  /** Whether this attempt's request carried a key the target dedupes on. */
  resendSafe: boolean;
  /** Temporal's attempt number, for the backoff. */
  temporalAttempt: number;
  /** The target, and the tenant whose credential the send used: the metrics' labels. */
  send: SendLabels;
  log: ActivityDeps['logger'];
}

export function sendActivities({ pool, effects, pacing, targets, logger, metrics, policy }: ActivityDeps) {
  /**
   * Waits a little inside the attempt while an earlier send of the conversation is pending and close
   * ahead (its turn is a send or two away): cheaper than answering `wait` and being told later, which
   * costs both workflows a task. Otherwise, or once the wait is over, marks the send as waiting to be
   * told. @returns how many earlier sends are still pending (0: send now).
   */
  async function waitInTurn(effectId: string, activity: Context): Promise<number> {
    const until = Date.now() + TURN_WAIT_MS;
    let earlier = await effects.earlierPending(effectId);
    while (earlier > 0 && earlier <= TURN_WAIT_POSITIONS && Date.now() < until) {
      await activity.sleep(TURN_POLL_MS);
      earlier = await effects.earlierPending(effectId);
    }
    return earlier > 0 ? effects.awaitTurn(effectId) : 0;
  }

  /** Turns a classified failure into the next state: retry (same key), failed, or unknown. */
  async function settleFailure(err: unknown, attempt: Attempt): Promise<SendOutcome> {
    const { effectId, token, send, log } = attempt;
    const classified =
      err instanceof TargetError
        ? err
        : new TargetError('unknown', `unexpected error while sending: ${errorMessage(err)}`);
    log.warn({ errorClass: classified.errorClass, error: classified.message }, 'send failed');
    const keyed = classified.details.resendSafe ?? attempt.resendSafe;
    if (classified.errorClass === 'retryable' || (classified.errorClass === 'unknown' && keyed)) {
      // Known not applied, or the target dedupes on our key: the next attempt resends with the same key.
      metrics.retry(send, classified.errorClass);
      const delayMs = retryDelayMs(attempt.temporalAttempt, classified.details.retryAfterMs);
      await effects.settle(effectId, token, {
        step: 'settleRetry',
        delayMs,
        errorClass: classified.errorClass,
        error: classified.message,
      });
      throw ApplicationFailure.create({
        message: classified.message,
        type: Failure.RetryableTarget,
        nextRetryDelay: delayMs,
        cause: classified,
      });
    }
    if (classified.errorClass === 'permanent') {
      metrics.outcome(send, 'failed', 'worker');
      await effects.settle(effectId, token, { step: 'settleFailed', error: classified.message });
      await tellNextInLine(effects, effectId);
      return {
        result: 'failed',
        errorClass: 'permanent',
        error: classified.message,
        fix: classified.details.fix ?? 'fix the cause, then reprocess',
        attempts: token,
      };
    }
    // Unknown: this attempt is over (it saw the failure), so it ends its own lease now.
    await effects.settle(effectId, token, { step: 'settleUnknown', error: classified.message });
    return {
      result: 'unknown',
      reason: classified.message,
      leaseExpiresAt: new Date().toISOString(),
      attempts: token,
    };
  }

  /** A send that succeeded (now or in an earlier attempt), with the event's outcome when it asks for it. */
  async function succeeded(input: SendInput, externalId: string, attempts: number): Promise<SendOutcome> {
    if (input.ledgerOnSuccess) await writeOutcome(pool, { ...input.ledgerOnSuccess, outcome: 'succeeded' });
    return { result: 'succeeded', externalId, attempts };
  }

  return {
    async send(input: SendInput): Promise<SendOutcome> {
      const activity = Context.current();
      // Temporal times this attempt out startToClose after it started; the lease must end before.
      const deadline = Date.now() + activity.info.startToCloseTimeoutMs;
      const target = targets.get(input.step.target);
      if (!target)
        throw ApplicationFailure.nonRetryable(
          `no target named "${input.step.target}"`,
          Failure.UnknownTarget,
        );
      // Earlier messages of the conversation delivered a little later than this one go first: wait
      // out the gather window, then send only if no earlier send of the conversation is pending.
      const gather = input.gatherUntil ? Date.parse(input.gatherUntil) - Date.now() : 0;
      if (gather > 0) await activity.sleep(Math.min(gather, deadline - Date.now() - 2 * LEASE_MARGIN_MS));
      const earlier = await waitInTurn(input.effectId, activity);
      if (earlier > 0) return { result: 'wait', earlier, attempts: 0 };
      const pace = target.pace?.(input.step);
      if (pace) {
        const maxWaitMs = Math.min(MAX_PACE_WAIT_MS, policy.sendTimeoutMs / 4);
        const waitMs = await pacing.reserve(pace.key, pace.intervalMs + PACE_MARGIN_MS, maxWaitMs);
        if (waitMs) await activity.sleep(waitMs);
      }
      const resendSafe = (attempt: number) =>
        target.resendSafe?.(input.step, attempt) ?? target.capabilities.idempotencyKey;
      // The lease is SEND_TIMEOUT, and always ends before Temporal's timeout (which includes the gather).
      const leaseMs = Math.min(policy.sendTimeoutMs, deadline - Date.now()) - LEASE_MARGIN_MS;
      const lease = await effects.takeLease(input.effectId, Math.max(leaseMs, 1000), resendSafe);
      switch (lease.kind) {
        case 'missing':
          throw ApplicationFailure.nonRetryable(
            `effect ${input.effectId} does not exist`,
            Failure.EffectMissing,
          );
        case 'not-sendable':
          throw ApplicationFailure.nonRetryable(
            `effect is ${lease.status}: not sendable`,
            Failure.EffectNotSendable,
          );
        case 'lease-held':
          // A previous attempt may still be running (a stalled worker): wait for its lease to end.
          throw ApplicationFailure.create({
            message: 'an earlier send attempt still holds the lease',
            type: Failure.LeaseHeld,
            nextRetryDelay: lease.leftMs + LEASE_MARGIN_MS,
          });
        case 'succeeded':
          return succeeded(input, lease.externalId, lease.attempts);
        case 'unknown':
          return {
            result: 'unknown',
            reason: lease.reason,
            leaseExpiresAt: lease.leaseExpiresAt.toISOString(),
            attempts: lease.attempts,
          };
      }
      const { token } = lease;
      const log = logger.child({ effectId: input.effectId, target: target.name, attempt: token });

      // The lease check and the request write must be as close as possible: a stalled attempt
      // that wakes up after its lease expired must not write (the retry already moved on). The lease
      // is counted from before the check was sent, so a pause while its answer was on the way back
      // (a paused worker, a long GC) counts against it too.
      const checkedAt = performance.now();
      const left = (await effects.leaseLeft(input.effectId, token)) - (performance.now() - checkedAt);
      if (left < WRITE_MARGIN_MS) {
        log.warn('lease expired before the request was written: not sending');
        throw ApplicationFailure.create({
          message: 'lease expired before the request was written',
          type: Failure.LeaseExpired,
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
        return settleFailure(err, {
          effectId: input.effectId,
          token,
          resendSafe: resendSafe(token),
          temporalAttempt: activity.info.attempt,
          send: { target: target.name, tenant: input.step.destination.tenant },
          log,
        });
      }
      // A late answer still counts as evidence that it was sent, whatever happened to the lease. If
      // this write fails (a crash between the target's acceptance and the record), the row stays
      // `sending` under this lease, and the next attempt treats the outcome as unknown.
      const recorded = await effects.recordSuccess(input.effectId, externalId);
      if (recorded) metrics.outcome(recorded, 'succeeded', 'worker', recorded.ageSeconds);
      log.info('sent');
      await tellNextInLine(effects, input.effectId);
      return succeeded(input, externalId, token);
    },

    /**
     * Asks the target whether our effect is already there (by effect id / reference), from the time
     * the effect was claimed. A permanent lookup error is not retried: the workflow then holds.
     */
    async lookup(input: { effectId: string; step: StepPlan }): Promise<LookupOutcome> {
      const target = targets.get(input.step.target);
      if (!target?.lookup) return { found: false };
      try {
        return await target.lookup({
          effectId: input.effectId,
          step: input.step,
          signal: AbortSignal.timeout(20_000),
          notBefore: await effects.claimedAt(input.effectId),
        });
      } catch (err) {
        if (err instanceof TargetError && err.errorClass === 'permanent')
          throw ApplicationFailure.create({
            message: err.message,
            type: Failure.PermanentLookup,
            nonRetryable: true,
            cause: err,
          });
        throw err;
      }
    },
  };
}
