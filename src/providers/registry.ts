// The inbound providers, one entry each: what turns it on, the secret its signatures are checked
// with, the headers that carry them, the event types it sends, how a sample body is read and how
// the provider is made. Adding a provider is its module under src/providers/ and one entry here;
// createProviders, the receiver's refusal lines, the log redaction (src/logger.ts), the route
// check's event types and `routes try` all read this list (test/unit/registries.test.ts).
import { type Config, sandboxSecrets } from '../config';
import type { TenantDirectory } from '../tenants/directory';
import { lineChannelsOf } from '../tenants/line-channels';
import { githubProvider, type SignedBodyLedger } from './github';
import { lineProvider } from './line';
import { SANDBOX_EVENT_TYPES, sandboxProvider } from './sandbox';
import { SDK_EVENT_TYPES } from './sdk-event-types';
import { revokingSlackProvider, type SlackRevocations, slackProvider } from './slack';
import { standardWebhooksProvider } from './standard-webhooks';
import { stripeProvider } from './stripe';
import type { WebhookProvider } from './types';

export interface ProviderDeps {
  /** Where the GitHub provider remembers signed bodies (its replay guard). */
  githubBodies: SignedBodyLedger;
  /** Per-tenant credentials: LINE channel secrets by destination. */
  tenants?: TenantDirectory;
  /** Where Slack's app_uninstalled and tokens_revoked notices revoke an installation (receivers). */
  slackRevocations?: SlackRevocations;
}

/** The Standard Webhooks providers: `std.<source>`, one per configured source. */
export const STANDARD_WEBHOOKS_PREFIX = 'std.';

/** A provider read for a sample: its parse() only, with the path parameters a delivery would carry. */
interface SampleReader {
  provider: WebhookProvider;
  params: Record<string, string>;
}

/** parse() reads no secret: verify() alone does, and a sample is not verified. */
const NO_SECRET = 'not-used-for-parsing';

interface ProviderEntry {
  /** The path segment under /webhooks/ (the `provider` of its events, but `std.<source>` for `std`). */
  readonly name: string;
  /** What turns it on, as the receiver's 404 says it ("set … to enable /webhooks/<name>"). */
  readonly enabledBy: string;
  /** The setting whose secret verifies its signatures, as the receiver's 401 names it. */
  readonly secret: string;
  /** Every setting it reads (each one validated in src/config.ts and listed in .env.example). */
  readonly settings: readonly (keyof Config)[];
  /** Request headers (lower case) that carry its signature: redacted in every log line (src/logger.ts). */
  readonly signatureHeaders: readonly string[];
  /** The event types it sends, in the order messages list them; absent: the sender names its own. */
  readonly eventTypes?: readonly string[];
  /** How `routes try --provider` names it. @default name */
  readonly sampleName?: string;
  /** Its parse() for a sample named `name` (`routes try`), or undefined when the name is not its. */
  sample(name: string): SampleReader | undefined;
  /**
   * Whether a body (undefined when not a JSON object) and its headers can only be this provider's.
   * A header that says so outranks any body (GitHub's event header).
   */
  readonly recognises?: { header: string } | { body: (fields: Record<string, unknown>) => boolean };
  /** The provider: undefined while the settings that turn it on are unset. */
  create(config: Config, deps: ProviderDeps): WebhookProvider | undefined;
}

/** A sample reader for a provider with one fixed name. */
function fixedSample(name: string, make: () => WebhookProvider): (asked: string) => SampleReader | undefined {
  return (asked) => (asked === name ? { provider: make(), params: {} } : undefined);
}

