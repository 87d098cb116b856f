// Standard Webhooks (standardwebhooks.com): `/webhooks/std/:source`, one `whsec_` secret per source.
// The sandbox signs the same way, so the verification lives here once.
import { WebhookVerificationError as LibraryVerificationError, Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { epochToIso, parseJson, validate } from './parse';
import {
  header,
  headerError,
  type ProviderResult,
  type RequestContext,
  type WebhookProvider,
  WebhookVerificationError,
} from './types';

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

const standardPayload = z.object({
  type: z.string().min(1),
  timestamp: z.string().min(1),
  data: z.record(z.string(), z.unknown()),
});

export function standardWebhooksProvider(secrets: Record<string, string>): WebhookProvider {
  return {
    name: 'std',
    contentTypes: ['application/json'],
    verify(ctx) {
      const secret = secrets[ctx.params.source ?? ''];
      if (!secret) throw new WebhookVerificationError('unknown source');
      verifyStandardWebhook(secret, ctx);
    },
    parse(ctx): ProviderResult {
      const source = ctx.params.source ?? '';
      const id = readWebhookId(ctx);
      const body = validate(standardPayload, parseJson(ctx.rawBody));
      const provider = `std.${source}`;
      const occurred = Date.parse(body.timestamp);
      return {
        kind: 'events',
        events: [
          {
            provider,
            eventId: id,
            workflowId: `webhook:${provider}:${id}`,
            eventType: body.type,
            occurredAt: Number.isNaN(occurred) ? undefined : epochToIso(occurred, 'ms'),
            receivedAt: ctx.receivedAt.toISOString(),
            correlationId: ctx.correlationId,
            payload: body,
          },
        ],
      };
    },
  };
}
