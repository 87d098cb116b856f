// Slack's install flow, for an app offered to many workspaces (DESIGN.md §2, "Many workspaces"):
// `GET /slack/install` sends the installer to Slack's authorize page with a signed `state`, and
// `GET /slack/oauth_redirect` checks that state before anything else, exchanges the code with
// `oauth.v2.access` and stores the installation under its team (or organisation) in tenant_credentials.
// A bad, forged or expired state installs nothing and asks Slack nothing. Pages name the team, never a token.
import express, { type Request, type Response } from 'express';
import type { SlackOAuthSettings } from '../config';
import type { TenantCredentialStore } from '../db/tenant-credentials';
import { errorMessage } from '../failures';
import type { Logger } from '../logger';
import type { TenantDirectory } from '../tenants/directory';
import { InstallStateError, SlackOAuthError } from '../tenants/errors';
import { type SlackOAuth, signInstallState, slackOAuth, verifyInstallState } from '../tenants/slack-oauth';

/** Who stored an installation, in the audit log. */
export const SLACK_OAUTH_ACTOR = 'slack:oauth';
/** Who revoked one: Slack's verified app_uninstalled or tokens_revoked notice. */
export const SLACK_EVENTS_ACTOR = 'slack:events';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A page for the person installing. The URL carries Slack's code, so no referrer leaves it; no
 * answer is cached.
 */
function page(res: Response, status: number, title: string, paragraph: string): void {
  res
    .status(status)
    .set({
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'content-security-policy': "default-src 'none'",
    })
    .type('html')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>` +
        `<body><h1>${escapeHtml(title)}</h1><p>${paragraph}</p></body></html>`,
    );
}

const AGAIN = 'Start again at <a href="/slack/install">/slack/install</a>.';

/** Slack's error codes are lower-case words; anything else in the query is not shown back. */
const slackCode = (value: unknown) =>
  typeof value === 'string' && /^[a-z_]{1,60}$/.test(value) ? value : 'unknown';

export function slackInstallRouter(options: {
  settings: SlackOAuthSettings;
  store: Pick<TenantCredentialStore, 'put'>;
  tenants: Pick<TenantDirectory, 'forget'>;
  logger: Logger;
  /** The OAuth calls; tests pass their own clock. */
  oauth?: SlackOAuth;
  now?: () => number;
}): express.Router {
  const { settings, store, tenants, logger } = options;
  const oauth = options.oauth ?? slackOAuth(settings);
  const now = options.now ?? Date.now;
  const router = express.Router();

  router.get('/slack/install', (_req: Request, res: Response) => {
    res
      .set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
      .redirect(302, oauth.authorizeUrl(signInstallState(settings.clientSecret, now())));
  });

  router.get('/slack/oauth_redirect', async (req: Request, res: Response) => {
    const { code, state, error } = req.query;
    if (error !== undefined) {
      const reason = slackCode(error);
      logger.info({ reason }, 'slack install not completed');
      return reason === 'access_denied'
        ? page(res, 200, 'Install cancelled', `Nothing was installed. ${AGAIN}`)
        : page(res, 400, 'Install failed', `Slack did not grant the install (${reason}). ${AGAIN}`);
    }
    try {
      verifyInstallState(settings.clientSecret, state, now());
    } catch (err) {
      if (!(err instanceof InstallStateError)) throw err;
      logger.warn({ reason: err.message }, 'slack install refused: bad state');
      return page(res, 400, 'Install refused', `This link is not a valid install: ${err.message}. ${AGAIN}`);
    }
    if (typeof code !== 'string' || !/^[\w.-]{1,200}$/.test(code))
      return page(res, 400, 'Install refused', `Slack's answer carried no code. ${AGAIN}`);

    let installation: Awaited<ReturnType<SlackOAuth['exchange']>>;
    try {
      installation = await oauth.exchange(code, now());
    } catch (err) {
      if (!(err instanceof SlackOAuthError)) throw err;
      logger.warn({ reason: err.message, code: err.code }, 'slack install failed: oauth.v2.access');
      return err.reached
        ? page(res, 400, 'Install failed', `Slack refused the install (${slackCode(err.code)}). ${AGAIN}`)
        : page(res, 502, 'Install failed', `Slack could not be reached. ${AGAIN}`);
    }
    const { tenant, secret, details, expiresAt } = installation;
    try {
      await store.put(
        tenant,
        { source: 'oauth', secret, details, ...(expiresAt ? { expiresAt } : {}) },
        { by: SLACK_OAUTH_ACTOR, reason: 'installed through /slack/install' },
      );
    } catch (err) {
      logger.error({ tenant, err: errorMessage(err) }, 'slack install not stored');
      res.set('retry-after', '30');
      return page(res, 503, 'Install not stored', `The installation could not be saved. ${AGAIN}`);
    }
    tenants.forget(tenant);
    logger.info({ tenant, rotating: expiresAt !== undefined }, 'slack app installed');
    const where = details.teamName ?? details.teamId ?? details.enterpriseId ?? tenant;
    page(res, 200, 'Installed', `replyflow is installed in <b>${escapeHtml(where)}</b>.`);
  });

  return router;
}
