// The one error of outbound adapters: every send failure classified, so that the send activity knows
// whether to retry, park or hold, and the operator what to fix.
import type { ErrorClass } from './types';

/** Thrown by an adapter with its classification of what went wrong. Messages never carry message text or secrets. */
export class TargetError extends Error {
  override name = 'TargetError';
  constructor(
    readonly errorClass: ErrorClass,
    message: string,
    readonly details: {
      /** From Retry-After, when the target gave one. */
      retryAfterMs?: number;
      /** What an operator should do about a permanent error. */
      fix?: string;
      /**
       * For an unknown outcome: whether the request that may have been applied carried our
       * idempotency key. Overrides the adapter's `resendSafe` when the adapter knows better.
       */
      resendSafe?: boolean;
    } = {},
  ) {
    super(message);
  }
}
