// The environment, read once at start-up and validated as a whole: every problem is listed at once,
// empty strings count as unset. The only module that reads process.env (test/unit/config-read-once.test.ts
// keeps it so): every variable it reads is in a schema here, documented in README.md and .env.example.
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, SandboxSettingsError } from './errors';
import { DEFAULT_RUNTIME_FILE, type FoundStart, findRunningStart } from './running-start';

const optional = z.string().min(1).optional();
const url = z.url().optional();
const port = z.coerce.number().int().min(0).max(65535);

/** `source=whsec_…,source2=whsec_…` → { source: 'whsec_…', … } */
const standardWebhooksSecrets = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const secrets: Record<string, string> = {};
    if (!value) return secrets;
    for (const entry of value.split(',')) {
      const [source, secret] = entry.split('=').map((part) => part.trim());
      if (!source || !secret || !/^[a-z0-9][a-z0-9_-]*$/i.test(source)) {
        ctx.addIssue({
          code: 'custom',
          message: 'expected source=whsec_… pairs separated by commas (source: letters, digits, - and _)',
        });
        return z.NEVER;
      }
      secrets[source] = secret;
    }
    return secrets;
  });

function decodedOrUndefined(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `30s`, `15m`, `4h`, `7d` → milliseconds. */
export function parseDuration(value: string): number | undefined {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(value.trim());
  return match ? Number(match[1]) * UNITS[match[2]!]! : undefined;
}

const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value, ctx) => {
      const ms = parseDuration(value);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: 'expected a duration such as 500ms, 30s, 15m, 4h or 7d' });
        return z.NEVER;
      }
      return ms;
    });

const durations = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value, ctx) => {
      const list = value.split(',').map(parseDuration);
      if (list.some((ms) => ms === undefined)) {
        ctx.addIssue({
          code: 'custom',
          message: 'expected durations separated by commas, e.g. 15m,1h,4h,24h',
        });
        return z.NEVER;
      }
      return list as number[];
    });

/** A duration that bounds what a client may hold: never 0, which Node reads as "no limit". */
const limit = (fallback: string) =>
  duration(fallback).refine((ms) => ms >= 100, {
    message: 'must be at least 100ms (0 would turn the limit off)',
  });

const keyIdPattern = /^[\w.-]{1,64}$/;

const encryptionKey = z
  .string()
  .optional()
  .refine((v) => v === undefined || Buffer.from(v, 'base64').length === 32, {
    message: 'must be 32 bytes, base64-encoded (e.g. `openssl rand -base64 32`)',
  });

/** `id=base64key,id2=base64key` → { id: 'base64key', … }: further keys the payload codec decrypts with. */
const decryptionKeys = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const keys: Record<string, string> = {};
    if (!value) return keys;
    for (const entry of value.split(',')) {
      const at = entry.indexOf('=');
      const id = entry.slice(0, Math.max(at, 0)).trim();
      const key = entry.slice(at + 1).trim();
      if (!id || !key || !keyIdPattern.test(id) || Buffer.from(key, 'base64').length !== 32) {
        ctx.addIssue({
          code: 'custom',
          message:
            'expected id=key pairs separated by commas (id: letters, digits, ., - and _; key: 32 bytes, base64)',
        });
        return z.NEVER;
      }
      keys[id] = key;
    }
    return keys;
  });

/**
 * Proxies whose X-Forwarded-For and X-Forwarded-Proto the receiver believes, in Express's `trust proxy`
 * terms: `loopback`, `linklocal`, `uniquelocal`, addresses and CIDR ranges, comma-separated. Unset:
 * none, so a client cannot claim another address or TLS by writing a header. "Every proxy" (`true`)
 * and hop counts are refused: they would let any client claim any address.
 */
const trustedProxies = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const entries = (value ?? '')
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    for (const entry of entries) {
      const [address, prefix, extra] = entry.split('/');
      const named = ['loopback', 'linklocal', 'uniquelocal'].includes(entry);
      const ip = isIP(address ?? '');
      const prefixOk =
        prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (ip === 6 ? 128 : 32));
      if (!named && (ip === 0 || !prefixOk || extra !== undefined)) {
        ctx.addIssue({
          code: 'custom',
          message: `"${entry}" is not loopback, linklocal, uniquelocal, an IP address or a CIDR range`,
        });
        return z.NEVER;
      }
    }
    return entries;
  });

