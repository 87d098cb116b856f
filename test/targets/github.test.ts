// The GitHub target through the whole event workflow (time-skipping server, real PostgreSQL) against a
// fake REST API over real HTTP: one comment per issue, a hidden marker that lookup finds across pages,
// and rate limits waited out without extra requests.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Config } from '../../src/config';
import type { InboundEvent } from '../../src/providers/types';
import { effectMarker } from '../../src/targets/github';

import { FakeGithub, secondaryRateLimit } from '../support/fakes/github';
import { operatorDecides } from '../support/operators';
import { timeSkipping } from '../support/servers';
import { startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows, startEvent, waitForState } from '../support/workflows';
import { githubIssueOpened } from './harness';

describe('GitHub target (issue comment + hidden marker lookup) through the event workflow', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let github: FakeGithub;
  let config: Config;
  let worker: { stop(): Promise<void> };

  before(async () => {
    env = await timeSkipping();
    github = await new FakeGithub().start();
    config = testConfig({ GITHUB_TOKEN: github.token, GITHUB_API_URL: github.url });
    worker = await startTestWorker({ address: env.address, config });
  });
  after(async () => {
    await worker?.stop();
    await github?.stop();
  });
  beforeEach(() => {
    github.pageSize = 100;
  });

  const start = (event: InboundEvent) => startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
  const rowFor = async (event: InboundEvent) => {
    const rows = await effectRows(`chat:github:${event.conversation!.id}:`);
    assert.equal(rows.length, 1, 'one effect row per business key');
    return rows[0];
  };
  const postsTo = (repo: string) => github.posts().filter((p) => p.path.includes(`/${repo}/`));
  const listsOf = (repo: string) => github.to(new RegExp(`/${repo}/issues/\\d+/comments$`), 'GET');

  it('comments once, ending with the hidden marker that carries the effect id', async () => {
    const repo = uniqueId('repo');
    const event = githubIssueOpened('acme', repo, '7');
    assert.equal((await (await start(event)).result()).state, 'succeeded');
    const row = await rowFor(event);
    const [comment] = github.onIssue('acme', repo, '7');
    assert.ok(comment?.body.endsWith(effectMarker(row.id)));
    assert.equal(row.external_id, String(comment?.id));
    assert.equal(postsTo(repo).length, 1);
  });

  it('settles a lost response by finding the marker on a later page, without a second comment', async () => {
    const repo = uniqueId('repo');
    github.seed('acme', repo, '8', 250);
    github.next('accept-then-drop');
    const event = githubIssueOpened('acme', repo, '8');
    assert.equal((await (await start(event)).result()).state, 'succeeded');
    const row = await rowFor(event);
    assert.equal(postsTo(repo).length, 1);
    const ours = github.onIssue('acme', repo, '8').filter((c) => c.body.includes(effectMarker(row.id)));
    assert.equal(ours.length, 1);
    assert.equal(row.external_id, String(ours[0]!.id));
    const lists = listsOf(repo);
    assert.deepEqual(
      lists.map((l) => l.query.get('page') ?? '1'),
      ['1', '2', '3'],
      'followed Link rel="next"',
    );
    assert.ok(lists.every((l) => l.query.get('since')));
  });

  it('waits out a secondary rate limit (403 + Retry-After) and comments once', async () => {
    const repo = uniqueId('repo');
    github.next(secondaryRateLimit(60));
    const event = githubIssueOpened('acme', repo, '9');
    const handle = await start(event);
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(postsTo(repo).length, 2, 'one refused, one accepted');
    assert.equal(github.onIssue('acme', repo, '9').length, 1);
    const { startTime, closeTime } = await handle.describe();
    assert.ok(closeTime!.getTime() - startTime.getTime() >= 60_000, 'Retry-After honoured in workflow time');
  });

  it('holds a 502 (maybe applied) that lookup does not find', async () => {
    const repo = uniqueId('repo');
    github.next({ status: 502 });
    const event = githubIssueOpened('acme', repo, '10');
    const handle = await start(event);
    const held = await waitForState(handle, 'held');
    assert.match(held.recommendedAction ?? '', /not found by lookup/);
    assert.equal(postsTo(repo).length, 1);
    assert.equal(listsOf(repo).length, 2, 'looked again after the consistency delay');
    await operatorDecides(handle, 'resolve', {
      action: 'discard',
      reason: 'issue handled by hand',
    });
    assert.equal((await handle.result()).state, 'discarded');
  });

  it('fails a comment on an issue the token cannot see, with the fix', async () => {
    const repo = uniqueId('repo');
    github.next({ status: 404, body: { message: 'Not Found' } });
    const event = githubIssueOpened('acme', repo, '11');
    const handle = await start(event);
    const failed = await waitForState(handle, 'failed');
    assert.match(failed.recommendedAction ?? '', /owner, repo and issue number/);
    assert.equal(postsTo(repo).length, 1);
    await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'wrong repo' });
    await handle.result();
  });
});
