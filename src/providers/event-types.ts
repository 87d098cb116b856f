// Which event types each provider sends, as the receiver names them (`InboundEvent.eventType`), so
// that a route waiting for one that never comes is refused before it runs. Each provider's entry in
// src/providers/registry.ts carries its list: the SDK providers' are generated from the conformance
// corpora (src/providers/sdk-event-types.ts); the sandbox's come from its own schema; Standard
// Webhooks senders name their own types (`std.<source>`: any).
import { PROVIDERS, STANDARD_WEBHOOKS_PREFIX } from './registry';

export { STANDARD_WEBHOOKS_PREFIX };

/** Ends an entry that stands for any suffix: GitHub's repository_dispatch carries the sender's own action. */
export const ANY_SUFFIX = '*';

/** Every provider with a fixed set of event types, in the order messages list them. */
export const EVENT_TYPES: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  PROVIDERS.flatMap(({ name, eventTypes }) => (eventTypes ? [[name, eventTypes]] : [])),
);

/** Whether `provider` (one of EVENT_TYPES) sends `eventType`. */
export function sendsEventType(provider: string, eventType: string): boolean {
  const known = EVENT_TYPES[provider] ?? [];
  return known.some((entry) =>
    entry.endsWith(ANY_SUFFIX) ? eventType.startsWith(entry.slice(0, -1)) : entry === eventType,
  );
}
