// The inbound providers a receiver has: each entry of the registry (src/providers/registry.ts) whose
// secret is set. A provider whose secret is unset is disabled (404).
import type { Config } from '../config';
import { PROVIDERS, type ProviderDeps } from './registry';
import type { WebhookProvider } from './types';

export function createProviders(config: Config, deps: ProviderDeps): WebhookProvider[] {
  return PROVIDERS.flatMap((entry) => entry.create(config, deps) ?? []);
}

/**
 * The settings behind each provider, for the receiver's refusal lines: `enabledBy` unset, the provider
 * answers 404; `secret` not the sender's, its deliveries fail verification (401).
 */
export const PROVIDER_SETTINGS: ReadonlyMap<string, { enabledBy: string; secret: string }> = new Map(
  PROVIDERS.map(({ name, enabledBy, secret }) => [name, { enabledBy, secret }]),
);
