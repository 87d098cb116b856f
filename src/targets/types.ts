// The outbound adapter interface: one module per target declares what the target promises and
// classifies its errors; the orchestrator does the rest. Library-level retries are always off.
import type { ErrorClass, MessageBody, StepPlan, TargetCapabilities } from '../model';

export type { ErrorClass };

export interface SendRequest {
  /** Our effect id: sent as the idempotency key (where supported) and as lookup metadata. */
  effectId: string;
  step: StepPlan;
  body: MessageBody;
  /** Aborts the request when the attempt's lease runs out. */
  signal: AbortSignal;
  /** This attempt's number on the effect row: 1 for the first; resends after held or failed keep counting. */
  attempt: number;
}

export interface LookupRequest {
  effectId: string;
  step: StepPlan;
  signal: AbortSignal;
  /** When the effect was claimed: nothing we sent for it is older, so history scans can start here. */
  notBefore?: Date;
}

export interface TargetAdapter {
  readonly name: string;
  readonly capabilities: TargetCapabilities;
  /** @returns the id the target gave the effect. @throws TargetError, classified. */
  send(request: SendRequest): Promise<{ externalId: string }>;
  /** Present when capabilities.lookup is: finds an effect already applied, by our effect id. */
  lookup?(request: LookupRequest): Promise<{ found: true; externalId: string } | { found: false }>;
  /**
   * Whether attempt `attempt` of this step carried our idempotency key, so that resending with the
   * same key settles its unknown outcome. Absent: `capabilities.idempotencyKey` for every attempt.
   * For targets where only some requests dedupe (LINE: a push does, a reply-token request does not).
   */
  resendSafe?(step: StepPlan, attempt: number): boolean;
  /**
   * Where the provider limits how fast requests may come (a Slack channel: about one message a
   * second), the destination's key and the gap its requests keep; the send activity waits for the
   * slot. Absent or undefined: not paced.
   */
  pace?(step: StepPlan): Pace | undefined;
}

/** A paced destination: requests with the same key leave `intervalMs` apart, from every worker. */
interface Pace {
  key: string;
  intervalMs: number;
}

/**
 * Parses Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
 * @returns milliseconds, or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The text of a chat message: the responder's reply, or a route's `text` (a payload `{ text }`); for
 * LINE message objects, the first one's text.
 */
export function messageText(body: SendRequest['body']): string | undefined {
  if (typeof body.text === 'string') return body.text;
  const line = body.line?.find((m) => typeof m.text === 'string');
  if (line) return line.text as string;
  const json = body.json as { text?: unknown } | undefined;
  return typeof json?.text === 'string' ? json.text : undefined;
}
