// Standard Webhooks (standardwebhooks.com): `/webhooks/std/:source`, one `whsec_` secret per source.
// The sandbox signs the same way, so the verification lives here once.
import { WebhookVerificationError as LibraryVerificationError, Webhook } from 'standardwebhooks';
import { WebhookVerificationError } from './errors';
import { parseJson } from './parse';
import { header, headerError, type ProviderResult, type RequestContext, type WebhookProvider } from './types';

/**
 * Verifies `webhook-signature` over `{webhook-id}.{webhook-timestamp}.{raw body}` with the
 * `standardwebhooks` library (constant-time compare, ±300 s window in both directions).
 * @returns the `webhook-id`, the event's dedupe key.
 */
export function verifyStandardWebhook(secret: string, ctx: RequestContext): string {
  const id = header(ctx.headers, 'webhook-id');
  const timestamp = header(ctx.headers, 'webhook-timestamp');
  const signature = header(ctx.headers, 'webhook-signature');
  if (!id || !timestamp || !signature) {
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header');
  }
  if (!/^\d+$/.test(timestamp))
    throw new WebhookVerificationError('webhook-timestamp is not a number of seconds');
  try {
    new Webhook(secret).verify(
      ctx.rawBody,
      { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature },
      { jsonParse: false },
    );
  } catch (err) {
    if (err instanceof LibraryVerificationError) throw new WebhookVerificationError(err.message);
    throw err;
  }
  return id;
}

/** Signs a body the way a Standard Webhooks sender does (the sandbox page and tests use it). */
export function signStandardWebhook(
  secret: string,
  id: string,
  body: string,
  at = new Date(),
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

/** The `webhook-id` of a verified request, checked to be usable in a workflow id (400 otherwise). */
export function readWebhookId(ctx: RequestContext): string {
  const id = header(ctx.headers, 'webhook-id') ?? '';
  if (!/^[\w.:-]{1,200}$/.test(id))
    throw headerError('webhook-id', 'webhook-id must be 1-200 letters, digits, or . _ : -');
  return id;
}

/**
 * The spec only recommends a `type`, `timestamp` and `data` envelope; senders that use the standard
 * send other shapes too (a numeric timestamp, none at all, `created_at`, no `type`). The signature
 * proves who sent the body, so any JSON body is accepted: `type` names the event when it is a short
 * string, and a timestamp is read only when it is an ISO 8601 string.
 */
function eventTypeOf(body: unknown): string {
  const type = (body as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type.length > 0 && type.length <= 200 ? type : 'unknown';
}

function occurredAtOf(body: unknown): string | undefined {
  const timestamp = (body as { timestamp?: unknown } | null)?.timestamp;
  if (typeof timestamp !== 'string') return undefined;
  const ms = Date.parse(timestamp);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

export function standardWebhooksProvider(
  secrets: Readonly<Record<string, string>>,
): WebhookProvider<ProviderResult> {
  // Own keys only: a path such as /webhooks/std/__proto__ or /constructor must not find Object's members.
  const secretOf = (source: string | undefined) =>
    source !== undefined && Object.hasOwn(secrets, source) ? secrets[source] : undefined;
  return {
    name: 'std',
    contentTypes: ['application/json'],
    verify(ctx) {
      const secret = secretOf(ctx.params.source);
      if (!secret) throw new WebhookVerificationError('unknown source');
      verifyStandardWebhook(secret, ctx);
    },
    parse(ctx): ProviderResult {
      const source = ctx.params.source ?? '';
      const id = readWebhookId(ctx);
      const body = parseJson(ctx.rawBody);
      const provider = `std.${source}`;
      return {
        kind: 'events',
        events: [
          {
            provider,
            eventId: id,
            workflowId: `webhook:${provider}:${id}`,
            eventType: eventTypeOf(body),
            occurredAt: occurredAtOf(body),
            receivedAt: ctx.receivedAt.toISOString(),
            correlationId: ctx.correlationId,
            payload: body,
          },
        ],
      };
    },
  };
}
