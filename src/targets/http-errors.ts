// Classification shared by adapters that speak HTTP: what a status or a transport error says about
// whether the request was applied (RFC 9110 §9.2.2: never retry a non-idempotent request blindly).

import { TargetError } from './errors';
import { parseRetryAfter } from './types';

/** Node's fetch reports transport failures as TypeError with a `cause` carrying the socket error code. */
export function classifyTransportError(err: unknown, signal: AbortSignal): TargetError {
  if (err instanceof TargetError) return err;
  const code = (err as { cause?: { code?: string } })?.cause?.code;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    // The connection never opened: nothing was written.
    return new TargetError('retryable', `target unreachable (${code})`);
  }
  if (signal.aborted)
    return new TargetError(
      'unknown',
      'no answer before the attempt timed out: the request may have been applied',
    );
  return new TargetError(
    'unknown',
    `connection lost after the request was written (${code ?? 'reset'}): it may have been applied`,
  );
}

/** A non-2xx answer from an API that documents its statuses in the usual way. */
export function classifyStatus(status: number, headers: Headers, what: string): TargetError {
  const retryAfterMs = parseRetryAfter(headers.get('retry-after'));
  if (status === 429) return new TargetError('retryable', `${what}: rate limited (429)`, { retryAfterMs });
  if (status === 503 || status === 502 || status === 504) {
    // 502/504 come from a proxy that may have forwarded the request; 503 from the target says "not processed".
    return status === 503
      ? new TargetError('retryable', `${what}: unavailable (503)`, { retryAfterMs })
      : new TargetError('unknown', `${what}: gateway error (${status}): the request may have been applied`);
  }
  if (status >= 500)
    return new TargetError('unknown', `${what}: server error (${status}): the request may have been applied`);
  if (status === 401 || status === 403) {
    return new TargetError('permanent', `${what}: not authorised (${status})`, {
      fix: 'check the target credentials',
    });
  }
  if (status === 404)
    return new TargetError('permanent', `${what}: not found (404)`, {
      fix: 'check the destination (URL, channel, issue)',
    });
  return new TargetError('permanent', `${what}: rejected (${status})`, {
    fix: 'check the request the route builds',
  });
}
