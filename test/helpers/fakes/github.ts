// A fake of GitHub's REST API for issue comments (https://docs.github.com/en/rest/issues/comments):
// create (201), list (per_page ≤ 100, `since`, Link rel="next"/"last" pages), 401 "Bad credentials",
// and rate limits as 403/429 with Retry-After.
import type http from 'node:http';
import { type Answer, FakeApi, type Recorded, send } from './base';

export interface GithubComment {
  id: number;
  issue: string;
  body: string;
  created_at: string;
  updated_at: string;
}

const COMMENTS = /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/;

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
  private seq = 1000;

  constructor(readonly token = 'ghp_test_token') {
    super();
  }

  posts(): Recorded[] {
    return this.to(COMMENTS);
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
    if (request.headers.authorization !== `Bearer ${this.token}`)
      return send(res, { status: 401, body: { message: 'Bad credentials' } });
    const match = COMMENTS.exec(request.path);
    if (!match) return send(res, { status: 404, body: { message: 'Not Found' } });
    const issue = `${match[1]}/${match[2]}#${match[3]}`;
    if (request.method === 'POST')
      return this.write(res, () => ({ status: 201, body: this.add(issue, String(request.body.body ?? '')) }));
    send(res, this.list(request, issue));
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
