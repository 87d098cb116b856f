// The errors of the deploy tests' support code.

/** Thrown when a compose value uses interpolation that this reader (and so the tests) does not model. */
export class InterpolationError extends Error {
  override name = 'InterpolationError';
}
