// The registry of inbound providers. A provider whose secret is unset is disabled (404).
import type { Config } from '../config';
import { sandboxProvider } from './sandbox';
import { standardWebhooksProvider } from './standard-webhooks';
import type { WebhookProvider } from './types';

export function createProviders(config: Config): WebhookProvider[] {
  const providers: WebhookProvider[] = [];
  if (Object.keys(config.STANDARD_WEBHOOKS_SECRETS).length > 0)
    providers.push(standardWebhooksProvider(config.STANDARD_WEBHOOKS_SECRETS));
  if (config.SANDBOX_ENABLED) providers.push(sandboxProvider(config.SANDBOX_WEBHOOK_SECRET));
  return providers;
}
