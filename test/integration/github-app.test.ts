// A GitHub App installed on two accounts (issue 28): each installation's `issues opened` webhook,
// signed as GitHub signs it and naming its installation, goes through the real receiver, the event
// workflow on the dev server and PostgreSQL to exactly one comment, posted with that installation's
// own token, which the worker fetched with the app's JWT from the fake GitHub.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import examples from '@octokit/webhooks-examples';
import type { Config } from '../../src/config';
import type { EventResult } from '../../workflows/run-view';
import { FakeGithub, testGithubApp, tokenOf } from '../support/fakes/github';
import { startTestSystem, type TestSystem } from '../support/receiver';
import { devServer } from '../support/servers';
import { signGitHubDelivery } from '../support/signers';
import { testConfig, uniqueId } from '../support/system';

const SECRET = 'github-app-test-webhook-secret';
const APP = testGithubApp('310931');

/** GitHub's own `issues opened` example, as an installation of the app delivers it on `repo`. */
function issueOpened(installationId: number, owner: string, repo: string): string {
  const example = examples
    .find((definition) => definition.name === 'issues')
    ?.examples.find((e) => 'action' in e && e.action === 'opened') as unknown as {
    repository: { owner: object };
  };
  return JSON.stringify({
    ...example,
    repository: {
      ...example.repository,
      name: repo,
      full_name: `${owner}/${repo}`,
      owner: { ...example.repository.owner, login: owner },
    },
    installation: { id: installationId, node_id: `MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u${installationId}` },
  });
}

describe('GitHub App: two installations, each answered with its own token (receiver, worker, fake GitHub)', function () {
  this.timeout(120_000);
  let github: FakeGithub;
  let config: Config;
  let system: TestSystem | undefined;

  before(async () => {
    const _server = await devServer();
    github = await new FakeGithub().start();
    github.app = { id: APP.id, publicKey: APP.publicKey };
    // No GITHUB_TOKEN: every comment must go with an installation's token.
    config = testConfig({
      GITHUB_WEBHOOK_SECRET: SECRET,
      GITHUB_APP_ID: APP.id,
      GITHUB_APP_PRIVATE_KEY: APP.privateKey,
      GITHUB_API_URL: github.url,
    });
    system = await startTestSystem({ config });
  });
  after(async () => {
    await system?.stop();
    await github?.stop();
  });

  async function deliver(body: string): Promise<EventResult> {
    const headers = await signGitHubDelivery(SECRET, body, {
      event: 'issues',
      deliveryId: randomUUID(),
      hookId: '5150',
    });
    const response = await fetch(`${system!.receiver.url}/webhooks/github`, {
      method: 'POST',
      headers,
      body,
    });
    const answer = (await response.json()) as { workflowId: string };
    assert.equal(response.status, 202, JSON.stringify(answer));
    return system!.temporal.client.workflow.getHandle(answer.workflowId).result();
  }

  it("comments once on each installation's issue, with that installation's token", async () => {
    const accounts = [
      { installation: 61_000_001, owner: 'octo-org', repo: uniqueId('hello-') },
      { installation: 61_000_002, owner: 'other-org', repo: uniqueId('world-') },
    ];
    for (const { installation } of accounts) github.installations.add(String(installation));
    const results = await Promise.all(
      accounts.map(({ installation, owner, repo }) => deliver(issueOpened(installation, owner, repo))),
    );
    assert.deepEqual(
      results.map((r) => r.state),
      ['succeeded', 'succeeded'],
    );
    for (const { installation, owner, repo } of accounts) {
      // The workflow succeeded only once its comment was posted.
      const posts = github.posts().filter((p) => p.path === `/repos/${owner}/${repo}/issues/1/comments`);
      assert.equal(posts.length, 1, 'exactly one comment');
      assert.equal(github.onIssue(owner, repo, '1').length, 1);
      assert.deepEqual(
        posts.map(tokenOf),
        github.tokensOf(String(installation)),
        "the installation's own token",
      );
      assert.equal(github.tokenRequests(String(installation)).length, 1);
    }
    const [a, b] = accounts.map(({ installation }) => github.tokensOf(String(installation))[0]);
    assert.notEqual(a, b);
  });
});
