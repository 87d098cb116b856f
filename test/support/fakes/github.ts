// A fake of GitHub's REST API for issue comments (https://docs.github.com/en/rest/issues/comments):
// create (201), list (per_page ≤ 100, `since`, Link rel="next"/"last" pages), 401 "Bad credentials",
// and rate limits as 403/429 with Retry-After. With `app` set, it is also a GitHub App's token endpoint
// (https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app): the app's
// JWT checked as GitHub checks it (RS256 under the app's public key, `iss`, `iat`, `exp` at most ten
// minutes ahead), a token per request for each installation it knows (404 for others), and comments
// accepted with an installation token until its `expires_at`.
import { generateKeyPairSync, type KeyObject, randomBytes, verify } from 'node:crypto';
import type http from 'node:http';
import { type Answer, FakeApi, type Fault, type Recorded, send } from './base';

interface GithubComment {
  id: number;
  issue: string;
  body: string;
  created_at: string;
  updated_at: string;
}

const COMMENTS = /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/;
const ACCESS_TOKENS = /^\/app\/installations\/([^/]+)\/access_tokens$/;

/** A GitHub App as its settings page gives it: an App ID and a private key (PKCS#1 PEM, like GitHub's .pem). */
interface TestGithubApp {
  id: string;
  privateKey: string;
  publicKey: KeyObject;
}

export function testGithubApp(id = '424242'): TestGithubApp {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { id, privateKey: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(), publicKey };
}

/** The bearer token a request carried. */
export function tokenOf(request: Recorded): string | undefined {
  return /^bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
}

/** GitHub's answer to a secondary rate limit. */
export function secondaryRateLimit(retryAfterSeconds: number) {
  return {
    status: 403,
    retryAfter: String(retryAfterSeconds),
    body: {
      message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
      documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api',
    },
  };
}

export class FakeGithub extends FakeApi {
  readonly comments: GithubComment[] = [];
  /** GitHub caps per_page at 100; a smaller cap here makes tests page. */
  pageSize = 100;
  /** The GitHub App whose JWTs the token endpoint accepts (its public key); unset: no app. */
  app?: { id: string; publicKey: KeyObject };
  /** Installations of the app, by id: a token request for any other is 404. */
  readonly installations = new Set<string>();
  /** How long an installation token lives from the moment it is issued (GitHub's: one hour). */
  tokenLifetimeMs = 3_600_000;
  /** Installation tokens issued, and until when each is accepted. */
  readonly issued = new Map<string, { installation: string; expiresAt: number }>();
  private seq = 1000;
  private readonly tokenFaults: Fault[] = [];

  constructor(readonly token = 'ghp_test_token') {
    super();
  }

  posts(): Recorded[] {
    return this.to(COMMENTS);
  }

  /** The token each comment request carried, in arrival order. */
  commentTokens(): (string | undefined)[] {
    return this.posts().map(tokenOf);
  }

  /** Token requests, for one installation or all. */
  tokenRequests(installation?: string): Recorded[] {
    return this.to(ACCESS_TOKENS).filter(
      (r) => !installation || ACCESS_TOKENS.exec(r.path)?.[1] === installation,
    );
  }

  /** The tokens issued to an installation, oldest first. */
  tokensOf(installation: string): string[] {
    return [...this.issued].filter(([, t]) => t.installation === installation).map(([token]) => token);
  }

  /** Queues faults for the next token requests (apart from the comment writes' script). */
  nextTokenRequest(...faults: Fault[]): this {
    this.tokenFaults.push(...faults);
    return this;
  }

  /** Stops accepting an installation token before it expires (revoked, or the app was uninstalled). */
  revoke(token: string): void {
    this.issued.delete(token);
  }

  onIssue(owner: string, repo: string, issueNumber: string): GithubComment[] {
    return this.comments.filter((c) => c.issue === `${owner}/${repo}#${issueNumber}`);
  }

  /** Other people's comments, so that lookups have to page past them. */
  seed(owner: string, repo: string, issueNumber: string, count: number): void {
    for (let i = 0; i < count; i++)
      this.add(`${owner}/${repo}#${issueNumber}`, `a comment by someone else (${i})`);
  }

  protected errorBody(status: number): unknown {
    return {
      message: status >= 500 ? 'Server Error' : 'Error',
      documentation_url: 'https://docs.github.com/rest',
    };
  }

  private add(issue: string, body: string): GithubComment {
    this.seq += 1;
    const now = new Date().toISOString();
    const comment = { id: this.seq, issue, body, created_at: now, updated_at: now };
    this.comments.push(comment);
    return comment;
  }

