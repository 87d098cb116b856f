import { TargetError } from './errors';
// A GitHub App's installation access tokens, for the GitHub target: @octokit/auth-app signs the app's
// JWT and asks GitHub for an installation's token, and each token is kept until shortly before its
// `expires_at`. What a refusal means is the target's to say (classifyTokenRefusal in ./github.ts).
// https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/authenticating-as-a-github-app-installation

/** A token is fetched again once less than this is left of it (a send may take a while after). */
export const TOKEN_REFRESH_MARGIN_MS = 5 * 60_000;

/** One token request's bound: a hung request must not hold every send for its installation. */
const TOKEN_REQUEST_TIMEOUT_MS = 10_000;

interface GithubAppOptions {
  /** GITHUB_APP_ID. */
  appId: string;
  /** GITHUB_APP_PRIVATE_KEY: PEM, PKCS#1 (as GitHub generates it) or PKCS#8. */
  privateKey: string;
  /** GITHUB_API_URL: the token endpoint lives beside the comments. */
  apiUrl: string;
  /** The clock the cache judges expiry by. @default Date.now */
  now?: () => number;
}

export interface InstallationTokens {
  /**
   * The installation's token: the cached one while it has more than the margin left.
   * @throws what @octokit/request threw (its RequestError), or a TargetError when `signal` ends the wait.
   */
  token(installationId: string, signal: AbortSignal): Promise<string>;
  /** Drops the cached token, if it is still `token`, after GitHub refused it. */
  forget(installationId: string, token: string): void;
}

type AppAuth = ReturnType<typeof import('@octokit/auth-app')['createAppAuth']>;

/** The library keeps tokens for 59 minutes whatever their `expires_at` says: we keep them instead. */
const NO_CACHE = { get: () => '', set: () => undefined };

export function installationTokens({
  appId,
  privateKey,
  apiUrl,
  now = Date.now,
}: GithubAppOptions): InstallationTokens {
  const cached = new Map<string, { token: string; refreshAt: number }>();
  // One request per installation at a time, however many sends wait (the library shares concurrent
  // requests too, but process-wide by installation id alone, whichever app asks).
  const pending = new Map<string, Promise<string>>();
  let auth: Promise<AppAuth> | undefined;
  // @octokit/auth-app and @octokit/request are published as ES modules only: a dynamic import loads
  // them from CommonJS, once.
  const appAuth = () => {
    auth ??= (async () => {
      const [{ createAppAuth }, { request }] = await Promise.all([
        import('@octokit/auth-app'),
        import('@octokit/request'),
      ]);
      return createAppAuth({
        appId,
        privateKey,
        cache: NO_CACHE,
        request: request.defaults({
          baseUrl: apiUrl.replace(/\/$/, ''),
          headers: { 'user-agent': 'replyflow', 'x-github-api-version': '2022-11-28' },
          // @octokit/request retries nothing; the bound keeps a hung request from holding the cache.
          request: {
            fetch: (url: string, init: RequestInit) =>
              fetch(url, { ...init, signal: AbortSignal.timeout(TOKEN_REQUEST_TIMEOUT_MS) }),
          },
        }),
      });
    })();
    return auth;
  };

  async function fetchToken(installationId: string): Promise<string> {
    const authentication = await (await appAuth())({ type: 'installation', installationId, refresh: true });
    const expiresAt = Date.parse(authentication.expiresAt);
    // Without a readable expiry the token serves this send only.
    if (Number.isFinite(expiresAt))
      cached.set(installationId, {
        token: authentication.token,
        refreshAt: expiresAt - TOKEN_REFRESH_MARGIN_MS,
      });
    return authentication.token;
  }

  return {
    async token(installationId, signal) {
      const hit = cached.get(installationId);
      if (hit && now() < hit.refreshAt) return hit.token;
      let request = pending.get(installationId);
      if (!request) {
        request = fetchToken(installationId).finally(() => pending.delete(installationId));
        pending.set(installationId, request);
      }
      return abortable(request, signal);
    },
    forget(installationId, token) {
      if (cached.get(installationId)?.token === token) cached.delete(installationId);
    },
  };
}

/** Waits for a token shared with other sends, giving up (only this send) when the attempt's time is up. */
function abortable(request: Promise<string>, signal: AbortSignal): Promise<string> {
  const timedOut = () =>
    new TargetError(
      'retryable',
      'github: no installation token before the attempt timed out: nothing was posted',
    );
  if (signal.aborted) return Promise.reject(timedOut());
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(timedOut());
    signal.addEventListener('abort', onAbort, { once: true });
    request.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
