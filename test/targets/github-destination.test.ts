// GitHub's owner and repo destination values come from webhook data (or a route mapping it), and the
// token goes with every request: no value may walk out of GITHUB_API_URL's path (a GitHub Enterprise
// base such as `/api/v3`). A real HTTP server records what arrives, and with which credential.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StepPlan } from '../../src/model';
import { TargetError } from '../../src/targets/errors';
import { githubTarget } from '../../src/targets/github';

const TOKEN = 'ghp_destination_test_token';

describe('GitHub target destination values (real HTTP server under a path prefix)', () => {
  const received: { url: string; authorization?: string }[] = [];
  let server: http.Server;
  let apiUrl = '';
  before(async () => {
    server = http.createServer((req, res) => {
      received.push({ url: req.url ?? '', authorization: req.headers.authorization });
      if (req.method === 'GET') res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
      else res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":501}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    received.length = 0;
  });

  const step = (destination: Record<string, string>) =>
    ({ name: 'comment', target: 'github', destination, content: { kind: 'reply' } }) as StepPlan;
  const send = (destination: Record<string, string>) =>
    githubTarget({ token: TOKEN, apiUrl }).send({
      effectId: 'eff-1',
      step: step(destination),
      body: { text: 'thanks for the report' },
      signal: AbortSignal.timeout(5000),
      attempt: 1,
    });
  const lookup = (destination: Record<string, string>) =>
    githubTarget({ token: TOKEN, apiUrl }).lookup!({
      effectId: 'eff-1',
      step: step(destination),
      signal: AbortSignal.timeout(5000),
    });
  const refusedWithFix = (field: string) => (err: unknown) => {
    assert.ok(err instanceof TargetError, String(err));
    assert.equal(err.errorClass, 'permanent');
    assert.match(err.message, new RegExp(`\\b${field}\\b`));
    assert.ok(err.details.fix, 'a permanent error says what to fix');
    assert.ok(!err.message.includes(TOKEN) && !err.details.fix.includes(TOKEN));
    return true;
  };

  it('posts to the issue under the API path, with the token', async () => {
    assert.deepEqual(await send({ owner: 'acme-corp', repo: 'widgets.js', issueNumber: '7' }), {
      externalId: '501',
    });
    assert.deepEqual(received, [
      { url: '/api/v3/repos/acme-corp/widgets.js/issues/7/comments', authorization: `Bearer ${TOKEN}` },
    ]);
  });

  const hostile: [string, Record<string, string>][] = [
    // /api/v3/repos/../../issues/7/comments is /api/issues/7/comments: out of the API's path.
    ['owner', { owner: '..', repo: '..', issueNumber: '7' }],
    ['owner', { owner: '..', repo: 'widgets', issueNumber: '7' }],
    ['repo', { owner: 'acme', repo: '..', issueNumber: '7' }],
    ['repo', { owner: 'acme', repo: '.', issueNumber: '7' }],
    ['owner', { owner: '.', repo: 'widgets', issueNumber: '7' }],
    ['owner', { owner: '', repo: 'widgets', issueNumber: '7' }],
    ['owner', { owner: 'acme/widgets', repo: 'widgets', issueNumber: '7' }],
    ['repo', { owner: 'acme', repo: 'widgets?per_page=1', issueNumber: '7' }],
  ];
  for (const [field, destination] of hostile) {
    it(`refuses ${field} ${JSON.stringify(destination[field])} and sends nothing (${destination.owner}/${destination.repo})`, async () => {
      await assert.rejects(send(destination), refusedWithFix(field));
      assert.deepEqual(received, []);
    });
  }

  it('refuses a lookup that would walk the path, and sends nothing', async () => {
    await assert.rejects(lookup({ owner: '..', repo: '..', issueNumber: '7' }), refusedWithFix('owner'));
    assert.deepEqual(received, []);
  });
});
