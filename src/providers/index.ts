// The registry of inbound providers. A provider whose secret is unset is disabled (404).
import { type Config, sandboxSecrets } from '../config';
import type { TenantDirectory } from '../tenants/directory';
import { lineChannelsOf } from '../tenants/line-channels';
import { githubProvider, type SignedBodyLedger } from './github';
import { lineProvider } from './line';
import { sandboxProvider } from './sandbox';
import { revokingSlackProvider, type SlackRevocations, slackProvider } from './slack';
import { standardWebhooksProvider } from './standard-webhooks';
import { stripeProvider } from './stripe';
import type { WebhookProvider } from './types';

interface ProviderDeps {
  /** Where the GitHub provider remembers signed bodies (its replay guard). */
  githubBodies: SignedBodyLedger;
  /** Per-tenant credentials: LINE channel secrets by destination. */
  tenants?: TenantDirectory;
  /** Where Slack's app_uninstalled and tokens_revoked notices revoke an installation (receivers). */
  slackRevocations?: SlackRevocations;
}

export function createProviders(config: Config, deps: ProviderDeps): WebhookProvider[] {
  const providers: WebhookProvider[] = [];
  if (config.SLACK_SIGNING_SECRET) {
    const slack = slackProvider(config.SLACK_SIGNING_SECRET);
    providers.push(deps.slackRevocations ? revokingSlackProvider(slack, deps.slackRevocations) : slack);
  }
  // On with the one-channel shortcut, or with channels by destination (TENANTS_FILE, LINE_CHANNELS=tenants).
  const lineChannels = lineChannelsOf(config, deps.tenants);
  if (config.LINE_CHANNEL_SECRET || lineChannels)
    providers.push(lineProvider(config.LINE_CHANNEL_SECRET, lineChannels));
  if (config.GITHUB_WEBHOOK_SECRET)
    providers.push(githubProvider(config.GITHUB_WEBHOOK_SECRET, deps.githubBodies));
  if (config.STRIPE_WEBHOOK_SECRET) providers.push(stripeProvider(config.STRIPE_WEBHOOK_SECRET));
  if (Object.keys(config.STANDARD_WEBHOOKS_SECRETS).length > 0)
    providers.push(standardWebhooksProvider(config.STANDARD_WEBHOOKS_SECRETS));
  const sandbox = sandboxSecrets(config);
  if (sandbox) providers.push(sandboxProvider(sandbox.webhookSecret));
  return providers;
}

/**
 * The settings behind each provider, for the receiver's refusal lines: `enabledBy` unset, the provider
 * answers 404; `secret` not the sender's, its deliveries fail verification (401).
 */
export const PROVIDER_SETTINGS: ReadonlyMap<string, { enabledBy: string; secret: string }> = new Map([
  ['slack', { enabledBy: 'SLACK_SIGNING_SECRET', secret: 'SLACK_SIGNING_SECRET' }],
  [
    'line',
    {
      enabledBy: 'LINE_CHANNEL_SECRET (one channel), or TENANTS_FILE or LINE_CHANNELS=tenants (several),',
      secret: 'LINE_CHANNEL_SECRET',
    },
  ],
  ['github', { enabledBy: 'GITHUB_WEBHOOK_SECRET', secret: 'GITHUB_WEBHOOK_SECRET' }],
  ['stripe', { enabledBy: 'STRIPE_WEBHOOK_SECRET', secret: 'STRIPE_WEBHOOK_SECRET' }],
  ['std', { enabledBy: 'STANDARD_WEBHOOKS_SECRETS', secret: 'STANDARD_WEBHOOKS_SECRETS' }],
  ['sandbox', { enabledBy: 'SANDBOX_ENABLED', secret: 'SANDBOX_WEBHOOK_SECRET' }],
]);