/**
 * Slack channel ids, comma-separated: `C…` (channels, and newer private ones) or `G…` (older private
 * channels and group DMs), as Slack shows them at the bottom of a channel's details. Each entry that is
 * not one is its own problem. Direct messages (`D…`) are answered anyway, so one listed is a mistake.
 */
const slackChannelIds = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const ids = (value ?? '')
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean);
    for (const id of ids) {
      if (/^D[A-Z0-9]+$/.test(id))
        ctx.addIssue({ code: 'custom', message: `"${id}" is a direct message, which is always answered` });
      else if (!/^[CG][A-Z0-9]{2,}$/.test(id))
        ctx.addIssue({
          code: 'custom',
          message: `"${id}" is not a channel id such as C0123ABCD (the id, not the #name: see the channel's details)`,
        });
    }
    return ids;
  });

/** The bot scopes deploy/slack-app-manifest.yaml asks for (test/deploy/slack-manifest.test.ts keeps them equal). */
export const SLACK_MANIFEST_SCOPES = [
  'app_mentions:read',
  'commands',
  'chat:write',
  'channels:history',
  'groups:history',
  'im:history',
  'mpim:history',
] as const;

/** Slack scopes, comma-separated, as the authorize URL takes them (`chat:write,im:history`). */
const slackScopes = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined) return [...SLACK_MANIFEST_SCOPES];
    const scopes = value
      .split(',')
      .map((scope) => scope.trim())
      .filter(Boolean);
    for (const scope of scopes)
      if (!/^[a-z][a-z0-9_.-]*(:[a-z0-9_.-]+)*$/.test(scope))
        ctx.addIssue({
          code: 'custom',
          message: `"${scope.slice(0, 40)}" is not a Slack scope such as chat:write`,
        });
    if (scopes.length === 0) ctx.addIssue({ code: 'custom', message: 'name at least one scope' });
    return scopes;
  });

/** `true` / `false`, or unset (undefined) where the role decides (the sandbox). */
const optionalFlag = z
  .enum(['true', 'false'])
  .optional()
  .transform((v) => (v === undefined ? undefined : v === 'true'));

