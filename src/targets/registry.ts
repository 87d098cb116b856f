// The built-in targets, one entry each: what turns it on, the settings it reads, the headers that
// carry its credential, its row in docs/targets.md and how its adapters are made. Adding a target is
// its module under src/targets/ and one entry here; createTargets, the route check's "set …" hint,
// the log redaction and the docs table's check (test/unit/registries.test.ts) all read this list.
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

export interface TargetDeps {
  /** Per-tenant credentials (Slack installations, LINE channels): a step's `destination.tenant` picks one. */
  tenants?: TenantDirectory;
  /** Where a refreshed Slack token is stored over the one it replaces (tenant_credentials' `replaceSecret`). */
  tenantStore?: Pick<TenantStore, 'replaceSecret'>;
}

/** What an entry's adapters are made from: the settings, the route file's endpoints, the tenants. */
interface TargetContext extends TargetDeps {
  config: Config;
  endpoints: Record<string, HttpEndpoint>;
}

/** A target's row in the table of docs/targets.md ("What each target promises"), cell by cell, as Markdown. */
export interface TargetDocsRow {
  target: string;
  enabledBy: string;
  idempotencyKey: string;
  lookup: string;
  consistencyDelay: string;
  retryable: string;
  permanent: string;
  unknown: string;
}

interface TargetEntry {
  /** The names a route's step gives it (`target:`), one adapter each; none for the route file's `http:<endpoint>`. */
  readonly names: readonly string[];
  /** What turns it on, as the route check's "is not configured (set …)" says it. */
  readonly enabledBy: string;
  /** Every setting it reads (each one validated in src/config.ts and listed in .env.example). */
  readonly settings: readonly (keyof Config)[];
  /** Request headers (lower case) that carry its credential: redacted wherever a request is logged. */
  readonly secretHeaders: readonly string[];
  readonly docs: TargetDocsRow;
  /** Its adapters: none while the settings that turn it on are unset. */
  create(context: TargetContext): TargetAdapter[];
}

