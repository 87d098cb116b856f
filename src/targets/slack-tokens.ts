// Which bot token answers a Slack step: its team's installation (the step's `destination.tenant`,
// installed through /slack/install), else SLACK_BOT_TOKEN, the one-workspace shortcut. A revoked
// installation sends nothing, whatever the shortcut. A rotating token (Slack's token rotation) is
// refreshed shortly before it expires, once per process at a time, and stored only over the version
// it replaced, so that of several workers refreshing at once one wins and the others use its token.
import type { TenantDirectory } from '../tenants/directory';
import { SlackOAuthError, TenantSecretError } from '../tenants/errors';
import type { RefreshedToken } from '../tenants/slack-oauth';
import { parseTenant } from '../tenants/tenant-id';
import { TargetError } from './errors';

/** A token this close to its expiry is refreshed before use: a send attempt lasts well under this. */
const SLACK_REFRESH_MARGIN_MS = 5 * 60_000;

type Credential = NonNullable<Awaited<ReturnType<TenantDirectory['credential']>>>;

/** The token a call uses, and where it came from (what a refusal's fix names). */
type SlackToken =
  | { kind: 'shortcut'; token: string }
  | { kind: 'installation'; token: string; tenant: string; credential: Credential };

interface SlackTokenDeps {
  /** SLACK_BOT_TOKEN. */
  fallbackToken?: string;
  /** Installations, read anew (`latest`) for every call. */
  tenants?: Pick<TenantDirectory, 'credential' | 'forget'>;
  /** Stores a refreshed token over the version it replaces (tenant_credentials' `replaceSecret`). */
  replaceSecret?: (
    tenant: string,
    version: number,
    secret: Record<string, string>,
    expiresAt?: Date,
  ) => Promise<unknown>;
  /** `oauth.v2.access` with a refresh token; unset without SLACK_CLIENT_ID / SLACK_CLIENT_SECRET. */
  refresh?: (refreshToken: string, signal?: AbortSignal) => Promise<RefreshedToken>;
  now?: () => number;
}

const INSTALL_FIX = (tenant: string) =>
  `install the app in that workspace (${tenant}) through the receiver's /slack/install, then reprocess`;
const REVOKED_FIX = (tenant: string) =>
  `the app was uninstalled, or its tokens revoked, in that workspace (${tenant}): reinstall it through /slack/install, then reprocess (or discard)`;