export const configSchema = z.object({
  PORT: port.default(3000),
  /**
   * Address the receiver and the worker's metrics listen on. Loopback by default: nothing is reachable
   * from the network until a deployment says so (the image sets 0.0.0.0).
   */
  HOST: z.string().min(1).default('127.0.0.1'),
  /** pino's level; at `debug` (or `trace`) refusals and SDK warnings carry the error's stack too. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * The least severe of the Temporal SDK's own lines that are logged (through our logger). Its INFO and
   * DEBUG lines are the worker's internals, hence WARN.
   */
  REPLYFLOW_SDK_LOG_LEVEL: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('WARN'),
  REPLYFLOW_DATA_DIR: z.string().default('.data'),
  /** Unset → the launcher starts an embedded `temporal server start-dev`. */
  TEMPORAL_ADDRESS: optional,
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('replyflow'),
  TEMPORAL_UI_PORT: port.default(8233),
  /** gRPC port of the dev server `replyflow start` embeds. */
  TEMPORAL_DEV_PORT: port.default(7233),
  /**
   * Connection security for TEMPORAL_ADDRESS, named as in Temporal's own client environment
   * configuration. Unset TEMPORAL_TLS → TLS whenever an API key or any TLS file is set.
   */
  TEMPORAL_TLS: z.enum(['true', 'false']).optional(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: optional,
  TEMPORAL_TLS_CLIENT_KEY_PATH: optional,
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: optional,
  /** Overrides the name the server certificate is checked against (SNI), e.g. behind a proxy. */
  TEMPORAL_TLS_SERVER_NAME: optional,
  /** Temporal Cloud API key, sent as a bearer token. */
  TEMPORAL_API_KEY: optional,
  /**
   * The worker's gRPC compression to Temporal. The SDK's own default is gzip on every request; on the
   * same host or network that is CPU on both ends and a large buffer malloc'd and freed on each
   * request (docs/benchmarks.md, "gzip on every request"), so replyflow sends plain; gzip for a slow link.
   */
  TEMPORAL_GRPC_COMPRESSION: z.enum(['none', 'gzip']).default('none'),
  /** Unset → the launcher starts an embedded PostgreSQL. */
  DATABASE_URL: optional,
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(10),
  /** AES-256-GCM key for payloads in Temporal history; the launcher generates one under the data dir if unset. */
  REPLYFLOW_ENCRYPTION_KEY: encryptionKey,
  /** Stored with every payload the key encrypts, so that a rotated-out key can still be found by id. */
  REPLYFLOW_ENCRYPTION_KEY_ID: z
    .string()
    .regex(keyIdPattern, 'letters, digits, ., - and _')
    .default('default'),
  /** Keys being rotated in or out, `id=base64key,…`: accepted for decryption, never used to encrypt. */
  REPLYFLOW_DECRYPTION_KEYS: decryptionKeys,
  /** Largest webhook body accepted, in bytes (413 above). */
  WEBHOOK_BODY_LIMIT: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  /** Deadline for the durable start before the receiver answers 503 (below every sender's ack deadline). */
  WEBHOOK_START_DEADLINE_MS: z.coerce.number().int().min(50).default(1500),
  /**
   * Event starts a receiver has at Temporal at once; more wait their turn in the receiver, at most half
   * of WEBHOOK_START_DEADLINE_MS (then 503, nothing sent). 32 callers reach the dev server's raw start
   * rate (docs/benchmarks.md); past a server's capacity more only make each start later.
   */
  WEBHOOK_START_CONCURRENCY: z.coerce.number().int().min(1).default(32),
  /**
   * What a client may hold of the receiver (slowloris): the time to send its request headers, the time
   * to send the whole request (headers and body; the answer is not counted), how long an idle
   * keep-alive connection stays open, and how many connections are open at once (more are closed as
   * they arrive). A webhook is a few KiB sent at once; senders that take longer are broken or hostile.
   */
  RECEIVER_HEADERS_TIMEOUT: limit('10s'),
  RECEIVER_REQUEST_TIMEOUT: limit('30s'),
  RECEIVER_KEEP_ALIVE_TIMEOUT: limit('5s'),
  RECEIVER_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  SLACK_SIGNING_SECRET: optional,
  /** One workspace's bot token: the shortcut, and the token of any team not installed through /slack/install. */
  SLACK_BOT_TOKEN: optional,
  SLACK_API_URL: z.url().default('https://slack.com/api/'),
  /**
   * The app's OAuth credentials (its Basic Information page), both or neither: with them the receiver
   * serves Slack's install flow (/slack/install, src/receiver/slack-install.ts) and workers refresh
   * rotated tokens.
   */
  SLACK_CLIENT_ID: optional,
  SLACK_CLIENT_SECRET: optional,
  /** The bot scopes an installation asks for: those of deploy/slack-app-manifest.yaml unless set. */
  SLACK_SCOPES: slackScopes,
  /** Where Slack sends the installer back (…/slack/oauth_redirect); unset: the app's first Redirect URL. */
  SLACK_REDIRECT_URI: url,
  /**
   * Which Slack messages the default route answers besides mentions, direct messages and replies in a
   * thread the bot is in: `mentions`, none; `all`, every person's message in every channel the bot is in.
   */
  SLACK_REPLY_TO: z
    .enum(['mentions', 'all'], { error: 'expected mentions (the default) or all' })
    .default('mentions'),
  /** Channels where every person's message is answered, as SLACK_REPLY_TO=all does everywhere. */
  SLACK_REPLY_TO_ALL_IN: slackChannelIds,
  /** The one-channel shortcut: verifies every LINE destination that has no channel of its own. */
  LINE_CHANNEL_SECRET: optional,
  /** The one-channel shortcut's access token: answers every destination that has no channel of its own. */
  LINE_CHANNEL_ACCESS_TOKEN: optional,
  /**
   * `tenants`: LINE channels also come from the tenant store (`replyflow tenant add line:U…`), looked
   * up by each webhook's destination; receivers and workers pick up a channel added there without a
   * restart. Unset: only TENANTS_FILE's channels and the LINE_CHANNEL_* shortcut.
   */
  LINE_CHANNELS: z
    .enum(['tenants'], { error: 'expected tenants (channels from `replyflow tenant add`), or unset' })
    .optional(),
  LINE_API_URL: z.url().default('https://api.line.me'),
  GITHUB_WEBHOOK_SECRET: optional,
  /** A personal (or fine-grained) token: answers GitHub events that carry no installation. */
  GITHUB_TOKEN: optional,
  GITHUB_API_URL: z.url().default('https://api.github.com'),
  /**
   * A GitHub App's App ID (its settings page, "About"). With the app's private key, each event from
   * an installation of the app is answered with that installation's own token (src/targets/github-app.ts).
   */
  GITHUB_APP_ID: z
    .string()
    .regex(/^\d{1,20}$/, "the app's numeric App ID (its settings page, About)")
    .optional(),
  /**
   * The app's private key as PEM text (the .pem its settings page generates; `\n` escapes count as line
   * breaks). Once loaded: the key, whether it came from here or from GITHUB_APP_PRIVATE_KEY_FILE.
   */
  GITHUB_APP_PRIVATE_KEY: optional,
  /** A file holding the app's private key (a mounted secret), instead of GITHUB_APP_PRIVATE_KEY. */
  GITHUB_APP_PRIVATE_KEY_FILE: optional,
  STRIPE_WEBHOOK_SECRET: optional,
  STANDARD_WEBHOOKS_SECRETS: standardWebhooksSecrets,
  /**
   * The sandbox (demo channel) signs its webhooks Standard-Webhooks style with this secret; unset,
   * `replyflow start` generates one under the data dir (src/sandbox/settings.ts).
   */
  SANDBOX_WEBHOOK_SECRET: z
    .string()
    .regex(
      /^whsec_[A-Za-z0-9+/]{24,}={0,2}$/,
      'a Standard Webhooks secret: whsec_ and at least 18 bytes, base64',
    )
    .optional(),
  /** The bearer token workers send to the sandbox target API; generated like SANDBOX_WEBHOOK_SECRET. */
  SANDBOX_API_TOKEN: z.string().min(16, 'at least 16 characters (e.g. `openssl rand -hex 32`)').optional(),
  /** Where the worker reaches the sandbox target API; defaults to this receiver's own /sandbox/api. */
  SANDBOX_API_URL: url,
  /** Serve the sandbox page (and the page's API) to clients other than this machine. */
  SANDBOX_ALLOW_REMOTE: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /** Send attempts for retryable errors, and their total time budget. */
  SEND_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(8),
  SEND_MAX_ELAPSED: duration('1h'),
  /** One send attempt's timeout, which is also its lease on the effect row. */
  SEND_TIMEOUT: duration('30s'),
  /** Reminder delays while work is held; the last one repeats. */
  HELD_REMINDERS: durations('15m,1h,4h,24h'),
  /**
   * A send waits until this long after its source message occurred (never longer from now), so that
   * earlier messages of the conversation delivered a little later go first.
   */
  TURN_GATHER: duration('2s'),
  /** How long failed work waits for reprocess or discard before its workflow closes as failed. */
  FAILED_PARK: duration('7d'),
  /** Where held/failed alerts are POSTed as JSON (e.g. a Slack incoming webhook); unset: log only. */
  ALERT_WEBHOOK_URL: url,
  /** The Temporal Web UI, for links in alerts and on the sandbox page. */
  TEMPORAL_UI_URL: url,
  /** Browser origins allowed to call the codec server, comma-separated; unset: the Web UI's origin. */
  CODEC_CORS_ORIGINS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const origins = (value ?? '')
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean);
      for (const origin of origins) {
        if (!URL.canParse(origin) || new URL(origin).origin !== origin) {
          ctx.addIssue({
            code: 'custom',
            message: `"${origin}" is not an origin such as http://127.0.0.1:8233`,
          });
          return z.NEVER;
        }
      }
      return origins;
    }),
  /** Proxies in front of the receiver whose X-Forwarded-* headers count (client address, TLS); unset: none. */
  TRUST_PROXY: trustedProxies,
  /** The codec login cookie is always `Secure` (else only over TLS, or behind a trusted proxy's TLS). */
  CODEC_COOKIE_SECURE: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /** Port of the worker's Prometheus endpoint (our metrics and the Temporal SDK's); 0: none. */
  WORKER_METRICS_PORT: port.default(9464),
  /**
   * Workflows a worker keeps in memory (~0.5 MiB each) between their tasks; beyond it, one waiting
   * is evicted and replayed when it wakes. Unset: what the SDK derives from the heap (docs/deploy.md).
   */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).optional(),
  /** Sends a worker runs at once (each may first wait out TURN_GATHER), and as many other activities. */
  WORKER_ACTIVITY_SLOTS: z.coerce.number().int().min(1).default(200),
  /** An FAQ file (JSON) for the default responder; unset: the built-in FAQ. */
  RESPONDER_FAQ_FILE: optional,
  /**
   * The bot's logic as a module (`.ts`, `.js` or `.mjs`) exporting `respond(event)` (src/bot.ts,
   * docs/responders.md), loaded by the worker; when set it replaces the FAQ responder.
   */
  RESPONDER_MODULE: optional,
  /** The bot's logic as a service (POST the event as JSON → the answer); when set it replaces the FAQ responder. */
  RESPONDER_URL: url,
  RESPONDER_TOKEN: optional,
  RESPONDER_TIMEOUT: duration('10s'),
  /**
   * LINE channels and Slack teams for the static case (YAML, docs/deploy.md "Several LINE channels and
   * Slack teams"): each secret named by an environment variable, never written in the file. Read at
   * start: a change needs a restart.
   */
  TENANTS_FILE: optional,
  /** Configured routes and HTTP endpoints (JSON or YAML, docs/targets.md); unset: default chat routes only. */
  ROUTES_FILE: optional,
  /** The CLI's operator token (`replyflow operator add` prints it); unset: the token file `replyflow login` wrote. */
  REPLYFLOW_OPERATOR_TOKEN: optional,
  /** Where `replyflow login` keeps the token; unset: `$XDG_CONFIG_HOME/replyflow/operator-token` (~/.config). */
  REPLYFLOW_OPERATOR_TOKEN_FILE: optional,
  /** The receiver the operator CLI talks to (its operator API); unset: from REPLYFLOW_CODEC_URL, else `http://127.0.0.1:$PORT`. */
  REPLYFLOW_URL: url,
  /** The former way to point the CLI at a receiver (its `/codec`): still accepted, REPLYFLOW_URL comes first. */
  REPLYFLOW_CODEC_URL: url,
  /**
   * Where `replyflow start` writes where it runs (its receiver's URL, the data dir) and where the CLI
   * looks for it; unset: `.replyflow/running.json` in the clone (src/running-start.ts).
   */
  REPLYFLOW_RUNTIME_FILE: optional,
  /**
   * The sandbox provider, page and target. Unset: on for `replyflow start` (the local demo), off for
   * `replyflow receiver` / `worker` (src/sandbox/settings.ts).
   */
  SANDBOX_ENABLED: optionalFlag,
  /**
   * Traces (docs/runbook.md, "Traces"), by OpenTelemetry's own variables: `otlp` or `console` turn
   * them on, `none` off; unset: on (OTLP) when an OTLP endpoint is set, else off.
   */
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'console', 'none']).optional(),
  /** The collector's OTLP/HTTP base URL; spans go to `<it>/v1/traces`. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url,
  /** The full URL spans are sent to, when not `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url,
  /** Only OTLP over HTTP with JSON bodies, which a collector's OTLP/HTTP receiver (port 4318) takes. */
  OTEL_EXPORTER_OTLP_PROTOCOL: z
    .enum(['http/json'], {
      message:
        'replyflow sends OTLP over HTTP as JSON: set http/json (a collector takes it on its OTLP/HTTP port, 4318) or unset it',
    })
    .optional(),
  /** Headers for the collector (`key=value,key2=value2`, values URL-encoded), e.g. its API key. Never logged. */
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const headers: Record<string, string> = {};
      for (const entry of (value ?? '').split(',')) {
        if (entry.trim() === '') continue;
        const at = entry.indexOf('=');
        const key = entry.slice(0, at).trim();
        const decoded = at < 1 || key === '' ? undefined : decodedOrUndefined(entry.slice(at + 1).trim());
        if (decoded === undefined) {
          // Never the value: it is often a credential.
          ctx.addIssue({
            code: 'custom',
            message: 'expected key=value pairs separated by commas, values URL-encoded',
          });
          return z.NEVER;
        }
        headers[key] = decoded;
      }
      return headers;
    }),
  /** The `service.name` of every span. */
  OTEL_SERVICE_NAME: z.string().default('replyflow'),
  /** OpenTelemetry's switch for the whole SDK: `true` turns traces off whatever else is set. */
  OTEL_SDK_DISABLED: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
});