/** In the order `routes try` and the route check list them. */
export const PROVIDERS: readonly ProviderEntry[] = [
  {
    name: 'slack',
    enabledBy: 'SLACK_SIGNING_SECRET',
    secret: 'SLACK_SIGNING_SECRET',
    settings: ['SLACK_SIGNING_SECRET'],
    signatureHeaders: ['x-slack-signature'],
    eventTypes: SDK_EVENT_TYPES.slack,
    sample: fixedSample('slack', () => slackProvider(NO_SECRET)),
    recognises: {
      body: (fields) =>
        ['event_callback', 'url_verification', 'app_rate_limited'].includes(fields.type as string),
    },
    create(config, deps) {
      if (!config.SLACK_SIGNING_SECRET) return undefined;
      const slack = slackProvider(config.SLACK_SIGNING_SECRET);
      return deps.slackRevocations ? revokingSlackProvider(slack, deps.slackRevocations) : slack;
    },
  },
  {
    name: 'line',
    enabledBy: 'LINE_CHANNEL_SECRET (one channel), or TENANTS_FILE or LINE_CHANNELS=tenants (several),',
    secret: 'LINE_CHANNEL_SECRET',
    settings: ['LINE_CHANNEL_SECRET', 'TENANTS_FILE', 'LINE_CHANNELS'],
    signatureHeaders: ['x-line-signature'],
    eventTypes: SDK_EVENT_TYPES.line,
    sample: fixedSample('line', () => lineProvider(NO_SECRET)),
    recognises: { body: (fields) => typeof fields.destination === 'string' && Array.isArray(fields.events) },
    create(config, deps) {
      // On with the one-channel shortcut, or with channels by destination (TENANTS_FILE, LINE_CHANNELS=tenants).
      const channels = lineChannelsOf(config, deps.tenants);
      return config.LINE_CHANNEL_SECRET || channels
        ? lineProvider(config.LINE_CHANNEL_SECRET, channels)
        : undefined;
    },
  },
  {
    name: 'github',
    enabledBy: 'GITHUB_WEBHOOK_SECRET',
    secret: 'GITHUB_WEBHOOK_SECRET',
    settings: ['GITHUB_WEBHOOK_SECRET'],
    signatureHeaders: ['x-hub-signature', 'x-hub-signature-256'],
    eventTypes: SDK_EVENT_TYPES.github,
    // Without a ledger of signed bodies: a sample is never a replay.
    sample: fixedSample('github', () => githubProvider(NO_SECRET)),
    recognises: { header: 'x-github-event' },
    create: (config, deps) =>
      config.GITHUB_WEBHOOK_SECRET
        ? githubProvider(config.GITHUB_WEBHOOK_SECRET, deps.githubBodies)
        : undefined,
  },
  {
    name: 'stripe',
    enabledBy: 'STRIPE_WEBHOOK_SECRET',
    secret: 'STRIPE_WEBHOOK_SECRET',
    settings: ['STRIPE_WEBHOOK_SECRET'],
    signatureHeaders: ['stripe-signature'],
    eventTypes: SDK_EVENT_TYPES.stripe,
    sample: fixedSample('stripe', () => stripeProvider(NO_SECRET)),
    recognises: { body: (fields) => typeof fields.id === 'string' && fields.id.startsWith('evt_') },
    create: (config) =>
      config.STRIPE_WEBHOOK_SECRET ? stripeProvider(config.STRIPE_WEBHOOK_SECRET) : undefined,
  },
  {
    name: 'sandbox',
    enabledBy: 'SANDBOX_ENABLED',
    secret: 'SANDBOX_WEBHOOK_SECRET',
    settings: ['SANDBOX_ENABLED', 'SANDBOX_WEBHOOK_SECRET'],
    signatureHeaders: ['webhook-signature'],
    eventTypes: SANDBOX_EVENT_TYPES,
    sample: fixedSample('sandbox', () => sandboxProvider(NO_SECRET)),
    create(config) {
      const sandbox = sandboxSecrets(config);
      return sandbox ? sandboxProvider(sandbox.webhookSecret) : undefined;
    },
  },
  {
    name: 'std',
    enabledBy: 'STANDARD_WEBHOOKS_SECRETS',
    secret: 'STANDARD_WEBHOOKS_SECRETS',
    settings: ['STANDARD_WEBHOOKS_SECRETS'],
    signatureHeaders: ['webhook-signature'],
    sampleName: `${STANDARD_WEBHOOKS_PREFIX}<source>`,
    sample(name) {
      if (!name.startsWith(STANDARD_WEBHOOKS_PREFIX)) return undefined;
      const source = name.slice(STANDARD_WEBHOOKS_PREFIX.length);
      if (!/^[a-z0-9][a-z0-9_-]*$/i.test(source)) return undefined;
      return { provider: standardWebhooksProvider({ [source]: NO_SECRET }), params: { source } };
    },
    create: (config) =>
      Object.keys(config.STANDARD_WEBHOOKS_SECRETS).length > 0
        ? standardWebhooksProvider(config.STANDARD_WEBHOOKS_SECRETS)
        : undefined,
  },
];
