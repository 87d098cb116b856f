// GitHub issue and pull-request comments through the REST API (plain fetch, no retries). GitHub has
// no idempotency key, so each comment ends with a hidden marker that `lookup` finds again. A step from
// a GitHub App's installation (`destination.tenant` = `github:<installation id>`) is posted with that
// installation's token, any other with the personal token.
import type { StepPlan } from '../model';
import { parseTenant } from '../tenants/tenant-id';
import { TargetError } from './errors';
import type { InstallationTokens } from './github-app';
import { classifyStatus, classifyTransportError } from './http-errors';
import { type LookupRequest, messageText, parseRetryAfter, type TargetAdapter } from './types';

/** GitHub documents no read-after-write delay for comment lists; we look twice, this far apart. */
const GITHUB_CONSISTENCY_DELAY_MS = 10_000;

/** Pages read per lookup (100 comments each): a bound, not an expectation. */
const MAX_LOOKUP_PAGES = 30;

/** The hidden marker that ends every comment we post: an HTML comment GitHub does not render. */
export function effectMarker(effectId: string): string {
  return `<!-- replyflow-effect: ${effectId} -->`;
}

interface GithubTargetOptions {
  /** GITHUB_TOKEN: for steps that name no installation. */
  token?: string;
  /** The GitHub App's installation tokens (GITHUB_APP_ID and its key): for steps that name one. */
  app?: InstallationTokens;
  /** GITHUB_API_URL, e.g. `https://api.github.com`. */
  apiUrl: string;
}

/** The token a request goes with, and whose it is. */
interface Credential {
  token: string;
  /** Set for an installation's token: a refusal names the app in its fix and drops the token. */
  installationId?: string;
}

export function githubTarget({ token, app, apiUrl }: GithubTargetOptions): TargetAdapter {
  const base = apiUrl.replace(/\/$/, '');

  /** Classifies a non-2xx answer; a refused installation token is not used again. */
  const refused = (response: Response, credential: Credential): TargetError => {
    if (response.status === 401 && credential.installationId)
      app?.forget(credential.installationId, credential.token);
    return classifyGithubStatus(response, credential.installationId ? 'installation' : 'token');
  };

  async function credentialFor(step: StepPlan, signal: AbortSignal): Promise<Credential> {
    const installationId = installationOf(step);
    if (installationId && app) {
      try {
        return { token: await app.token(installationId, signal), installationId };
      } catch (err) {
        throw classifyTokenRefusal(err, installationId);
      }
    }
    if (token) return { token };
    throw new TargetError(
      'permanent',
      installationId
        ? 'github: the step names an installation, and no GitHub App is configured'
        : 'github: the step names no installation, and no GITHUB_TOKEN is set',
      {
        fix: installationId
          ? 'set GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY (the app the webhook came from), or GITHUB_TOKEN, then reprocess'
          : 'set GITHUB_TOKEN, or send the webhook from the GitHub App (its deliveries name their installation), then reprocess',
      },
    );
  }

  return {
    name: 'github',
    capabilities: { idempotencyKey: false, lookup: true, consistencyDelayMs: GITHUB_CONSISTENCY_DELAY_MS },
    // "If you are making a large number of POST, PATCH, PUT, or DELETE requests for a single user or
    // client ID, wait at least one second between each request" (GitHub's REST best practices): per
    // installation, or per personal token.
    pace: (step) => ({ key: step.destination.tenant ?? 'github', intervalMs: 1000 }),

    async send({ effectId, step, body, signal }) {
      const text = messageText(body);
      if (!text)
        throw new TargetError('permanent', 'github: nothing to post', {
          fix: 'check the route or responder',
        });
      const url = commentsUrl(base, step);
      const credential = await credentialFor(step, signal);
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { ...headersWith(credential), 'content-type': 'application/json' },
          body: JSON.stringify({ body: `${text}\n\n${effectMarker(effectId)}` }),
          signal,
        });
      } catch (err) {
        throw prefixed(classifyTransportError(err, signal));
      }
      if (!response.ok) throw refused(response, credential);
      // A 201 proves the comment exists even if its body cannot be read to the end.
      const created = (await response.json().catch(() => ({}))) as { id?: number };
      return { externalId: created.id === undefined ? `comment-for-${effectId}` : String(created.id) };
    },

    async lookup(request) {
      const url = commentsUrl(base, request.step);
      const credential = await credentialFor(request.step, request.signal);
      const id = await findComment(url, credential, refused, request);
      return id === undefined ? { found: false } : { found: true, externalId: id };
    },
  };
}