/** Settings that are valid alone but not together: each problem with the field to change. */
function combinationProblems(config: Config): string[] {
  const problems: string[] = [];
  // Node refuses to start a server whose headers may take longer than the whole request.
  if (config.RECEIVER_HEADERS_TIMEOUT > config.RECEIVER_REQUEST_TIMEOUT)
    problems.push(
      'RECEIVER_HEADERS_TIMEOUT: must not be longer than RECEIVER_REQUEST_TIMEOUT (the headers are part of the request)',
    );
  if (config.SLACK_REPLY_TO === 'all' && config.SLACK_REPLY_TO_ALL_IN.length > 0)
    problems.push(
      'SLACK_REPLY_TO_ALL_IN: has no effect with SLACK_REPLY_TO=all, which answers every channel already (unset one of them)',
    );
  if ((config.SLACK_CLIENT_ID === undefined) !== (config.SLACK_CLIENT_SECRET === undefined))
    problems.push(
      `${config.SLACK_CLIENT_ID ? 'SLACK_CLIENT_SECRET' : 'SLACK_CLIENT_ID'}: set both SLACK_CLIENT_ID and SLACK_CLIENT_SECRET (the app's Basic Information page) or neither`,
    );
  return problems;
}

/** Where spans go when traces are on (src/tracing.ts). */
export type TracesExport =
  | { exporter: 'console'; serviceName: string }
  | { exporter: 'otlp'; serviceName: string; url: string; headers: Record<string, string> };

