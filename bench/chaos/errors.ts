// The errors of the chaos run's system under test.

/** Thrown when a part of the system does not come up, with the tail of its log. */
export class SystemStartError extends Error {
  override name = 'SystemStartError';
}
