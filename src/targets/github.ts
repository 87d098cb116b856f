// GitHub issue and pull-request comments through the REST API (plain fetch, no retries). GitHub has
// no idempotency key, so each comment ends with a hidden marker that `lookup` finds again.
import type { StepPlan } from '../model';
import { classifyStatus, classifyTransportError } from './http-errors';
import { type LookupRequest, messageText, parseRetryAfter, type TargetAdapter, TargetError } from './types';

/** GitHub documents no read-after-write delay for comment lists; we look twice, this far apart. */
export const GITHUB_CONSISTENCY_DELAY_MS = 10_000;

/** Pages read per lookup (100 comments each): a bound, not an expectation. */
const MAX_LOOKUP_PAGES = 30;

/** The hidden marker that ends every comment we post: an HTML comment GitHub does not render. */
export function effectMarker(effectId: string): string {
  return `<!-- replyflow-effect: ${effectId} -->`;
}

export interface GithubTargetOptions {
  token: string;
  /** GITHUB_API_URL, e.g. `https://api.github.com`. */
  apiUrl: string;
}

export function githubTarget({ token, apiUrl }: GithubTargetOptions): TargetAdapter {
  const base = apiUrl.replace(/\/$/, '');
  const headers = {
    accept: 'application/vnd.github+json',
    authorization: `Bearer ${token}`,
    'x-github-api-version': '2022-11-28',
    'user-agent': 'replyflow',
  };

  return {
    name: 'github',
    capabilities: { idempotencyKey: false, lookup: true, consistencyDelayMs: GITHUB_CONSISTENCY_DELAY_MS },

    async send({ effectId, step, body, signal }) {
      const text = messageText(body);
      if (!text)
        throw new TargetError('permanent', 'github: nothing to post', {
          fix: 'check the route or responder',
        });
      let response: Response;
      try {
        response = await fetch(commentsUrl(base, step), {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ body: `${text}\n\n${effectMarker(effectId)}` }),
          signal,
        });
      } catch (err) {
        throw prefixed(classifyTransportError(err, signal));
      }
      if (!response.ok) throw classifyGithubStatus(response);
      // A 201 proves the comment exists even if its body cannot be read to the end.
      const created = (await response.json().catch(() => ({}))) as { id?: number };
      return { externalId: created.id === undefined ? `comment-for-${effectId}` : String(created.id) };
    },

    async lookup(request) {
      const id = await findComment(base, headers, request);
      return id === undefined ? { found: false } : { found: true, externalId: id };
    },
  };
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
  base: string,
  headers: Record<string, string>,
  { effectId, step, signal, notBefore }: LookupRequest,
): Promise<string | undefined> {
  const marker = effectMarker(effectId);
  const first = new URL(commentsUrl(base, step));
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
    if (!response.ok) throw classifyGithubStatus(response);
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
export function classifyGithubStatus(response: Response): TargetError {
  const { status, headers } = response;
  const retryAfterMs = parseRetryAfter(headers.get('retry-after'));
  // Secondary rate limits: 403 or 429 with Retry-After; primary: 403/429 with no requests remaining.
  if ((status === 403 || status === 429) && retryAfterMs !== undefined)
    return new TargetError('retryable', `github: rate limited (${status})`, { retryAfterMs });
  if ((status === 403 || status === 429) && headers.get('x-ratelimit-remaining') === '0') {
    const reset = Number(headers.get('x-ratelimit-reset'));
    return new TargetError('retryable', `github: rate limit exhausted (${status})`, {
      retryAfterMs: Number.isFinite(reset) ? Math.max(0, reset * 1000 - Date.now()) : 60_000,
    });
  }
  if (status === 401)
    return new TargetError('permanent', 'github: bad credentials (401)', { fix: 'check GITHUB_TOKEN' });
  if (status === 403)
    return new TargetError('permanent', 'github: forbidden (403)', {
      fix: 'give the token write access to issues (or pull requests) in this repository',
    });
  if (status === 404)
    return new TargetError('permanent', 'github: not found (404)', {
      fix: 'check owner, repo and issue number, and that the token can see the repository',
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

function prefixed(err: TargetError): TargetError {
  return err.message.startsWith('github')
    ? err
    : new TargetError(err.errorClass, `github: ${err.message}`, err.details);
}
