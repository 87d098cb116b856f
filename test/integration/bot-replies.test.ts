// The reply contract end to end (docs/responders.md): a bot module (RESPONDER_MODULE, test/bots/
// rich-bot.ts) behind the real receiver, the event workflow on the dev server, PostgreSQL, and a
// fake Slack Web API. The bot is given the event's fields and Slack's own event; its answer may be
// several messages with blocks, in the thread or the channel, each an effect of its own sent in
// order; it may say nothing; an answer of the wrong shape is failed before anything is sent.
import assert from 'node:assert/strict';
import type { AppMentionEvent } from '@slack/types';
import type { ReceiverHandle } from '../../src/receiver';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import type { EventResult } from '../../workflows/run-view';
import { eventually } from '../support/eventually';
import { FakeLine } from '../support/fakes/line';
import { FakeSlack, slackError } from '../support/fakes/slack';
import { operatorDecides } from '../support/operators';
import { startTestReceiver } from '../support/receiver';
import { devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { signSlackRequest } from '../support/signers';
import { startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows } from '../support/workflows';
import { linePostbackRequest } from '../targets/harness';

const SIGNING_SECRET = 'bot-replies-test-signing-secret';
const LINE_SECRET = 'bot-replies-test-line-channel-secret';
const BOT = 'UBOT0002';
const PERSON = 'UPERSON02';
const TEAM = 'T0BOTREPLY';

let seq = 0;
const nextTs = () => `${Math.floor(Date.now() / 1000)}.${String(++seq).padStart(6, '0')}`;
const channelId = () => uniqueId('C').toUpperCase();

function mention(channel: string, ts: string, text: string): AppMentionEvent {
  return { type: 'app_mention', channel, user: PERSON, text: `<@${BOT}> ${text}`, ts, event_ts: ts };
}

function envelope(event: object): string {
  return JSON.stringify({
    token: 'verification-token',
    team_id: TEAM,
    api_app_id: 'A0BOTREPLY',
    event,
    type: 'event_callback',
    event_id: uniqueId('Ev'),
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      { enterprise_id: null, team_id: TEAM, user_id: BOT, is_bot: true, is_enterprise_install: false },
    ],
  });
}