function headersWith(credential: Credential): Record<string, string> {
  return {
    accept: 'application/vnd.github+json',
    authorization: `Bearer ${credential.token}`,
    'x-github-api-version': '2022-11-28',
    'user-agent': 'replyflow',
  };
}

/** The installation a step answers for (`github:<installation id>`), or undefined for none. */
function installationOf(step: StepPlan): string | undefined {
  const { tenant } = step.destination;
  if (tenant === undefined) return undefined;
  const parsed = parseTenant(tenant);
  if (parsed?.provider !== 'github' || !/^\d+$/.test(parsed.id))
    throw new TargetError('permanent', 'github: destination.tenant is not a GitHub App installation', {
      fix: 'check where the route takes tenant from: it must be github:<installation id>, as GitHub App webhooks name it',
    });
  return parsed.id;
}

/**
 * GitHub's own naming rules, slightly widened: an account is letters, digits, `-` (and `_`, which
 * Enterprise Managed Users' names carry); a repository is letters, digits, `.`, `-`, `_`.
 */
const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
const REPOSITORY_NAME = /^[A-Za-z0-9._-]{1,100}$/;

function commentsUrl(base: string, step: StepPlan): string {
  const { owner, repo, issueNumber } = step.destination;
  if (!owner || !repo || !issueNumber || !/^\d+$/.test(issueNumber))
    throw new TargetError('permanent', 'github: the step needs owner, repo and a numeric issueNumber', {
      fix: 'check the route destination',
    });
  // The values come from webhook data and the token goes with the request: a `..` (which no encoding
  // changes) would resolve out of GITHUB_API_URL's path, e.g. a GitHub Enterprise `/api/v3`.
  if (!ACCOUNT_NAME.test(owner))
    throw new TargetError('permanent', 'github: owner is not a GitHub account name', {
      fix: 'check where the route takes owner from: it must be a user or organisation login (letters, digits, - and _)',
    });
  if (!REPOSITORY_NAME.test(repo) || repo === '.' || repo === '..')
    throw new TargetError('permanent', 'github: repo is not a GitHub repository name', {
      fix: 'check where the route takes repo from: it must be a repository name (letters, digits, ., - and _; not . or ..)',
    });
  return `${base}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/issues/${issueNumber}/comments`;
}

/**
 * Lists the issue's comments (100 a page, following `Link: rel="next"`, updated since the effect was
 * claimed) and finds the one carrying our marker. @returns its id.
 */
async function findComment(
  commentsUrl: string,
  credential: Credential,
  refused: (response: Response, credential: Credential) => TargetError,
  { effectId, signal, notBefore }: LookupRequest,
): Promise<string | undefined> {
  const headers = headersWith(credential);
  const marker = effectMarker(effectId);
  const first = new URL(commentsUrl);
  first.searchParams.set('per_page', '100');
  // A minute of margin covers clock skew between us and GitHub.
  if (notBefore) first.searchParams.set('since', new Date(notBefore.getTime() - 60_000).toISOString());
  let next: string | undefined = first.toString();
  for (let page = 0; next && page < MAX_LOOKUP_PAGES; page++) {
    let response: Response;
    try {
      response = await fetch(next, { headers, signal });
    } catch (err) {
      throw prefixed(classifyTransportError(err, signal));
    }
    if (!response.ok) throw refused(response, credential);
    const comments = (await response.json()) as { id: number; body?: string }[];
    const ours = comments.find((c) => c.body?.includes(marker));
    if (ours) return String(ours.id);
    next = nextPage(response.headers.get('link'), first.origin);
  }
  return undefined;
}

/** The `rel="next"` URL of a Link header, only on GitHub's own origin (the token goes with it). */
function nextPage(link: string | null, origin: string): string | undefined {
  const match = link?.split(',').find((part) => /rel="next"/.test(part));
  const url = match && /<([^>]+)>/.exec(match)?.[1];
  return url && new URL(url).origin === origin ? url : undefined;
}

/**
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api and
 * https://docs.github.com/en/rest/issues/comments#create-an-issue-comment
 */
