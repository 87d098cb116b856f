// What every inbound provider produces: verified, validated and normalised events. The receiver knows
// nothing provider-specific beyond this interface.
import type { IncomingHttpHeaders } from 'node:http';
import { WebhookPayloadError } from './errors';

/** One webhook event, normalised. It is the event workflow's input (encrypted in Temporal history). */
export interface InboundEvent {
  /** `slack`, `line`, `github`, `stripe`, `std.<source>` or `sandbox`. */
  provider: string;
  /** The provider's own event id: the dedupe key (never a body hash). */
  eventId: string;
  /** `webhook:<provider>:<eventId>` (GitHub: `webhook:github:<hookId>:<deliveryGuid>`). */
  workflowId: string;
  eventType: string;
  /** When the provider says the event happened (ISO 8601), when it says so. */
  occurredAt?: string;
  receivedAt: string;
  correlationId: string;
  /** Sender retry information (Slack retry num/reason, LINE isRedelivery), for the ledger. */
  redelivery?: Record<string, string | number | boolean>;
  /**
   * The account the event came through (src/tenants/tenant-id.ts): `slack:<team>` (`slack:<enterprise>`
   * for an org-wide install), `line:<destination>`, `github:<installation id>`. Targets of the same
   * provider answer with this tenant's credential; the `Tenant` search attribute.
   */
  tenant?: string;
  /** The conversation (or order) the event belongs to, with the version the provider gives. */
  conversation?: { id: string; version?: string };
  /** A chat message the event carries, if any: what a responder answers. */
  message?: { id: string; text: string; user?: string };
  /**
   * Where the default route sends a reply: the target, the reply kind (part of the business key) and
   * the target-specific destination (channel and thread, reply token, issue).
   */
  replyTo?: { target: string; kind: string; destination: Record<string, string> };
  /** The parsed body, for routes that map provider fields into effects. */
  payload: unknown;
}

/**
 * What a provider's `parse` returns: events to make durable, an immediate answer (handshakes), or a
 * verified delivery that carries nothing to make durable (a notice about us, an envelope type we do
 * not know yet): acknowledged, so that the sender does not retry it or disable the endpoint, and
 * counted with its reason.
 */
export type ProviderResult =
  | { kind: 'events'; events: InboundEvent[]; ack?: Acknowledgement }
  | { kind: 'answer'; status: number; body: unknown }
  | { kind: 'ignored'; reason: IgnoredReason; ack?: Acknowledgement };

/**
 * How a sender must be told its delivery is durable (or a duplicate, or ignored). Absent: 202 or 200
 * with a JSON status. `empty`: 200 with no body, for a sender that shows the body to a person (Slack
 * displays the answer to a slash command or a button in the channel).
 */
export type Acknowledgement = 'empty';

/** Why a verified delivery was acknowledged without an event (a metric label: a closed set). */
export type IgnoredReason = 'app_rate_limited' | 'unknown_envelope_type' | 'replayed_body';

export interface RequestContext {
  rawBody: Buffer;
  headers: IncomingHttpHeaders;
  /** Path parameters, e.g. the Standard Webhooks source. */
  params: Record<string, string>;
  receivedAt: Date;
  correlationId: string;
}

/** `Parsed`: what parse returns; providers that answer synchronously say so (`WebhookProvider<ProviderResult>`). */
export interface WebhookProvider<
  Parsed extends ProviderResult | Promise<ProviderResult> = ProviderResult | Promise<ProviderResult>,
> {
  /** The path segment under /webhooks/. */
  readonly name: string;
  /** Content types the provider sends (415 otherwise). */
  readonly contentTypes: readonly string[];
  /**
   * Verifies the signature on the raw body and the timestamp window.
   * @throws WebhookVerificationError for anything the request got wrong (→ 401). May be async
   * (library verifiers that use WebCrypto are).
   */
  verify(ctx: RequestContext): void | Promise<void>;
  /**
   * Validates and normalises a verified body. May be async (GitHub asks its replay ledger).
   * @throws WebhookPayloadError with zod issues (→ 400).
   */
  parse(ctx: RequestContext): Parsed;
}

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** A 400 for a header the provider requires (e.g. an event id header) that is missing or malformed. */
export function headerError(name: string, message: string): WebhookPayloadError {
  return new WebhookPayloadError(message, [{ code: 'invalid_header', path: ['headers', name], message }]);
}