/** Off (undefined) unless an OTEL_* variable turns traces on: no exporter, no spans, no interceptors. */
export function tracesExport(config: Config): TracesExport | undefined {
  const endpoint = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? config.OTEL_EXPORTER_OTLP_ENDPOINT;
  const exporter = config.OTEL_TRACES_EXPORTER ?? (endpoint ? 'otlp' : 'none');
  if (config.OTEL_SDK_DISABLED || exporter === 'none') return undefined;
  const serviceName = config.OTEL_SERVICE_NAME;
  if (exporter === 'console') return { exporter, serviceName };
  const url =
    config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    `${(config.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318').replace(/\/$/, '')}/v1/traces`;
  return { exporter, serviceName, url, headers: config.OTEL_EXPORTER_OTLP_HEADERS };
}

/** What Slack's install flow and token refreshes need (src/tenants/slack-oauth.ts). */
export interface SlackOAuthSettings {
  clientId: string;
  clientSecret: string;
  /** The bot scopes an installation asks for. */
  scopes: string[];
  /** Sent to the authorize page and oauth.v2.access when set (else Slack uses the app's first). */
  redirectUri?: string;
  /** SLACK_API_URL: oauth.v2.access is there, the authorize page beside it. */
  apiUrl: string;
}

/** Slack's OAuth settings when the install flow is on (both SLACK_CLIENT_ID and SLACK_CLIENT_SECRET set). */
export function slackOAuthSettings(config: Config): SlackOAuthSettings | undefined {
  if (!config.SLACK_CLIENT_ID || !config.SLACK_CLIENT_SECRET) return undefined;
  return {
    clientId: config.SLACK_CLIENT_ID,
    clientSecret: config.SLACK_CLIENT_SECRET,
    scopes: config.SLACK_SCOPES,
    ...(config.SLACK_REDIRECT_URI ? { redirectUri: config.SLACK_REDIRECT_URI } : {}),
    apiUrl: config.SLACK_API_URL,
  };
}

