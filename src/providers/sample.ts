// A provider's own delivery body, read as the receiver reads it but without the signature check: what
// `replyflow routes try` plans from. Each provider's own parse() does the reading, so the events are
// the ones a real delivery of that body would start; ids that only the transport carries (GitHub's
// hook and delivery ids, a Standard Webhooks `webhook-id`) get stand-ins unless the headers give them.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { parseJson } from './parse';
import { PROVIDERS } from './registry';
import type { ProviderResult } from './types';

/** The providers a sample may come from, as `--provider` takes them. */
export const SAMPLE_PROVIDERS = PROVIDERS.map((entry) => entry.sampleName ?? entry.name);

function providerFor(name: string) {
  for (const entry of PROVIDERS) {
    const found = entry.sample(name);
    if (found) return found;
  }
  return undefined;
}

export function isSampleProvider(name: string): boolean {
  return providerFor(name) !== undefined;
}

/**
 * The provider whose deliveries alone look like `body` (Slack's envelope, LINE's destination and
 * events, a Stripe `evt_` event, GitHub's event header); undefined when the body does not say. A
 * header that names its provider outranks any body.
 */
export function recogniseProvider(body: unknown, headers: IncomingHttpHeaders): string | undefined {
  for (const { name, recognises } of PROVIDERS)
    if (recognises && 'header' in recognises && headers[recognises.header] !== undefined) return name;
  if (typeof body !== 'object' || body === null) return undefined;
  const fields = body as Record<string, unknown>;
  return PROVIDERS.find(({ recognises }) => recognises && 'body' in recognises && recognises.body(fields))
    ?.name;
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
