// The errors of inbound verification and parsing: the receiver maps each to its answer (401, 503, 400).

/** Thrown when a request's signature, timestamp or signing headers are wrong or missing (401). */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/**
 * Thrown when a provider cannot verify or act on a request because something it reads or writes is
 * down (the tenant store holding LINE channels; recording a Slack uninstall): the sender must retry
 * (503 with Retry-After), nothing is recorded.
 */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
}

/** Thrown when a verified body is malformed or lacks a usable event id (400). */
export class WebhookPayloadError extends Error {
  override name = 'WebhookPayloadError';
  constructor(
    message: string,
    readonly issues: PayloadIssue[] = [],
  ) {
    super(message);
  }
}

/** One problem in a request body, in zod's shape: path and message, never the offending value. */
interface PayloadIssue {
  code: string;
  path: (string | number)[];
  message: string;
}