export type Config = z.infer<typeof configSchema>;

/**
 * The settings that point the CLI at a system. With any of them set, a CLI call goes where they say
 * (and their defaults); with none, to the running `replyflow start` of this clone, if there is one.
 */
const SYSTEM_SETTINGS = [
  'REPLYFLOW_URL',
  'REPLYFLOW_CODEC_URL',
  'PORT',
  'REPLYFLOW_DATA_DIR',
  'DATABASE_URL',
  'REPLYFLOW_ADMIN_DATABASE_URL',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_DEV_PORT',
] as const;

/** The runtime file of a start (REPLYFLOW_RUNTIME_FILE, else the clone's), as an absolute path. */
export function runtimeFileOf(config: Pick<Config, 'REPLYFLOW_RUNTIME_FILE'>): string {
  return config.REPLYFLOW_RUNTIME_FILE ? path.resolve(config.REPLYFLOW_RUNTIME_FILE) : DEFAULT_RUNTIME_FILE;
}

interface CliEnvironment {
  env: NodeJS.ProcessEnv;
  /** The running start whose REPLYFLOW_URL and REPLYFLOW_DATA_DIR `env` got, if it got them from one. */
  runningStart?: FoundStart;
}

/**
 * The environment of one CLI call: `env` as it is when it sets any of SYSTEM_SETTINGS, else `env`
 * with the REPLYFLOW_URL and REPLYFLOW_DATA_DIR of the `replyflow start` whose runtime file says it
 * runs (none: `env` as it is, so the defaults).
 */
