// The errors of the receiver's calls to Temporal: both answer 503 with Retry-After.

/** Thrown when a call to Temporal is still unanswered at its deadline. */
export class TemporalDeadlineError extends Error {
  override name = 'TemporalDeadlineError';
  constructor(readonly deadlineMs: number) {
    super(`Temporal did not answer within ${deadlineMs} ms`);
  }
}

/**
 * Thrown when a delivery waited half its deadline for one of the WEBHOOK_START_CONCURRENCY places at
 * Temporal (src/receiver/start-queue.ts): the starts ahead of it were slow to be confirmed, and it was
 * refused having sent nothing. Told apart from a start that ran out of time at Temporal itself.
 */
export class StartTurnTimeoutError extends TemporalDeadlineError {
  override name = 'StartTurnTimeoutError';
  constructor(waitMs: number) {
    super(waitMs);
    this.message = `no place to start at Temporal came free within ${waitMs} ms`;
  }
}

/**
 * Thrown when Temporal did not confirm the start (down, too slow, or refusing it, e.g. for a missing
 * search attribute): the sender must retry (503). The `cause` is the client's error, whose message is
 * Temporal's own.
 */
export class TemporalUnavailableError extends Error {
  override name = 'TemporalUnavailableError';
}