export function classifyGithubStatus(
  response: Response,
  credential: 'token' | 'installation' = 'token',
): TargetError {
  const { status, headers } = response;
  const limited = rateLimited(status, headers, 'github');
  if (limited) return limited;
  const app = credential === 'installation';
  if (status === 401)
    return new TargetError('permanent', 'github: bad credentials (401)', {
      fix: app
        ? 'GitHub refused the installation token (dropped: the next attempt fetches a new one): reprocess; if it repeats, check the GitHub App installation'
        : 'check GITHUB_TOKEN',
    });
  if (status === 403)
    return new TargetError('permanent', 'github: forbidden (403)', {
      fix: app
        ? 'give the GitHub App write access to issues (or pull requests) and install it on this repository'
        : 'give the token write access to issues (or pull requests) in this repository',
    });
  if (status === 404)
    return new TargetError('permanent', 'github: not found (404)', {
      fix: app
        ? "check owner, repo and issue number, and that the app's installation includes the repository"
        : 'check owner, repo and issue number, and that the token can see the repository',
    });
  if (status === 410)
    return new TargetError('permanent', 'github: gone (410)', {
      fix: 'issues are disabled or the issue was deleted',
    });
  if (status === 422)
    return new TargetError('permanent', 'github: validation failed (422)', {
      fix: 'the comment was refused (too long, or the issue is locked)',
    });
  return prefixed(classifyStatus(status, headers, 'github'));
}

/** Secondary rate limits: 403 or 429 with Retry-After; primary: 403/429 with no requests remaining. */
function rateLimited(status: number, headers: Headers, what: string): TargetError | undefined {
  if (status !== 403 && status !== 429) return undefined;
  const retryAfterMs = parseRetryAfter(headers.get('retry-after'));
  if (retryAfterMs !== undefined)
    return new TargetError('retryable', `${what}: rate limited (${status})`, { retryAfterMs });
  if (headers.get('x-ratelimit-remaining') === '0') {
    const reset = Number(headers.get('x-ratelimit-reset'));
    return new TargetError('retryable', `${what}: rate limit exhausted (${status})`, {
      retryAfterMs: Number.isFinite(reset) ? Math.max(0, reset * 1000 - Date.now()) : 60_000,
    });
  }
  return undefined;
}

/**
 * What a failed `POST /app/installations/{id}/access_tokens` means for the step. Nothing was posted
 * without a token, so nothing here is `unknown`: an outage is retryable, a refusal permanent.
 * @octokit/request reports an answer as a RequestError with `status` and `response`, a transport
 * failure with `status` and no response; anything else failed before a request (the JWT).
 */
function classifyTokenRefusal(err: unknown, installationId: string): TargetError {
  if (err instanceof TargetError) return err;
  const { status, response } = err as { status?: unknown; response?: { headers?: Record<string, string> } };
  if (typeof status !== 'number')
    return new TargetError('permanent', 'github: could not sign the GitHub App JWT', {
      fix: "check GITHUB_APP_PRIVATE_KEY: the .pem the app's settings page generates",
    });
  if (!response) {
    const cause = (err as { cause?: { cause?: { code?: string }; name?: string } }).cause;
    return new TargetError(
      'retryable',
      `github: installation token request failed (${cause?.cause?.code ?? cause?.name ?? 'no answer'}): nothing was posted`,
    );
  }
  const headers = new Headers(response.headers);
  const limited = rateLimited(status, headers, 'github: installation token request');
  if (limited) return limited;
  if (status === 404)
    return new TargetError('permanent', `github: installation ${installationId} not found (404)`, {
      fix: "the GitHub App is no longer installed on that account (or the id is another app's): reinstall the app there, then reprocess",
    });
  if (status === 403)
    return new TargetError('permanent', `github: installation ${installationId} refused a token (403)`, {
      fix: 'the installation is suspended or has lost access: unsuspend or reinstall the GitHub App on that account, then reprocess',
    });
  if (status === 401)
    return new TargetError('permanent', 'github: the GitHub App JWT was refused (401)', {
      fix: "check that GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY are the same app's and this machine's clock is right; if they are, reinstall the app on that account, then reprocess",
    });
  if (status >= 500)
    return new TargetError(
      'retryable',
      `github: installation token request failed (${status}): nothing was posted`,
      {
        retryAfterMs: parseRetryAfter(headers.get('retry-after')),
      },
    );
  return new TargetError('permanent', `github: installation token refused (${status})`, {
    fix: "check the GitHub App's permissions (Issues: read and write) and its installation on that account",
  });
}

function prefixed(err: TargetError): TargetError {
  return err.message.startsWith('github')
    ? err
    : new TargetError(err.errorClass, `github: ${err.message}`, err.details);
}
