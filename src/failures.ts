// The names of the failures that cross Temporal (an ApplicationFailure's `type`), typed once: the code
// that throws them and the retry policies that list them both use these constants, so a policy can
// never name a failure nothing throws. Safe in the workflow sandbox (no Node built-ins).
import { ActivityFailure } from '@temporalio/common';

export const Failure = {
  /** A retryable send error (429, 503, connection refused, or an unknown outcome on a keyed target). */
  RetryableTarget: 'RetryableTargetError',
  /** An earlier send attempt still holds the effect's lease: retried after it. */
  LeaseHeld: 'LeaseHeldError',
  /** The attempt's lease ran out before the request was written: nothing sent, retried. */
  LeaseExpired: 'LeaseExpiredError',
  /** The effect row is gone. Not retried. */
  EffectMissing: 'EffectMissingError',
  /** The effect is held, failed or discarded: no attempt may send it. Not retried. */
  EffectNotSendable: 'EffectNotSendableError',
  /** A route or step names a target that is not configured. Not retried. */
  UnknownTarget: 'UnknownTargetError',
  /** A matching route needs a field the event lacks. Not retried: the same event always lacks it. */
  RouteMapping: 'RouteMappingError',
  /** The responder refused for good (4xx from RESPONDER_URL, no answer to give). Not retried. */
  PermanentResponder: 'PermanentResponderError',
  /** The target refused a lookup for good (missing scope, bad token). Not retried. */
  PermanentLookup: 'PermanentLookupError',
  /** A workflow input that was not encrypted by a known key: only the receiver starts event workflows. */
  PayloadRefused: 'PayloadRefusedError',
  /**
   * The event workflow gave up on failed work nobody reprocessed or discarded in time. The one name
   * without the suffix: it is the failure of the run itself, as operators see it in the Web UI and
   * in runs that already ended so; it stays as it is.
   */
  EffectFailed: 'EffectFailed',
  /** A tenant id that is not one (the revocation announcement checks its input). Not retried. */
  InvalidTenant: 'InvalidTenant',
  /**
   * A decision the workflow refused: its Update fails with the refusal's reason as the message, so
   * that the Web UI shows it as failed, not as "Update successful". Clients read it as `Rejected: …`.
   */
  DecisionRejected: 'DecisionRejectedError',
} as const;

/** The name of a failure that crosses Temporal: one of the table's. */
export type FailureType = (typeof Failure)[keyof typeof Failure];

/**
 * The message of anything thrown, followed by its causes' (at most five), joined by ": ": a wrapper
 * (Temporal's client around the server's answer, ours around a library's error) says what failed,
 * the cause says why. An activity's failure is described by its cause alone, and a cause that repeats
 * the message before it is not said twice.
 */
export function errorMessage(err: unknown): string {
  const messages: string[] = [];
  let e: unknown = err;
  while (e !== undefined && e !== null && messages.length < 5) {
    if (e instanceof ActivityFailure && e.cause) {
      e = e.cause;
      continue;
    }
    const message = e instanceof Error ? e.message : String(e);
    if (message && message !== messages.at(-1)) messages.push(message);
    e = e instanceof Error ? e.cause : undefined;
  }
  return messages.join(': ') || String(err);
}

/** Error codes of a connection that failed (Node's net and dns, which pg uses). */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
]);
/** The same in words: Node's messages, pg's own timeout, and the SDK's Rust core (tonic). */
const UNREACHABLE_TEXT =
  /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|EAI_AGAIN|connection timeout|Connection refused|tcp connect error|dns error|Failed to connect before the deadline/i;

/**
 * Whether `err` (or a cause of it) says a server could not be reached, so that the caller can name
 * the setting that pointed there.
 */
export function isUnreachable(err: unknown): boolean {
  const { code } = (err ?? {}) as { code?: unknown };
  return (
    (typeof code === 'string' && UNREACHABLE_CODES.has(code)) || UNREACHABLE_TEXT.test(errorMessage(err))
  );
}
