// The errors workflow code throws to itself (never out of a run: the event workflow turns them into
// failures named in src/failures.ts). Safe in the workflow sandbox.

/** Failed work nobody reprocessed or discarded within the policy's park time. */
export class ParkExpiredError extends Error {
  override name = 'ParkExpiredError';
}