export function cliEnvironment(env: NodeJS.ProcessEnv = process.env): CliEnvironment {
  if (SYSTEM_SETTINGS.some((name) => isSet(env[name]))) return { env };
  const file = runtimeFileOf({
    REPLYFLOW_RUNTIME_FILE: isSet(env.REPLYFLOW_RUNTIME_FILE) ? env.REPLYFLOW_RUNTIME_FILE : undefined,
  });
  const runningStart = findRunningStart(file);
  if (!runningStart) return { env };
  return {
    env: { ...env, REPLYFLOW_URL: runningStart.receiverUrl, REPLYFLOW_DATA_DIR: runningStart.dataDir },
    runningStart,
  };
}

function isSet(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseEnv(configSchema, env);
}

/**
 * The admin's settings, on top of everything else. Kept out of `configSchema` on purpose: receivers
 * and workers load that one, so no code of theirs can reach the admin credential, even when a shell
 * happens to have it set.
 */
export const adminConfigSchema = configSchema.extend({
  /**
   * A PostgreSQL role that owns replyflow's tables and may change operators (`replyflow operator …`,
   * `purge`, `setup`). Unset: beside `replyflow start`, the embedded cluster's superuser.
   */
  REPLYFLOW_ADMIN_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/\S+$/, 'expected a postgres:// URL (docs/deploy.md, "Database roles")')
    .optional(),
});

export type AdminConfig = z.infer<typeof adminConfigSchema>;

export function loadAdminConfig(env: NodeJS.ProcessEnv = process.env): AdminConfig {
  return parseEnv(adminConfigSchema, env);
}

/**
 * `replyflow cluster`'s settings, on top of everything else: kept out of `configSchema` like the
 * admin's, so that receivers and workers never hold the Temporal database's credential.
 */
export const clusterConfigSchema = configSchema.extend({
  /**
   * A PostgreSQL role that may create Temporal's databases (docs/deploy.md); `--database-url` comes
   * first. Unset: an embedded PostgreSQL under the data dir.
   */
  TEMPORAL_DATABASE_URL: optional,
});

type ClusterConfig = z.infer<typeof clusterConfigSchema>;

export function loadClusterConfig(env: NodeJS.ProcessEnv = process.env): ClusterConfig {
  return parseEnv(clusterConfigSchema, env);
}

/**
 * Where the Temporal binaries are when they are neither on PATH nor under .tools/ (src/temporal/binaries.ts).
 * Apart from the settings: `npm install`, tests and scripts look for the binaries without a config.
 */
export const toolchainSchema = z.object({
  TEMPORAL_CLI_PATH: optional,
  TEMPORAL_TEST_SERVER_PATH: optional,
});

export type ToolchainPaths = z.infer<typeof toolchainSchema>;

export function toolchainPaths(env: NodeJS.ProcessEnv = process.env): ToolchainPaths {
  // Nothing to refuse: a path that is not there fails where the binary is run, naming it.
  return toolchainSchema.parse(setValues(toolchainSchema, env));
}

