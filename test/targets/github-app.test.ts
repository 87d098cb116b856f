// The GitHub target as a GitHub App (issue 28): each step that names an installation is posted with
// that installation's token, fetched with the app's JWT from the fake's token endpoint over real HTTP
// and kept until shortly before its expires_at; steps with none use the personal token. A refused
// installation is permanent with the fix; a token endpoint outage is retryable and posts nothing.
import assert from 'node:assert/strict';
import type { StepPlan } from '../../src/model';
import { TargetError } from '../../src/targets/errors';
import { githubTarget } from '../../src/targets/github';
import { installationTokens, TOKEN_REFRESH_MARGIN_MS } from '../../src/targets/github-app';
import { createTargets, TARGET_SETTINGS } from '../../src/targets/index';
import { FakeGithub, testGithubApp, tokenOf } from '../support/fakes/github';
import { testConfig, uniqueId } from '../support/system';

const APP = testGithubApp();

/** Installation ids distinct across tests (so that no test sees another's tokens). */
let lastInstallation = 7_000_000;
const installation = () => String(++lastInstallation);

describe('GitHub target with a GitHub App (installation tokens from a fake GitHub over HTTP)', () => {
  let github: FakeGithub;
  before(async () => {
    github = await new FakeGithub('ghp_personal_token').start();
    github.app = { id: APP.id, publicKey: APP.publicKey };
  });
  after(() => github?.stop());
  /** A clock the target's cache reads, moved by the test; GitHub's own clock stays real. */
  let clock = Date.now();
  beforeEach(() => {
    github.tokenLifetimeMs = 3_600_000;
    clock = Date.now();
  });
  const target = (options: { token?: string; appId?: string; privateKey?: string; apiUrl?: string } = {}) =>
    githubTarget({
      token: options.token,
      apiUrl: options.apiUrl ?? github.url,
      app: installationTokens({
        appId: options.appId ?? APP.id,
        privateKey: options.privateKey ?? APP.privateKey,
        apiUrl: options.apiUrl ?? github.url,
        now: () => clock,
      }),
    });

  const step = (repo: string, tenant?: string): StepPlan => ({
    name: 'ack',
    target: 'github',
    destination: { owner: 'acme', repo, issueNumber: '1', ...(tenant ? { tenant } : {}) },
    content: { kind: 'reply' },
  });
  const send = (adapter: ReturnType<typeof target>, repo: string, tenant?: string) =>
    adapter.send({
      effectId: uniqueId('eff-'),
      step: step(repo, tenant),
      body: { text: 'thanks for the report' },
      signal: AbortSignal.timeout(15_000),
      attempt: 1,
    });
  const tokensOn = (repo: string) =>
    github
      .posts()
      .filter((p) => p.path.includes(`/${repo}/`))
      .map(tokenOf);
  const refused = (errorClass: string, message: RegExp, fix?: RegExp) => (err: unknown) => {
    assert.ok(err instanceof TargetError, String(err));
    assert.equal(err.errorClass, errorClass);
    assert.match(err.message, message);
    if (fix) assert.match(err.details.fix ?? '', fix);
    for (const text of [err.message, err.details.fix ?? '']) {
      assert.ok(!text.includes('ghs_') && !text.includes(github.token), 'no token in the error');
      assert.ok(!text.includes('PRIVATE KEY'), 'no key in the error');
    }
    return true;
  };

  it("posts each installation's comment with that installation's own token", async () => {
    const [a, b] = [installation(), installation()];
    github.installations.add(a).add(b);
    const adapter = target({ token: github.token });
    const [repoA, repoB] = [uniqueId('repo'), uniqueId('repo')];
    await send(adapter, repoA, `github:${a}`);
    await send(adapter, repoB, `github:${b}`);
    assert.equal(github.tokensOf(a).length, 1);
    assert.equal(github.tokensOf(b).length, 1);
    assert.deepEqual(tokensOn(repoA), github.tokensOf(a));
    assert.deepEqual(tokensOn(repoB), github.tokensOf(b));
    assert.notEqual(github.tokensOf(a)[0], github.tokensOf(b)[0]);
    const [request] = github.tokenRequests(a);
    assert.equal(request?.method, 'POST', 'the token endpoint took the JWT the fake verified');
  });

  it("looks a comment up with the installation's token", async () => {
    const id = installation();
    github.installations.add(id);
    const adapter = target({ token: github.token });
    const repo = uniqueId('repo');
    const effectId = uniqueId('eff-');
    const { externalId } = await adapter.send({
      effectId,
      step: step(repo, `github:${id}`),
      body: { text: 'thanks' },
      signal: AbortSignal.timeout(15_000),
      attempt: 1,
    });
    const found = await adapter.lookup!({
      effectId,
      step: step(repo, `github:${id}`),
      signal: AbortSignal.timeout(15_000),
    });
    assert.deepEqual(found, { found: true, externalId });
    const lists = github.to(new RegExp(`/${repo}/issues/1/comments$`), 'GET');
    assert.deepEqual(lists.map(tokenOf), github.tokensOf(id));
    assert.equal(github.tokenRequests(id).length, 1);
  });

  it('posts a step that names no installation with GITHUB_TOKEN', async () => {
    const repo = uniqueId('repo');
    const before = github.tokenRequests().length;
    await send(target({ token: github.token }), repo);
    assert.deepEqual(tokensOn(repo), [github.token]);
    assert.equal(github.tokenRequests().length, before, 'no installation token asked for');
  });

  it('refuses a step with no installation when only the app is configured, naming the settings', async () => {
    const repo = uniqueId('repo');
    await assert.rejects(
      send(target(), repo),
      refused('permanent', /names no installation/, /GITHUB_TOKEN.*GitHub App/),
    );
    assert.deepEqual(tokensOn(repo), []);
  });

  it('asks for one token for many comments on one installation, concurrent ones included', async () => {
    const id = installation();
    github.installations.add(id);
    const adapter = target();
    const repo = uniqueId('repo');
    await Promise.all([1, 2, 3].map(() => send(adapter, repo, `github:${id}`)));
    await send(adapter, repo, `github:${id}`);
    await send(adapter, repo, `github:${id}`);
    assert.equal(github.tokenRequests(id).length, 1);
    assert.deepEqual(tokensOn(repo), Array(5).fill(github.tokensOf(id)[0]));
  });

  it('fetches a new token once the cached one is within the margin of its expires_at', async () => {
    const id = installation();
    github.installations.add(id);
    const adapter = target();
    const repo = uniqueId('repo');
    await send(adapter, repo, `github:${id}`);
    clock += 3_600_000 - TOKEN_REFRESH_MARGIN_MS - 60_000;
    await send(adapter, repo, `github:${id}`);
    assert.equal(github.tokenRequests(id).length, 1, 'still more than the margin left');
    clock += 2 * 60_000;
    await send(adapter, repo, `github:${id}`);
    assert.equal(github.tokenRequests(id).length, 2);
    const [first, second] = github.tokensOf(id);
    assert.deepEqual(tokensOn(repo), [first, first, second]);
  });

  it('does not keep a token that GitHub issues with less than the margin left', async () => {
    const id = installation();
    github.installations.add(id);
    github.tokenLifetimeMs = TOKEN_REFRESH_MARGIN_MS - 60_000;
    const adapter = target();
    const repo = uniqueId('repo');
    await send(adapter, repo, `github:${id}`);
    await send(adapter, repo, `github:${id}`);
    assert.equal(github.tokenRequests(id).length, 2);
    assert.deepEqual(tokensOn(repo), github.tokensOf(id));
  });

  it('drops a cached token GitHub refuses (401, permanent as before) and fetches a new one next time', async () => {
    const id = installation();
    github.installations.add(id);
    const adapter = target();
    const repo = uniqueId('repo');
    await send(adapter, repo, `github:${id}`);
    const [revoked] = github.tokensOf(id);
    github.revoke(revoked!);
    await assert.rejects(
      send(adapter, repo, `github:${id}`),
      refused('permanent', /bad credentials \(401\)/, /installation token/),
    );
    await send(adapter, repo, `github:${id}`);
    assert.equal(github.tokenRequests(id).length, 2);
    const [fresh] = github.tokensOf(id);
    assert.deepEqual(tokensOn(repo), [revoked, revoked, fresh]);
  });

  it('fails an installation the app no longer has (404) as permanent with the fix, posting nothing', async () => {
    const id = installation();
    const repo = uniqueId('repo');
    await assert.rejects(
      send(target({ token: github.token }), repo, `github:${id}`),
      refused('permanent', new RegExp(`installation ${id} not found \\(404\\)`), /reinstall the app/),
    );
    assert.equal(github.tokenRequests(id).length, 1);
    assert.deepEqual(tokensOn(repo), [], 'not posted with the personal token either');
  });

  it('fails a suspended installation (403) as permanent with the fix', async () => {
    const id = installation();
    github.installations.add(id);
    github.nextTokenRequest({ status: 403, body: { message: 'This installation has been suspended' } });
    await assert.rejects(
      send(target(), uniqueId('repo'), `github:${id}`),
      refused('permanent', /refused a token \(403\)/, /unsuspend or reinstall/),
    );
  });

  it("fails when GitHub refuses the app's JWT (another app's key: 401), naming the settings", async () => {
    const id = installation();
    github.installations.add(id);
    const repo = uniqueId('repo');
    await assert.rejects(
      send(target({ privateKey: testGithubApp().privateKey }), repo, `github:${id}`),
      refused('permanent', /JWT was refused \(401\)/, /GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY/),
    );
    assert.deepEqual(tokensOn(repo), []);
    await assert.rejects(
      send(target({ appId: '1' }), repo, `github:${id}`),
      refused('permanent', /JWT was refused \(401\)/),
      "another app's id",
    );
    assert.equal(github.tokensOf(id).length, 0);
  });

  it('retries a token endpoint 5xx (nothing was posted), then posts once', async () => {
    const id = installation();
    github.installations.add(id);
    github.nextTokenRequest({ status: 502 }, { status: 503, retryAfter: '7' });
    const adapter = target();
    const repo = uniqueId('repo');
    await assert.rejects(
      send(adapter, repo, `github:${id}`),
      refused('retryable', /failed \(502\): nothing was posted/),
    );
    await assert.rejects(
      send(adapter, repo, `github:${id}`),
      (err: unknown) =>
        err instanceof TargetError && err.errorClass === 'retryable' && err.details.retryAfterMs === 7000,
    );
    assert.deepEqual(tokensOn(repo), []);
    await send(adapter, repo, `github:${id}`);
    assert.equal(github.tokenRequests(id).length, 3);
    assert.deepEqual(tokensOn(repo), github.tokensOf(id));
  });

  it('retries when the token endpoint cannot be reached or drops the connection', async () => {
    const id = installation();
    github.installations.add(id);
    const repo = uniqueId('repo');
    github.nextTokenRequest('drop');
    await assert.rejects(send(target(), repo, `github:${id}`), refused('retryable', /nothing was posted/));
    const closed = await new FakeGithub().start();
    await closed.stop();
    await assert.rejects(
      send(target({ apiUrl: closed.url }), repo, `github:${id}`),
      refused('retryable', /ECONNREFUSED.*nothing was posted/),
    );
    assert.deepEqual(tokensOn(repo), []);
  });

  it('gives up waiting for a hung token request when the attempt runs out of time, posting nothing', async () => {
    const id = installation();
    github.installations.add(id);
    github.nextTokenRequest('hang');
    const repo = uniqueId('repo');
    await assert.rejects(
      target().send({
        effectId: uniqueId('eff-'),
        step: step(repo, `github:${id}`),
        body: { text: 'thanks' },
        signal: AbortSignal.timeout(300),
        attempt: 1,
      }),
      refused('retryable', /no installation token before the attempt timed out: nothing was posted/),
    );
    assert.equal(github.tokenRequests(id).length, 1);
    assert.deepEqual(tokensOn(repo), []);
  });

  it('refuses a tenant that is not a GitHub installation, before any request', async () => {
    const before = github.requests.length;
    await assert.rejects(
      send(target({ token: github.token }), uniqueId('repo'), 'slack:T0123'),
      refused('permanent', /not a GitHub App installation/, /github:<installation id>/),
    );
    assert.equal(github.requests.length, before);
  });

  it('registers the target with the app alone, and names both settings for routes', () => {
    const app = createTargets(
      testConfig({ SANDBOX_ENABLED: 'false', GITHUB_APP_ID: APP.id, GITHUB_APP_PRIVATE_KEY: APP.privateKey }),
    );
    assert.deepEqual([...app.keys()], ['github']);
    assert.equal(createTargets(testConfig({ SANDBOX_ENABLED: 'false' })).size, 0);
    assert.match(TARGET_SETTINGS.github ?? '', /GITHUB_TOKEN.*GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY/);
  });
});
