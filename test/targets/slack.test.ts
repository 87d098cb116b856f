// The Slack target through the whole event workflow (time-skipping server, real PostgreSQL) against a
// fake Slack Web API over real HTTP: one post per business key in every fault case, lookups through
// message metadata, and no retries added by @slack/web-api (counted at the fake).
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Config } from '../../src/config';
import type { InboundEvent } from '../../src/providers/types';
import { SLACK_METADATA_EVENT_TYPE } from '../../src/targets/slack';

import { FakeSlack, slackError } from '../support/fakes/slack';
import { operatorDecides, secondOperatorApproves } from '../support/operators';
import { timeSkipping } from '../support/servers';
import { startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows, startEvent, waitForState } from '../support/workflows';
import { slackEvent } from './harness';

describe('Slack target (chat.postMessage + metadata lookup) through the event workflow', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let slack: FakeSlack;
  let config: Config;
  let worker: { stop(): Promise<void> };

  before(async () => {
    env = await timeSkipping();
    slack = await new FakeSlack().start();
    config = testConfig({ SLACK_BOT_TOKEN: slack.token, SLACK_API_URL: `${slack.url}/api/` });
    worker = await startTestWorker({ address: env.address, config });
  });
  after(async () => {
    await worker?.stop();
    await slack?.stop();
  });
  beforeEach(() => {
    slack.metadataVisible = true;
    slack.pageSize = 1000;
  });

  const start = (event: InboundEvent) => startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
  const rowFor = async (event: InboundEvent) => {
    const rows = await effectRows(`chat:slack:${event.conversation!.id}:${event.message!.id}:`);
    assert.equal(rows.length, 1, 'one effect row per business key');
    return rows[0];
  };
  const lookups = (channel: string) =>
    slack.requests.filter(
      (r) => /conversations\.(replies|history)$/.test(r.path) && r.body.channel === channel,
    );

  it('posts one reply in the thread, carrying the effect id as message metadata', async () => {
    const channel = uniqueId('C');
    const event = slackEvent(channel, '1712345678.000100');
    const result = await (await start(event)).result();
    assert.equal(result.state, 'succeeded');
    const row = await rowFor(event);
    const [message] = slack.delivered(row.id);
    assert.equal(slack.postsFor(row.id).length, 1);
    assert.equal(message?.thread_ts, '1712345678.000100');
    assert.deepEqual(message?.metadata, {
      event_type: SLACK_METADATA_EVENT_TYPE,
      event_payload: { effect_id: row.id },
    });
    assert.equal(row.external_id, `${channel}/${message?.ts}`);
  });

  it('settles a lost response by reading the thread back, paging past other replies, without a second post', async () => {
    const channel = uniqueId('C');
    const event = slackEvent(channel, '1712345678.000200');
    slack.seed(channel, 450, '1712345678.000200');
    slack.pageSize = 100;
    slack.next('accept-then-drop');
    const result = await (await start(event)).result();
    assert.equal(result.state, 'succeeded');
    const row = await rowFor(event);
    assert.equal(slack.postsFor(row.id).length, 1);
    assert.equal(slack.delivered(row.id).length, 1);
    assert.equal(row.external_id, `${channel}/${slack.delivered(row.id)[0]!.ts}`);
    const reads = lookups(channel);
    assert.ok(reads.length >= 2, 'the lookup paged');
    assert.ok(
      reads.every((r) => r.path.endsWith('conversations.replies') && r.body.include_all_metadata === 'true'),
    );
  });

  it('settles a lost top-level post from the channel history', async () => {
    const channel = uniqueId('C');
    const event = slackEvent(channel, '1712345678.000300', true);
    slack.next('accept-then-drop');
    const result = await (await start(event)).result();
    assert.equal(result.state, 'succeeded');
    const row = await rowFor(event);
    assert.equal(slack.postsFor(row.id).length, 1);
    assert.ok(lookups(channel).some((r) => r.path.endsWith('conversations.history')));
  });

  it('holds a lost response when the history comes back without our metadata, looking twice', async () => {
    const channel = uniqueId('C');
    const event = slackEvent(channel, '1712345678.000400');
    slack.metadataVisible = false;
    slack.next('accept-then-drop');
    const handle = await start(event);
    const held = await waitForState(handle, 'held');
    assert.equal(held.lastErrorClass, 'unknown');
    const row = await rowFor(event);
    assert.equal(slack.postsFor(row.id).length, 1, 'never a blind second post');
    assert.equal(lookups(channel).length, 2, 'looked again after the consistency delay');
    await operatorDecides(handle, 'resolve', {
      action: 'mark-sent',
      reason: 'seen in the thread',
      externalId: slack.delivered(row.id)[0]!.ts,
    });
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(slack.postsFor(row.id).length, 1);
  });

  it('waits out a 429 with Retry-After and posts once more: the client adds no retries of its own', async () => {
    const channel = uniqueId('C');
    const event = slackEvent(channel, '1712345678.000500');
    // Longer than the first retry's backoff (1 s + 20 %): a retry this late honoured Retry-After.
    slack.next({ status: 429, retryAfter: '3' });
    const handle = await start(event);
    const result = await handle.result();
    assert.equal(result.state, 'succeeded');
    const row = await rowFor(event);
    const posts = slack.postsFor(row.id);
    assert.equal(posts.length, 2, 'one refused, one accepted');
    assert.equal(slack.delivered(row.id).length, 1);
    const { startTime, closeTime } = await handle.describe();
    assert.ok(closeTime!.getTime() - startTime.getTime() >= 3_000, 'Retry-After honoured in workflow time');
  });

  it('holds a 500 (maybe applied) that lookup cannot find, and an approved resend posts exactly once', async () => {
    const channel = uniqueId('C');
    const event = slackEvent(channel, '1712345678.000600');
    slack.next({ status: 500 });
    const handle = await start(event);
    await waitForState(handle, 'held');
    const row = await rowFor(event);
    assert.equal(slack.postsFor(row.id).length, 1, 'the client did not retry the 500');
    await operatorDecides(handle, 'resolve', {
      action: 'resend',
      reason: 'nothing in the thread',
    });
    await waitForState(handle, 'awaiting_approval');
    await secondOperatorApproves(handle, 'checked the thread');
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(slack.postsFor(row.id).length, 2);
    assert.equal(slack.delivered(row.id).length, 1);
  });

  it('parks a refusal (not_in_channel) as failed with the fix, without retrying it', async () => {
    const channel = uniqueId('C');
    const event = slackEvent(channel, '1712345678.000700');
    slack.next(slackError('not_in_channel'));
    const handle = await start(event);
    const failed = await waitForState(handle, 'failed');
    assert.equal(failed.lastErrorClass, 'permanent');
    assert.match(failed.recommendedAction ?? '', /invite the app/);
    const row = await rowFor(event);
    assert.equal(slack.postsFor(row.id).length, 1);
    await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'channel gone' });
    assert.equal((await handle.result()).state, 'discarded');
  });

  it('fails for bad credentials with the setting to fix', async () => {
    const channel = uniqueId('C');
    const event = slackEvent(channel, '1712345678.000800');
    const other = await new FakeSlack('xoxb-other').start();
    try {
      const badConfig = testConfig({ SLACK_BOT_TOKEN: 'xoxb-wrong', SLACK_API_URL: `${other.url}/api/` });
      const badWorker = await startTestWorker({ address: env.address, config: badConfig });
      try {
        const handle = await startEvent(env.client, badConfig.TEMPORAL_TASK_QUEUE, event);
        const failed = await waitForState(handle, 'failed');
        assert.match(failed.recommendedAction ?? '', /SLACK_BOT_TOKEN/);
        assert.equal(other.posts().length, 1);
        await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'test' });
        await handle.result();
      } finally {
        await badWorker.stop();
      }
    } finally {
      await other.stop();
    }
  });
});
