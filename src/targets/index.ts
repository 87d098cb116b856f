// The registry of outbound targets. A new target is one module under src/targets/ plus one line here.
// A provider's target registers only when its credentials are configured; route endpoints add `http:<name>`.
import { type Config, sandboxSecrets, slackOAuthSettings } from '../config';
import { SANDBOX_MODES } from '../model';
import type { TenantDirectory, TenantStore } from '../tenants/directory';
import { lineChannelsOf } from '../tenants/line-channels';
import { slackOAuth } from '../tenants/slack-oauth';
import { githubTarget } from './github';
import { installationTokens } from './github-app';
import { type HttpEndpoint, httpTarget } from './http';
import { lineTarget } from './line';
import { sandboxTarget } from './sandbox';
import { slackTarget } from './slack';
import { slackResponseTarget } from './slack-response';
import { slackTokens } from './slack-tokens';
import type { TargetAdapter } from './types';

export type TargetRegistry = ReadonlyMap<string, TargetAdapter>;

interface TargetDeps {
  /** Per-tenant credentials (Slack installations, LINE channels): a step's `destination.tenant` picks one. */
  tenants?: TenantDirectory;
  /** Where a refreshed Slack token is stored over the one it replaces (tenant_credentials' `replaceSecret`). */
  tenantStore?: Pick<TenantStore, 'replaceSecret'>;
}

export function createTargets(
  config: Config,
  endpoints: Record<string, HttpEndpoint> = {},
  deps: TargetDeps = {},
): TargetRegistry {
  const targets: TargetAdapter[] = [];
  const sandbox = sandboxSecrets(config);
  if (sandbox) {
    const base = config.SANDBOX_API_URL ?? `http://127.0.0.1:${config.PORT}/sandbox/api`;
    for (const mode of SANDBOX_MODES) targets.push(sandboxTarget(mode, base, sandbox.apiToken));
  }
  const slackOAuthOn = slackOAuthSettings(config);
  const slackTeamsListed = [...(deps.tenants?.file.entries.keys() ?? [])].some((tenant) =>
    tenant.startsWith('slack:'),
  );
  // On with the one-workspace shortcut, the install flow, or teams listed in TENANTS_FILE.
  if (config.SLACK_BOT_TOKEN || slackOAuthOn || slackTeamsListed) {
    const oauth = slackOAuthOn && slackOAuth(slackOAuthOn);
    const tokens = slackTokens({
      fallbackToken: config.SLACK_BOT_TOKEN,
      tenants: deps.tenants,
      replaceSecret: deps.tenantStore?.replaceSecret,
      ...(oauth ? { refresh: (refreshToken, signal) => oauth.refresh(refreshToken, signal) } : {}),
    });
    targets.push(slackTarget({ tokens, apiUrl: config.SLACK_API_URL }));
  }
  // Holds no credential (each command or interaction carries its own response_url), and has work
  // only where Slack's commands and interactivity are received.
  if (config.SLACK_SIGNING_SECRET) targets.push(slackResponseTarget({ apiUrl: config.SLACK_API_URL }));
  // With the one-channel shortcut's token, or with channels by destination (TENANTS_FILE, LINE_CHANNELS=tenants).
  const lineChannels = lineChannelsOf(config, deps.tenants);
  if (config.LINE_CHANNEL_ACCESS_TOKEN || lineChannels)
    targets.push(
      lineTarget({
        channelAccessToken: config.LINE_CHANNEL_ACCESS_TOKEN,
        channels: lineChannels,
        apiUrl: config.LINE_API_URL,
      }),
    );
  // The app's installations need no directory: each GitHub App webhook names its installation, whose
  // token the app's key fetches (config has checked that the id comes with a readable key).
  const app =
    config.GITHUB_APP_ID && config.GITHUB_APP_PRIVATE_KEY
      ? installationTokens({
          appId: config.GITHUB_APP_ID,
          privateKey: config.GITHUB_APP_PRIVATE_KEY,
          apiUrl: config.GITHUB_API_URL,
        })
      : undefined;
  if (config.GITHUB_TOKEN || app)
    targets.push(githubTarget({ token: config.GITHUB_TOKEN, app, apiUrl: config.GITHUB_API_URL }));
  for (const [name, endpoint] of Object.entries(endpoints)) targets.push(httpTarget(name, endpoint));
  return new Map(targets.map((t) => [t.name, t]));
}

/** Which setting enables a built-in target, for error messages that say how to fix a route. */
export const TARGET_SETTINGS: Record<string, string> = {
  slack: 'SLACK_BOT_TOKEN, SLACK_CLIENT_ID or TENANTS_FILE',
  'slack-response': 'SLACK_SIGNING_SECRET',
  line: 'LINE_CHANNEL_ACCESS_TOKEN, TENANTS_FILE or LINE_CHANNELS=tenants',
  github: 'GITHUB_TOKEN, or GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY',
  sandbox: 'SANDBOX_ENABLED',
  'sandbox-lookup': 'SANDBOX_ENABLED',
  'sandbox-blind': 'SANDBOX_ENABLED',
};
