// A provider's own delivery body, read as the receiver reads it but without the signature check: what
// `replyflow routes try` plans from. Each provider's own parse() does the reading, so the events are
// the ones a real delivery of that body would start; ids that only the transport carries (GitHub's
// hook and delivery ids, a Standard Webhooks `webhook-id`) get stand-ins unless the headers give them.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { STANDARD_WEBHOOKS_PREFIX } from './event-types';
import { githubProvider } from './github';
import { lineProvider } from './line';
import { parseJson } from './parse';
import { sandboxProvider } from './sandbox';
import { slackProvider } from './slack';
import { standardWebhooksProvider } from './standard-webhooks';
import { stripeProvider } from './stripe';
import type { ProviderResult, WebhookProvider } from './types';

/** The providers a sample may come from, as `--provider` takes them. */
export const SAMPLE_PROVIDERS = [
  'slack',
  'line',
  'github',
  'stripe',
  'sandbox',
  `${STANDARD_WEBHOOKS_PREFIX}<source>`,
];

/** parse() reads no secret: verify() alone does, and a sample is not verified. */
const NO_SECRET = 'not-used-for-parsing';

function providerFor(
  name: string,
): { provider: WebhookProvider; params: Record<string, string> } | undefined {
  if (name.startsWith(STANDARD_WEBHOOKS_PREFIX)) {
    const source = name.slice(STANDARD_WEBHOOKS_PREFIX.length);
    if (!/^[a-z0-9][a-z0-9_-]*$/i.test(source)) return undefined;
    return { provider: standardWebhooksProvider({ [source]: NO_SECRET }), params: { source } };
  }
  const providers: Record<string, () => WebhookProvider> = {
    slack: () => slackProvider(NO_SECRET),
    line: () => lineProvider(NO_SECRET),
    // Without a ledger of signed bodies: a sample is never a replay.
    github: () => githubProvider(NO_SECRET),
    stripe: () => stripeProvider(NO_SECRET),
    sandbox: () => sandboxProvider(NO_SECRET),
  };
  const make = Object.hasOwn(providers, name) ? providers[name] : undefined;
  return make ? { provider: make(), params: {} } : undefined;
}

export function isSampleProvider(name: string): boolean {
  return providerFor(name) !== undefined;
}

/**
 * The provider whose deliveries alone look like `body` (Slack's envelope, LINE's destination and
 * events, a Stripe `evt_` event, GitHub's event header); undefined when the body does not say.
 */
export function recogniseProvider(body: unknown, headers: IncomingHttpHeaders): string | undefined {
  if (headers['x-github-event'] !== undefined) return 'github';
  if (typeof body !== 'object' || body === null) return undefined;
  const fields = body as Record<string, unknown>;
  if (['event_callback', 'url_verification', 'app_rate_limited'].includes(fields.type as string))
    return 'slack';
  if (typeof fields.destination === 'string' && Array.isArray(fields.events)) return 'line';
  if (typeof fields.id === 'string' && fields.id.startsWith('evt_')) return 'stripe';
  return undefined;
}

/**
 * Reads `body` as `providerName`'s receiver does.
 * @throws WebhookPayloadError when the receiver would refuse it (400), with zod-shaped issues
 */
export async function readSample(options: {
  provider: string;
  body: Buffer;
  headers: IncomingHttpHeaders;
  receivedAt?: Date;
}): Promise<ProviderResult> {
  const found = providerFor(options.provider);
  if (!found) throw new Error(`unknown provider "${options.provider}" (${SAMPLE_PROVIDERS.join(', ')})`);
  // Refused as the receiver refuses it: not JSON, or nested too deep.
  parseJson(options.body);
  const headers: IncomingHttpHeaders = {
    'content-type': 'application/json',
    'x-github-hook-id': 'sample',
    'x-github-delivery': randomUUID(),
    'webhook-id': `msg_${randomUUID().replace(/-/g, '')}`,
    ...options.headers,
  };
  return found.provider.parse({
    rawBody: options.body,
    headers,
    params: found.params,
    receivedAt: options.receivedAt ?? new Date(),
    correlationId: 'routes-try',
  });
}
