// The errors of the receiver's calls to Temporal: both answer 503 with Retry-After.

/** Thrown when a call to Temporal is still unanswered at its deadline. */
export class TemporalDeadlineError extends Error {
  override name = 'TemporalDeadlineError';
  constructor(readonly deadlineMs: number) {
    super(`Temporal did not answer within ${deadlineMs} ms`);
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
