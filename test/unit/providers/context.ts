// Builds what a provider sees of a request, and reads the events back out of its answer.
import assert from 'node:assert/strict';
import type { InboundEvent, ProviderResult, RequestContext } from '../../../src/providers/types';

export function requestContext(
  body: string | Buffer,
  headers: Record<string, string>,
  options: { receivedAt?: Date; params?: Record<string, string> } = {},
): RequestContext {
  return {
    rawBody: Buffer.isBuffer(body) ? body : Buffer.from(body),
    headers,
    params: options.params ?? {},
    receivedAt: options.receivedAt ?? new Date(),
    correlationId: 'corr-test',
  };
}

export function eventsOf(result: ProviderResult): InboundEvent[] {
  assert.equal(result.kind, 'events');
  return (result as { events: InboundEvent[] }).events;
}

/** Flips one byte of a body: the smallest change a signature must notice. */
export function flipOneByte(body: string): Buffer {
  const bytes = Buffer.from(body);
  bytes[Math.floor(bytes.length / 2)]! ^= 0x01;
  return bytes;
}