/**
 * This process's environment as a whole, for what is not a setting: the variables that route and
 * tenants files name for their secrets (resolved as the file is read), and what a child process
 * inherits. Settings come from loadConfig, never from here.
 */
export function processEnvironment(): NodeJS.ProcessEnv {
  return process.env;
}

/**
 * Those of `names` (system variables such as PATH, HOME, TZ) that are set: all that a child process
 * gets which must not see replyflow's secrets.
 */
export function systemVariables<N extends string>(names: readonly N[]): Partial<Record<N, string>> {
  const picked: Partial<Record<N, string>> = {};
  for (const name of names) {
    const value = process.env[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

/** The schema's variables of `env`, empty ones as unset. */
function setValues(schema: z.ZodObject, env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const relevant: Record<string, string | undefined> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    relevant[key] = value === undefined || value.trim() === '' ? undefined : value;
  }
  return relevant;
}

function parseEnv<S extends typeof configSchema>(schema: S, env: NodeJS.ProcessEnv): z.infer<S> {
  const parsed = schema.safeParse(setValues(schema, env));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  const app = withGithubAppKey(parsed.data);
  const problems = [...combinationProblems(parsed.data), ...app.problems];
  if (problems.length > 0) throw new ConfigError(problems);
  return app.config as z.infer<S>;
}

/**
 * Reads the GitHub App's private key (from GITHUB_APP_PRIVATE_KEY or its file) and checks that it is an
 * RSA private key in PEM form and comes with GITHUB_APP_ID. @returns the config with the key's PEM text
 * in GITHUB_APP_PRIVATE_KEY, and each problem with the field to change (never the key, never the file's text).
 */
function withGithubAppKey<C extends Config>(config: C): { config: C; problems: string[] } {
  const { GITHUB_APP_ID: appId, GITHUB_APP_PRIVATE_KEY: text, GITHUB_APP_PRIVATE_KEY_FILE: file } = config;
  const problems: string[] = [];
  if (text && file)
    problems.push('GITHUB_APP_PRIVATE_KEY_FILE: set the key or the file that holds it, not both');
  let pem = text;
  let from = 'GITHUB_APP_PRIVATE_KEY';
  if (file && !text) {
    from = 'GITHUB_APP_PRIVATE_KEY_FILE';
    try {
      pem = readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      problems.push(`GITHUB_APP_PRIVATE_KEY_FILE: cannot read the file (${code})`);
    }
  }
  if (appId && !text && !file)
    problems.push(
      "GITHUB_APP_PRIVATE_KEY: set the app's private key (or GITHUB_APP_PRIVATE_KEY_FILE) with GITHUB_APP_ID, or unset both",
    );
  if (!appId && (text || file))
    problems.push("GITHUB_APP_ID: set the app's App ID with its private key, or unset both");
  if (pem !== undefined) {
    pem = `${pem.replace(/\\n/g, '\n').trim()}\n`;
    if (!isRsaPrivateKey(pem))
      problems.push(
        `${from}: not a readable RSA private key in PEM form (use the .pem file the app's settings page generates, unencrypted)`,
      );
  }
  return { config: { ...config, GITHUB_APP_PRIVATE_KEY: pem }, problems };
}

function isRsaPrivateKey(pem: string): boolean {
  try {
    return createPrivateKey({ key: pem, format: 'pem' }).asymmetricKeyType === 'rsa';
  } catch {
    return false;
  }
}

export interface SandboxSecrets {
  /** Signs the page's messages (Standard Webhooks, `whsec_…`). */
  webhookSecret: string;
  /** What workers present to the sandbox target API (Authorization: Bearer). */
  apiToken: string;
}

/** The sandbox's secrets when it is on (the config went through resolveSandbox), else undefined. */
export function sandboxSecrets(config: Config): SandboxSecrets | undefined {
  if (!config.SANDBOX_ENABLED) return undefined;
  if (!config.SANDBOX_WEBHOOK_SECRET || !config.SANDBOX_API_TOKEN)
    throw new SandboxSettingsError('the sandbox is on without SANDBOX_WEBHOOK_SECRET and SANDBOX_API_TOKEN');
  return { webhookSecret: config.SANDBOX_WEBHOOK_SECRET, apiToken: config.SANDBOX_API_TOKEN };
}