describe('A bot module answers through the reply contract (receiver, dev server, PostgreSQL, fake Slack)', function () {
  this.timeout(120_000);
  let slack: FakeSlack;
  let line: FakeLine;
  let receiver: ReceiverHandle;
  let temporal: TemporalClient;
  let worker: { stop(): Promise<void> } | undefined;

  before(async () => {
    const server = await devServer();
    slack = await new FakeSlack().start();
    line = await new FakeLine().start();
    const config = testConfig({
      LINE_CHANNEL_SECRET: LINE_SECRET,
      LINE_CHANNEL_ACCESS_TOKEN: line.channelAccessToken,
      LINE_API_URL: line.url,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_BOT_TOKEN: slack.token,
      SLACK_API_URL: `${slack.url}/api/`,
      RESPONDER_MODULE: 'test/bots/rich-bot.ts',
    });
    receiver = await startTestReceiver({ config, temporalAddress: server.address });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    worker = await startTestWorker({ address: server.address, config });
  });
  after(async () => {
    await worker?.stop();
    await receiver?.stop();
    await temporal?.close();
    await slack?.stop();
    await line?.stop();
  });

  /** Delivers a mention as Slack does; @returns its workflow's handle once acknowledged. */
  async function deliver(channel: string, ts: string, text: string) {
    const body = envelope(mention(channel, ts, text));
    const response = await fetch(`${receiver.url}/webhooks/slack`, {
      method: 'POST',
      headers: signSlackRequest(SIGNING_SECRET, body),
      body,
    });
    const answer = (await response.json()) as { workflowId: string };
    assert.equal(response.status, 202);
    return temporal.client.workflow.getHandle<() => Promise<EventResult>>(answer.workflowId);
  }
  const postsIn = (channel: string) => slack.posts().filter((p) => p.body.channel === channel);

  it('gives the bot the event: type, user, channel and thread, and Slack’s own event', async () => {
    const channel = channelId();
    const ts = nextTs();
    const handle = await deliver(channel, ts, 'who am I?');
    assert.equal((await handle.result()).state, 'succeeded');
    const [post] = postsIn(channel);
    assert.deepEqual(JSON.parse(String(post!.body.text)), {
      version: 1,
      provider: 'slack',
      eventType: 'app_mention',
      user: PERSON,
      conversationId: `${TEAM}:${channel}`,
      slack: { team: TEAM, channel, threadTs: ts },
      rawType: 'app_mention',
    });
  });

  it('sends several messages in order, each its own effect: blocks, the thread, then the channel', async () => {
    const channel = channelId();
    const ts = nextTs();
    const result = await (await deliver(channel, ts, 'give me three')).result();
    assert.equal(result.state, 'succeeded');
    const posts = postsIn(channel);
    assert.deepEqual(
      posts.map((p) => [p.body.text, p.body.thread_ts]),
      [
        ['one', ts],
        ['two', ts],
        ['three', undefined],
      ],
    );
    // The Web API client sends blocks as a JSON string in the form, as Slack takes them.
    assert.deepEqual(JSON.parse(String(posts[0]!.body.blocks)), [
      { type: 'section', text: { type: 'mrkdwn', text: '*one*' } },
    ]);
    const key = `chat:slack:${TEAM}:${channel}:${ts}:answer`;
    const rows = await effectRows(key);
    assert.deepEqual(
      rows.map((r) => [r.business_key, r.status]),
      [
        [key, 'succeeded'],
        [`${key}#2`, 'succeeded'],
        [`${key}#3`, 'succeeded'],
      ],
    );
    // Each effect id went out as its post's metadata once: three effects, three posts.
    assert.equal(new Set(posts.map((p) => JSON.stringify(p.body.metadata))).size, 3);
  });

  it('a later message that fails stops the ones after it; reprocess sends the rest, not the first again', async () => {
    const channel = channelId();
    const ts = nextTs();
    slack.next('accept', slackError('restricted_action'));
    const handle = await deliver(channel, ts, 'three again');
    const key = `chat:slack:${TEAM}:${channel}:${ts}:answer`;
    await eventually(
      'the second message failed',
      async () => (await effectRows(key)).map((r) => r.status).join(','),
      { until: (statuses) => statuses === 'succeeded,failed' },
    );
    assert.deepEqual(
      postsIn(channel).map((p) => p.body.text),
      ['one', 'two'],
    );
    await operatorDecides(handle, 'reprocess', { reason: 'the channel allows posts again' });
    assert.equal((await handle.result()).state, 'succeeded');
    assert.deepEqual(
      postsIn(channel).map((p) => p.body.text),
      ['one', 'two', 'two', 'three'],
    );
  });

  it('says nothing when the bot answers null: succeeded, skipped, nothing posted', async () => {
    const channel = channelId();
    const ts = nextTs();
    const result = await (await deliver(channel, ts, 'quiet please')).result();
    assert.deepEqual(
      [result.state, result.reason],
      ['succeeded', 'skipped: the responder chose not to reply'],
    );
    assert.equal(postsIn(channel).length, 0);
    const [row] = await effectRows(`chat:slack:${TEAM}:${channel}:${ts}:answer`);
    assert.equal(row.status, 'skipped');
  });

  it('fails an answer Slack cannot take before sending anything, naming the field', async () => {
    const channel = channelId();
    const ts = nextTs();
    const handle = await deliver(channel, ts, 'wrong shape');
    const status = await eventually(
      'the answer failed at prepareReply',
      () => handle.query<{ state: string; step?: string; lastError?: string }>('status'),
      { until: (s) => s.state === 'failed' },
    );
    assert.equal(status.step, 'prepareReply');
    assert.match(status.lastError ?? '', /messages\.0: type and quickReply are LINE fields/);
    assert.equal(postsIn(channel).length, 0);
  });

  it('answers a LINE postback with a quick reply and a flex card in one reply, once', async () => {
    const to = uniqueId('U');
    const { replyToken } = line.replyToken(to);
    const request = linePostbackRequest(LINE_SECRET, to, replyToken, {
      data: 'day=pick',
      params: { date: '2026-12-24' },
    });
    const post = () =>
      fetch(`${receiver.url}/webhooks/line`, {
        method: 'POST',
        headers: request.headers,
        body: request.body,
      });
    const first = await post();
    assert.equal(first.status, 202);
    const { workflowId } = (await first.json()) as { workflowId: string };
    assert.equal((await temporal.client.workflow.getHandle(workflowId).result()).state, 'succeeded');
    // LINE delivers it again (no ack seen): a duplicate, not a second reply.
    assert.equal((await post()).status, 200);
    const replies = line.replies().filter((r) => r.body.replyToken === replyToken);
    assert.equal(replies.length, 1);
    const messages = replies[0]!.body.messages as { type: string; text?: string; quickReply?: unknown }[];
    assert.deepEqual(
      messages.map((m) => [m.type, m.text]),
      [
        ['text', 'You chose day=pick for 2026-12-24'],
        ['flex', undefined],
      ],
    );
    assert.ok(messages[0]!.quickReply, 'the quick reply went with the text');
    assert.equal(line.deliveredTo(to).length, 1);
  });
});