/** In the order of docs/targets.md's table and of the route check's list of targets. */
export const TARGETS: readonly TargetEntry[] = [
  {
    names: ['slack'],
    enabledBy: 'SLACK_BOT_TOKEN, SLACK_CLIENT_ID or TENANTS_FILE',
    settings: [
      'SLACK_BOT_TOKEN',
      'SLACK_CLIENT_ID',
      'SLACK_CLIENT_SECRET',
      'SLACK_SCOPES',
      'SLACK_REDIRECT_URI',
      'TENANTS_FILE',
      'SLACK_API_URL',
    ],
    secretHeaders: ['authorization'],
    docs: {
      target: "`slack` — `chat.postMessage` in the message's thread",
      enabledBy:
        "`SLACK_BOT_TOKEN`, or each team's installation (`SLACK_CLIENT_ID`, docs/slack.md) (`SLACK_API_URL`)",
      idempotencyKey: 'none documented',
      lookup:
        "effect id in message `metadata` (`event_type` `replyflow_effect`, `event_payload.effect_id`), read back with `conversations.replies` (thread) or `conversations.history` (channel), `include_all_metadata`, from the effect's claim time, cursor pages",
      consistencyDelay: '10 s (_ours_)',
      retryable:
        '429 (`Retry-After`), `ratelimited`, `service_unavailable`, `request_timeout`, connection refused',
      permanent:
        '`invalid_auth`, `not_authed`, `token_revoked`, `missing_scope`, `channel_not_found`, `not_in_channel`, `is_archived`, `msg_too_long`, … and any other `ok:false` error',
      unknown: '`internal_error`, `fatal_error`, HTTP 5xx, reset or timeout after the request was written',
    },
    create({ config, tenants, tenantStore }) {
      const slackOAuthOn = slackOAuthSettings(config);
      const slackTeamsListed = [...(tenants?.file.entries.keys() ?? [])].some((tenant) =>
        tenant.startsWith('slack:'),
      );
      // On with the one-workspace shortcut, the install flow, or teams listed in TENANTS_FILE.
      if (!config.SLACK_BOT_TOKEN && !slackOAuthOn && !slackTeamsListed) return [];
      const oauth = slackOAuthOn && slackOAuth(slackOAuthOn);
      const tokens = slackTokens({
        fallbackToken: config.SLACK_BOT_TOKEN,
        tenants,
        replaceSecret: tenantStore?.replaceSecret,
        ...(oauth ? { refresh: (refreshToken, signal) => oauth.refresh(refreshToken, signal) } : {}),
      });
      return [slackTarget({ tokens, apiUrl: config.SLACK_API_URL })];
    },
  },
  {
    names: ['slack-response'],
    enabledBy: 'SLACK_SIGNING_SECRET',
    settings: ['SLACK_SIGNING_SECRET', 'SLACK_API_URL'],
    // The response_url is the capability; it is kept out of logs by the destination's redaction.
    secretHeaders: [],
    docs: {
      target: "`slack-response` — a command's or interaction's `response_url`",
      enabledBy:
        "`SLACK_SIGNING_SECRET` (no token; `SLACK_API_URL`'s origin is accepted besides `https://hooks.slack.com/`)",
      idempotencyKey: 'none',
      lookup: 'none',
      consistencyDelay: '—',
      retryable: '503, connection refused',
      permanent:
        "404, 410, `expired_url`, `used_url` (30 minutes passed or 5 uses), any other error Slack answers, a URL that is not Slack's",
      unknown: '5xx but 503, reset or timeout after the request was written: **held**',
    },
    // Holds no credential (each command or interaction carries its own response_url), and has work
    // only where Slack's commands and interactivity are received.
    create: ({ config }) =>
      config.SLACK_SIGNING_SECRET ? [slackResponseTarget({ apiUrl: config.SLACK_API_URL })] : [],
  },
  {
    names: ['line'],
    enabledBy: 'LINE_CHANNEL_ACCESS_TOKEN, TENANTS_FILE or LINE_CHANNELS=tenants',
    settings: ['LINE_CHANNEL_ACCESS_TOKEN', 'TENANTS_FILE', 'LINE_CHANNELS', 'LINE_API_URL'],
    secretHeaders: ['authorization'],
    docs: {
      target: '`line` — reply token while fresh, else push',
      enabledBy:
        "`LINE_CHANNEL_ACCESS_TOKEN`, or the step's channel's (`TENANTS_FILE`, `LINE_CHANNELS=tenants`)",
      idempotencyKey:
        'push: `X-Line-Retry-Key` = effect id; 409 on a reused key = already accepted → succeeded. Reply: none',
      lookup: 'none',
      consistencyDelay: '—',
      retryable: '429 (not the monthly limit), connection refused',
      permanent:
        '400 (other than `Invalid reply token`, which falls back to push; a refused message object is named), 401, 403, 429 "monthly limit"',
      unknown:
        '5xx, reset or timeout: **resent with the same key if it was a push, held if it was a reply-token request**',
    },
    create({ config, tenants }) {
      // With the one-channel shortcut's token, or with channels by destination (TENANTS_FILE, LINE_CHANNELS=tenants).
      const channels = lineChannelsOf(config, tenants);
      if (!config.LINE_CHANNEL_ACCESS_TOKEN && !channels) return [];
      return [
        lineTarget({
          channelAccessToken: config.LINE_CHANNEL_ACCESS_TOKEN,
          channels,
          apiUrl: config.LINE_API_URL,
        }),
      ];
    },
  },
  {
    names: ['github'],
    enabledBy: 'GITHUB_TOKEN, or GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY',
    settings: [
      'GITHUB_TOKEN',
      'GITHUB_APP_ID',
      'GITHUB_APP_PRIVATE_KEY',
      'GITHUB_APP_PRIVATE_KEY_FILE',
      'GITHUB_API_URL',
    ],
    secretHeaders: ['authorization'],
    docs: {
      target: '`github` — issue / PR comment',
      enabledBy: '`GITHUB_TOKEN`, or `GITHUB_APP_ID` and `GITHUB_APP_PRIVATE_KEY` (`GITHUB_API_URL`)',
      idempotencyKey: 'none',
      lookup:
        'hidden marker `<!-- replyflow-effect: <effect id> -->` at the end of the comment, found by listing the issue\'s comments (`per_page=100`, `since` the claim time, `Link: rel="next"`)',
      consistencyDelay: '10 s (_ours_)',
      retryable:
        '403/429 with `Retry-After` (secondary limit), 403/429 with `x-ratelimit-remaining: 0` (until `x-ratelimit-reset`), 503, connection refused',
      permanent: '401, other 403, 404, 410, 422',
      unknown: '500, 502, 504, reset or timeout after writing',
    },
    create({ config }) {
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
      if (!config.GITHUB_TOKEN && !app) return [];
      return [githubTarget({ token: config.GITHUB_TOKEN, app, apiUrl: config.GITHUB_API_URL })];
    },
  },
  {
    names: [],
    enabledBy: 'an entry under endpoints: in ROUTES_FILE',
    settings: ['ROUTES_FILE'],
    // Each endpoint names its own headers (`${NAME}` from the environment); Authorization is the usual one.
    secretHeaders: ['authorization'],
    docs: {
      target: '`http:<endpoint>` — generic HTTP (route file)',
      enabledBy: 'an entry under `endpoints:`',
      idempotencyKey:
        '`Idempotency-Key: "<effect id>"` (IETF draft; header name, quoted/plain format and whether the API honours it are configurable)',
      lookup:
        'optional `lookup.url` template, e.g. `…?reference={effectId}`: 200 with an object or a non-empty list = found, 404 or `[]` = not found',
      consistencyDelay: '`consistencyDelay` (default 0)',
      retryable:
        '429 and 503 (`Retry-After`), **409 = a request with this key is still in flight** (retried later, same key), connection refused',
      permanent:
        "400, 401, 403, 404, **422 = key reused with another payload** (flagged: do not reprocess before checking the route's operation id)",
      unknown: '500, 502, 504, reset or timeout after writing',
    },
    create: ({ endpoints }) =>
      Object.entries(endpoints).map(([name, endpoint]) => httpTarget(name, endpoint)),
  },
  {
    names: SANDBOX_MODES,
    enabledBy: 'SANDBOX_ENABLED',
    settings: ['SANDBOX_ENABLED', 'SANDBOX_API_TOKEN', 'SANDBOX_API_URL', 'PORT'],
    secretHeaders: ['authorization'],
    docs: {
      target: '`sandbox`, `sandbox-lookup`, `sandbox-blind`',
      enabledBy: '`SANDBOX_ENABLED`',
      idempotencyKey: '`sandbox` only',
      lookup: '`sandbox`, `sandbox-lookup`',
      consistencyDelay: '2 s for `sandbox-lookup`',
      retryable: '429, 503',
      permanent: '4xx',
      unknown: '5xx, lost response',
    },
    create({ config }) {
      const sandbox = sandboxSecrets(config);
      if (!sandbox) return [];
      const base = config.SANDBOX_API_URL ?? `http://127.0.0.1:${config.PORT}/sandbox/api`;
      return SANDBOX_MODES.map((mode) => sandboxTarget(mode, base, sandbox.apiToken));
    },
  },
];
