// Slack's OAuth v2 (https://docs.slack.dev/authentication/installing-with-oauth, checked Nov 2026): the
// signed `state` that proves a callback comes from an install this replyflow started in the last ten
// minutes, the authorize URL, and the two `oauth.v2.access` calls: a code for an installation (the
// install flow, src/receiver/slack-install.ts) and a refresh token for a new bot token (token rotation,
// src/targets/slack-tokens.ts). Tokens go back to the caller only, never into an error or a log.
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from '@slack/web-api';
import { z } from 'zod';
import type { SlackOAuthSettings } from '../config';
import { slackWebApi } from '../provider-sdks';
import { InstallStateError, SlackOAuthError } from './errors';
import { slackTenant } from './tenant-id';

/** How long an install may take between /slack/install and Slack's redirect back (Bolt's default too). */
export const INSTALL_STATE_TTL_MS = 10 * 60_000;
/** A state issued this far in the future still counts: receivers' clocks differ a little. */
const CLOCK_SKEW_MS = 60_000;
const STATE = /^v1\.([0-9a-z]{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

/**
 * The state key: derived from the client secret, so that every receiver of the app signs and checks
 * the same states and no other secret has to be shared.
 */
function stateKey(clientSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', clientSecret, '', 'replyflow slack install state v1', 32));
}

const mac = (clientSecret: string, issued: string, nonce: string) =>
  createHmac('sha256', stateKey(clientSecret)).update(`v1.${issued}.${nonce}`).digest('base64url');

/** A fresh state: `v1.<issue time>.<nonce>.<HMAC>`; nothing is stored, any receiver can check it. */
export function signInstallState(clientSecret: string, now = Date.now()): string {
  const issued = Math.floor(now / 1000).toString(36);
  const nonce = randomBytes(16).toString('base64url');
  return `v1.${issued}.${nonce}.${mac(clientSecret, issued, nonce)}`;
}

/** @throws InstallStateError when the state is malformed, not signed with this secret, or expired. */
export function verifyInstallState(clientSecret: string, state: unknown, now = Date.now()): void {
  const match = typeof state === 'string' ? STATE.exec(state) : null;
  if (!match) throw new InstallStateError('the state is missing or malformed');
  const [, issued, nonce, given] = match as unknown as [string, string, string, string];
  const expected = Buffer.from(mac(clientSecret, issued, nonce));
  if (!timingSafeEqual(Buffer.from(given), expected))
    throw new InstallStateError('the state was not issued by this app');
  const age = now - Number.parseInt(issued, 36) * 1000;
  if (age > INSTALL_STATE_TTL_MS || age < -CLOCK_SKEW_MS)
    throw new InstallStateError('the state expired (an install must finish within 10 minutes)');
}

/**
 * Slack's authorize page for this app, derived from SLACK_API_URL (`https://slack.com/api/` →
 * `https://slack.com/oauth/v2/authorize`), so that a fake Slack serves it too.
 */
export function authorizeUrl(settings: SlackOAuthSettings, state: string): string {
  const url = new URL('../oauth/v2/authorize', settings.apiUrl);
  url.searchParams.set('client_id', settings.clientId);
  url.searchParams.set('scope', settings.scopes.join(','));
  url.searchParams.set('state', state);
  if (settings.redirectUri) url.searchParams.set('redirect_uri', settings.redirectUri);
  return url.toString();
}

/** An installation as tenant_credentials stores it (src/db/tenant-credentials.ts `put`). */
interface SlackInstallation {
  /** `slack:T…`, or `slack:E…` for an org-wide install. */
  tenant: string;
  secret: { botToken: string; refreshToken?: string };
  /** What may be shown: no token. */
  details: {
    teamId?: string;
    teamName?: string;
    enterpriseId?: string;
    botUserId?: string;
    appId?: string;
    scopes: string[];
  };
  /** With token rotation on: when the bot token expires. */
  expiresAt?: Date;
}

/** A bot token after a refresh (token rotation): the refresh token is replaced too. */
export interface RefreshedToken {
  botToken: string;
  refreshToken: string;
  expiresAt?: Date;
}

/** The Web API client's own logging stays off: our logs never carry request bodies or tokens. */
export const quietSlackLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  setLevel() {},
  getLevel: () => slackWebApi().LogLevel.ERROR,
  setName() {},
};

const id = z.string().min(1).max(64);
const installed = z.looseObject({
  token_type: z.literal('bot', { error: 'no bot token: the app must ask for bot scopes (SLACK_SCOPES)' }),
  access_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
  expires_in: z.number().int().positive().optional(),
  scope: z.string().default(''),
  bot_user_id: id.optional(),
  app_id: id.optional(),
  team: z.looseObject({ id, name: z.string().max(200).optional() }).nullish(),
  enterprise: z.looseObject({ id, name: z.string().max(200).optional() }).nullish(),
  is_enterprise_install: z.boolean().optional(),
});
const refreshed = z.looseObject({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1),
  expires_in: z.number().int().positive().optional(),
});