export function slackTokens(deps: SlackTokenDeps) {
  const now = deps.now ?? Date.now;
  /** Refreshes under way in this process, by tenant: concurrent sends of a team share one. */
  const refreshing = new Map<string, Promise<SlackToken>>();

  /**
   * The installation as stored now (`latest`: past the directory's cache, and not a read begun before
   * this call): a revocation recorded by any receiver must stop the next attempt, and a reinstall must
   * answer the next event, even one that arrives a moment after a read of the revoked installation.
   */
  async function stored(tenant: string): Promise<Credential | undefined> {
    try {
      return await deps.tenants?.credential(tenant, { latest: true });
    } catch (err) {
      if (err instanceof TenantSecretError)
        throw new TargetError('permanent', `slack: the installation of ${tenant} does not open`, {
          fix: 'give workers the payload key it was sealed under (REPLYFLOW_DECRYPTION_KEYS), then reprocess',
        });
      throw new TargetError(
        'retryable',
        `slack: could not read the installation of ${tenant} (${(err as Error)?.name ?? 'error'})`,
      );
    }
  }

  function usable(tenant: string, credential: Credential): SlackToken {
    const token = credential.secret?.botToken;
    if (!token) {
      const { revokedReason } = credential.record;
      throw new TargetError(
        'permanent',
        `slack: the installation of ${tenant} is revoked${revokedReason ? ` (${revokedReason})` : ''}: nothing was sent`,
        { fix: REVOKED_FIX(tenant) },
      );
    }
    return { kind: 'installation', token, tenant, credential };
  }

  const expiresSoon = (credential: Credential) =>
    credential.record.expiresAt !== undefined &&
    credential.record.expiresAt.getTime() - now() < SLACK_REFRESH_MARGIN_MS;

  async function refreshOnce(tenant: string, credential: Credential, signal?: AbortSignal, expired = false) {
    const running = refreshing.get(tenant);
    if (running) return running;
    const next = notSent(refreshStored(tenant, credential, signal, expired)).finally(() =>
      refreshing.delete(tenant),
    );
    refreshing.set(tenant, next);
    return next;
  }

  /** `expired`: Slack said so, whatever the stored expiry says. */
  async function refreshStored(
    tenant: string,
    credential: Credential,
    signal: AbortSignal | undefined,
    expired: boolean,
  ) {
    // Until it has expired, a token that cannot be refreshed right now still answers.
    const stillValid = !expired && (credential.record.expiresAt?.getTime() ?? 0) > now();
    const refreshToken = credential.secret?.refreshToken;
    const { refresh, replaceSecret } = deps;
    if (!refreshToken || !refresh || !replaceSecret) {
      if (stillValid) return usable(tenant, credential);
      throw new TargetError(
        'permanent',
        `slack: the bot token of ${tenant} expired and cannot be refreshed`,
        {
          fix: refreshToken
            ? 'set SLACK_CLIENT_ID and SLACK_CLIENT_SECRET on workers (they refresh rotating tokens), then reprocess'
            : INSTALL_FIX(tenant),
        },
      );
    }
    let token: RefreshedToken;
    try {
      token = await refresh(refreshToken, signal);
    } catch (err) {
      const unreached = !(err instanceof SlackOAuthError) || !err.reached;
      if (unreached && stillValid) return usable(tenant, credential);
      if (unreached)
        throw new TargetError(
          'retryable',
          `slack: could not refresh the bot token of ${tenant}: nothing was sent`,
        );
      // Another process may have refreshed with the same refresh token first: its token is stored.
      const latest = await stored(tenant);
      if (latest && latest.record.version !== credential.record.version && !expiresSoon(latest))
        return usable(tenant, latest);
      throw new TargetError(
        'permanent',
        `slack: refreshing the bot token of ${tenant} failed (${err.code ?? 'unexpected answer'})`,
        {
          fix: ['invalid_client_id', 'bad_client_secret'].includes(err.code ?? '')
            ? 'check SLACK_CLIENT_ID and SLACK_CLIENT_SECRET on workers, then reprocess'
            : INSTALL_FIX(tenant),
        },
      );
    }
    const secret = { botToken: token.botToken, refreshToken: token.refreshToken };
    const replaced = await replaceSecret(tenant, credential.record.version, secret, token.expiresAt);
    deps.tenants?.forget(tenant);
    if (replaced) return usable(tenant, { ...credential, secret });
    // Changed meanwhile (refreshed elsewhere, reinstalled, revoked): what is stored now counts.
    const latest = await stored(tenant);
    if (!latest)
      throw new TargetError('permanent', `slack: ${tenant} is no longer installed`, {
        fix: INSTALL_FIX(tenant),
      });
    return usable(tenant, latest);
  }

  return {
    /** The token for a call to the step's team. @throws TargetError (nothing was sent). */
    async forTenant(tenant: string | undefined, signal?: AbortSignal): Promise<SlackToken> {
      if (tenant === undefined || !deps.tenants) {
        if (deps.fallbackToken) return { kind: 'shortcut', token: deps.fallbackToken };
        throw new TargetError('permanent', 'slack: the reply names no installed workspace', {
          fix: 'set SLACK_BOT_TOKEN, or answer events of a workspace installed through /slack/install',
        });
      }
      if (parseTenant(tenant)?.provider !== 'slack')
        throw new TargetError('permanent', `slack: ${tenant.slice(0, 80)} is not a Slack workspace`, {
          fix: "check the route's destination.tenant (slack:T… or slack:E…)",
        });
      const credential = await stored(tenant);
      if (!credential) {
        if (deps.fallbackToken) return { kind: 'shortcut', token: deps.fallbackToken };
        throw new TargetError('permanent', `slack: the app is not installed in ${tenant}`, {
          fix: INSTALL_FIX(tenant),
        });
      }
      const chosen = usable(tenant, credential);
      return expiresSoon(credential) ? refreshOnce(tenant, credential, signal) : chosen;
    },

    /** After Slack answered token_expired: a refreshed token, when the token was an installation's. */
    async afterExpired(used: SlackToken, signal?: AbortSignal): Promise<SlackToken | undefined> {
      if (used.kind !== 'installation') return undefined;
      const latest = await stored(used.tenant);
      if (!latest) return undefined;
      const current = usable(used.tenant, latest);
      if (current.token !== used.token && !expiresSoon(latest)) return current;
      return refreshOnce(used.tenant, latest, signal, current.token === used.token);
    },

    /**
     * After Slack refused an installation's token (invalid_auth, token_revoked, account_inactive):
     * the revocation recorded meanwhile, if any, as the error to show.
     */
    async whyRefused(used: SlackToken): Promise<TargetError | undefined> {
      if (used.kind !== 'installation') return undefined;
      const latest = await stored(used.tenant).catch(() => undefined);
      if (latest && !latest.secret?.botToken)
        return new TargetError('permanent', `slack: the installation of ${used.tenant} is revoked`, {
          fix: REVOKED_FIX(used.tenant),
        });
      return undefined;
    },
  };
}

export type SlackTokens = ReturnType<typeof slackTokens>;

/**
 * Everything here happens before the request is written, so a failure that is not classified yet (the
 * database down while a refreshed token is stored) is known not applied: retryable.
 */
async function notSent<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof TargetError) throw err;
    throw new TargetError(
      'retryable',
      `slack: could not prepare the bot token (${(err as Error)?.name ?? 'error'}): nothing was sent`,
    );
  }
}

/** The fix for a refused installation token, beside PERMANENT_ERRORS' fixes for SLACK_BOT_TOKEN. */
export const installationTokenFix = (tenant: string) =>
  `Slack refused the installation's token: ${REVOKED_FIX(tenant)}`;