  protected handle(request: Recorded, res: http.ServerResponse) {
    const installation = ACCESS_TOKENS.exec(request.path)?.[1];
    if (installation !== undefined && request.method === 'POST')
      return this.issueToken(request, res, installation);
    if (!this.accepts(tokenOf(request)))
      return send(res, { status: 401, body: { message: 'Bad credentials' } });
    const match = COMMENTS.exec(request.path);
    if (!match) return send(res, { status: 404, body: { message: 'Not Found' } });
    const issue = `${match[1]}/${match[2]}#${match[3]}`;
    if (request.method === 'POST')
      return this.write(res, () => ({ status: 201, body: this.add(issue, String(request.body.body ?? '')) }));
    send(res, this.list(request, issue));
  }

  private accepts(token: string | undefined): boolean {
    if (token === undefined) return false;
    if (token === this.token) return true;
    const issued = this.issued.get(token);
    return issued !== undefined && Date.now() < issued.expiresAt;
  }

  private issueToken(request: Recorded, res: http.ServerResponse, installation: string) {
    const fault = this.tokenFaults.shift() ?? 'accept';
    if (fault === 'drop' || fault === 'accept-then-drop') return void res.socket?.destroy();
    if (fault === 'hang') return;
    if (typeof fault === 'object')
      return send(res, {
        status: fault.status,
        body: fault.body ?? this.errorBody(fault.status),
        headers: fault.retryAfter ? { 'retry-after': fault.retryAfter } : {},
      });
    const refusal = this.jwtRefusal(tokenOf(request));
    if (refusal) return send(res, { status: 401, body: { message: refusal } });
    if (!this.installations.has(installation))
      return send(res, { status: 404, body: { message: 'Not Found' } });
    const token = `ghs_${randomBytes(27).toString('base64url')}`;
    // GitHub writes expires_at to the second.
    const expiresAt = Math.floor((Date.now() + this.tokenLifetimeMs) / 1000) * 1000;
    this.issued.set(token, { installation, expiresAt });
    send(res, {
      status: 201,
      body: {
        token,
        expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        permissions: { issues: 'write', metadata: 'read' },
        repository_selection: 'all',
      },
    });
  }

  /** Why GitHub would refuse this JWT for the app, or undefined when it is good. */
  private jwtRefusal(jwt: string | undefined): string | undefined {
    const parts = jwt?.split('.');
    if (!this.app || parts?.length !== 3) return 'A JSON web token could not be decoded';
    const [header, payload, signature] = parts as [string, string, string];
    const decode = (part: string) => {
      try {
        return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
      } catch {
        return undefined;
      }
    };
    const claims = decode(payload);
    if (decode(header)?.alg !== 'RS256' || !claims) return 'A JSON web token could not be decoded';
    const signed = verify(
      'sha256',
      Buffer.from(`${header}.${payload}`),
      this.app.publicKey,
      Buffer.from(signature, 'base64url'),
    );
    if (!signed) return 'A JSON web token could not be decoded';
    const now = Math.floor(Date.now() / 1000);
    const { iss, iat, exp } = claims;
    if (String(iss) !== this.app.id) return 'Integration not found';
    if (typeof iat !== 'number' || iat > now + 5)
      return "'Issued at' claim ('iat') must be an Integer representing a time in the past";
    if (typeof exp !== 'number' || exp <= now)
      return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
    if (exp > now + 600 || exp - iat > 660) return "'Expiration time' claim ('exp') is too far in the future";
    return undefined;
  }

  private list(request: Recorded, issue: string): Answer {
    const perPage = Math.min(Number(request.query.get('per_page') ?? 30), this.pageSize);
    const page = Number(request.query.get('page') ?? 1);
    const since = request.query.get('since');
    const all = this.comments.filter((c) => c.issue === issue && (!since || c.updated_at >= since));
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const link = (p: number, rel: string) => {
      const url = new URL(request.path, this.url);
      for (const [k, v] of request.query) url.searchParams.set(k, v);
      url.searchParams.set('page', String(p));
      return `<${url}>; rel="${rel}"`;
    };
    const links = page < last ? [link(page + 1, 'next'), link(last, 'last')] : [];
    return {
      status: 200,
      body: all.slice((page - 1) * perPage, page * perPage).map(({ issue: _, ...c }) => c),
      headers: links.length ? { link: links.join(', ') } : {},
    };
  }
}