const expiry = (now: number, seconds?: number) =>
  seconds === undefined ? undefined : new Date(now + seconds * 1000);

export function slackOAuth(settings: SlackOAuthSettings) {
  const credentials = { client_id: settings.clientId, client_secret: settings.clientSecret };

  /**
   * One client per call, so that a refresh carries the send attempt's abort signal. Retries are off:
   * an install is a person waiting on a page, a refresh runs inside a send attempt whose retries
   * Temporal owns.
   */
  async function access(args: Record<string, string>, signal?: AbortSignal): Promise<unknown> {
    const { WebClient, ErrorCode } = slackWebApi();
    const client = new WebClient(undefined, {
      slackApiUrl: settings.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      logger: quietSlackLogger,
      timeout: 10_000,
      ...(signal ? { requestInterceptor: (config) => Object.assign(config, { signal }) } : {}),
    });
    try {
      return await client.oauth.v2.access({ ...credentials, ...args });
    } catch (err) {
      const e = err as { code?: string; data?: { error?: string } };
      if (e?.code === ErrorCode.PlatformError) {
        const code = e.data?.error ?? 'unknown_error';
        throw new SlackOAuthError(`Slack refused oauth.v2.access (${code})`, true, code);
      }
      throw new SlackOAuthError(
        `could not reach Slack's oauth.v2.access at SLACK_API_URL (${e?.code ?? 'error'})`,
        false,
      );
    }
  }

  return {
    authorizeUrl: (state: string) => authorizeUrl(settings, state),

    /** Exchanges the code Slack's redirect carried for the installation it grants. */
    async exchange(code: string, now = Date.now()): Promise<SlackInstallation> {
      const answer = installed.safeParse(
        await access({ code, ...(settings.redirectUri ? { redirect_uri: settings.redirectUri } : {}) }),
      );
      if (!answer.success)
        throw new SlackOAuthError(
          `Slack's answer holds no usable installation: ${answer.error.issues[0]?.message ?? 'unexpected shape'}`,
          true,
        );
      const a = answer.data;
      const tenant = slackTenant({
        team: a.team?.id,
        enterprise: a.enterprise?.id,
        enterpriseInstall: a.is_enterprise_install === true,
      });
      if (!tenant) throw new SlackOAuthError("Slack's answer names no team or organisation", true);
      return {
        tenant,
        secret: { botToken: a.access_token, ...(a.refresh_token ? { refreshToken: a.refresh_token } : {}) },
        details: {
          ...(a.team?.id ? { teamId: a.team.id } : {}),
          ...(a.team?.name !== undefined ? { teamName: a.team.name } : {}),
          ...(a.enterprise?.id ? { enterpriseId: a.enterprise.id } : {}),
          ...(a.bot_user_id ? { botUserId: a.bot_user_id } : {}),
          ...(a.app_id ? { appId: a.app_id } : {}),
          scopes: a.scope.split(',').filter(Boolean),
        },
        ...(a.expires_in ? { expiresAt: expiry(now, a.expires_in) } : {}),
      };
    },

    /** A new bot token for a rotated one (`grant_type=refresh_token`). */
    async refresh(refreshToken: string, signal?: AbortSignal, now = Date.now()): Promise<RefreshedToken> {
      const answer = refreshed.safeParse(
        await access({ grant_type: 'refresh_token', refresh_token: refreshToken }, signal),
      );
      if (!answer.success) throw new SlackOAuthError("Slack's refresh answer holds no token", true);
      return {
        botToken: answer.data.access_token,
        refreshToken: answer.data.refresh_token,
        ...(answer.data.expires_in ? { expiresAt: expiry(now, answer.data.expires_in) } : {}),
      };
    },
  };
}

export type SlackOAuth = ReturnType<typeof slackOAuth>;
