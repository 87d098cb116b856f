// Which Slack messages the default route answers (DESIGN.md §2, "Default routes"), as Slack would
// deliver them: signed event_callback envelopes through the real receiver, the event workflow on the
// dev server, PostgreSQL, and a fake Slack Web API that counts the replies it was asked to post.
// Mentions, direct messages and replies in a thread the bot is in get one reply; a plain channel
// message gets none (acknowledged, the workflow succeeded) unless SLACK_REPLY_TO or
// SLACK_REPLY_TO_ALL_IN says so.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AppMentionEvent, GenericMessageEvent } from '@slack/types';
import type { Config } from '../../src/config';
import { createEffectsRepository } from '../../src/db/effects';
import type { ReceiverHandle } from '../../src/receiver';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import type { EventResult } from '../../workflows/run-view';
import { FakeSlack } from '../support/fakes/slack';
import { startTestReceiver } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { signSlackRequest } from '../support/signers';
import { startTestWorker, testConfig, uniqueId } from '../support/system';

const SIGNING_SECRET = 'slack-replies-test-signing-secret';
/** The app's bot user, as Slack names it in every envelope's `authorizations`. */
const BOT = 'UBOT0001';
const PERSON = 'UPERSON01';
const TEAM = 'T0REPLIES';

/** A Slack channel id (upper-case letters and digits, as Slack writes them), new for each test. */
const channelId = (prefix = 'C') => uniqueId(prefix).toUpperCase();

let seq = 0;
/** A Slack message timestamp, unique within this run. */
function nextTs(): string {
  seq += 1;
  return `${Math.floor(Date.now() / 1000)}.${String(seq).padStart(6, '0')}`;
}

/** A person's message (`message.channels`, `message.im`, …), shaped as @slack/types declares it. */
function message(channel: string, ts: string, extra: Partial<GenericMessageEvent> = {}): GenericMessageEvent {
  return {
    type: 'message',
    subtype: undefined,
    channel,
    user: PERSON,
    text: 'anyone up for lunch?',
    ts,
    event_ts: ts,
    channel_type: 'channel',
    ...extra,
  };
}

function appMention(channel: string, ts: string, extra: Partial<AppMentionEvent> = {}): AppMentionEvent {
  return {
    type: 'app_mention',
    channel,
    user: PERSON,
    text: `<@${BOT}> what are your opening hours?`,
    ts,
    event_ts: ts,
    ...extra,
  };
}

/** The event_callback envelope Slack wraps each event in, naming the bot user it is delivered for. */
function envelope(event: object): string {
  return JSON.stringify({
    token: 'verification-token',
    team_id: TEAM,
    api_app_id: 'A0REPLIES',
    event,
    type: 'event_callback',
    event_id: uniqueId('Ev'),
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      { enterprise_id: null, team_id: TEAM, user_id: BOT, is_bot: true, is_enterprise_install: false },
    ],
    is_ext_shared_channel: false,
    event_context: uniqueId('4-'),
  });
}

interface Deployment {
  config: Config;
  receiver: ReceiverHandle;
  temporal: TemporalClient;
  /** The Slack Web API the worker posts to, its own. */
  slack: FakeSlack;
}

/**
 * Registers hooks that run a receiver and a worker with these settings on their own task queue, the
 * worker posting to its own fake Slack; the fields are filled in `before`.
 */
function deployment(env: Record<string, string> = {}): Deployment {
  const running = {} as Deployment;
  let worker: { stop(): Promise<void> } | undefined;
  before(async () => {
    const server = await devServer();
    running.slack = await new FakeSlack().start();
    running.config = testConfig({
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_BOT_TOKEN: running.slack.token,
      SLACK_API_URL: `${running.slack.url}/api/`,
      ...env,
    });
    running.receiver = await startTestReceiver({ config: running.config, temporalAddress: server.address });
    running.temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    worker = await startTestWorker({ address: server.address, config: running.config });
  });
  after(async () => {
    await worker?.stop();
    await running.receiver?.stop();
    await running.temporal?.close();
    await running.slack?.stop();
  });
  return running;
}

/** Delivers one event as Slack does; it must be acknowledged 202, and its workflow's result is returned. */
async function deliver(system: Deployment, event: { channel: string }): Promise<EventResult> {
  const body = envelope(event);
  const response = await fetch(`${system.receiver.url}/webhooks/slack`, {
    method: 'POST',
    headers: signSlackRequest(SIGNING_SECRET, body),
    body,
  });
  const answer = (await response.json()) as { status: string; workflowId: string };
  assert.equal(response.status, 202, `acknowledged: ${JSON.stringify(answer)}`);
  return system.temporal.client.workflow.getHandle(answer.workflowId).result();
}

const postsIn = (system: Deployment, channel: string) =>
  system.slack.posts().filter((p) => p.body.channel === channel);

/**
 * Delivers an event that gets no reply, and checks what it ends as: acknowledged, the workflow
 * succeeded with nothing planned, nothing posted in its channel.
 */
async function deliverUnanswered(system: Deployment, event: { channel: string }) {
  const result = await deliver(system, event);
  assert.equal(result.state, 'succeeded');
  assert.equal(result.reason, 'no route produces an effect for this event');
  assert.deepEqual(result.effects, []);
  assert.equal(postsIn(system, event.channel).length, 0, 'the fake Slack received no post');
}

function assertOneReplyIn(system: Deployment, channel: string, threadTs: string) {
  const posts = postsIn(system, channel);
  assert.equal(posts.length, 1, 'exactly one post');
  assert.equal(posts[0]!.body.thread_ts, threadTs, "in the message's thread");
}

/** The chat state machine's state of the channel's conversation (src/conversations.ts), if it has one. */
async function conversationState(channel: string): Promise<string | undefined> {
  const { pool } = await database();
  const { rows } = await pool.query<{ state: string }>('SELECT state FROM conversations WHERE id = $1', [
    `slack:${TEAM}:${channel}`,
  ]);
  return rows[0]?.state;
}

describe('Slack: the lookup behind "a thread the bot is in" (EffectsRepository.answering)', () => {
  it("counts the parent's answer while it is sent or may be, not once it failed or was discarded", async () => {
    const { pool } = await database();
    const effects = createEffectsRepository(pool);
    const expected: Record<string, boolean> = {
      claimed: true,
      sending: true,
      retry_wait: true,
      unknown: true,
      held: true,
      succeeded: true,
      failed: false,
      discarded: false,
    };
    const seen: Record<string, boolean> = {};
    for (const status of Object.keys(expected)) {
      const businessKey = `chat:slack:${TEAM}:${channelId()}:${nextTs()}:answer`;
      await pool.query(
        `INSERT INTO effects (id, target, business_key, integration, status, workflow_id)
         VALUES ($1, 'slack', $2, 'slack', $3, $4)`,
        [randomUUID(), businessKey, status, uniqueId('wf-')],
      );
      seen[status] = await effects.answering('slack', businessKey);
      assert.equal(await effects.answering('line', businessKey), false, 'another target');
    }
    assert.deepEqual(seen, expected);
    assert.equal(await effects.answering('slack', `chat:slack:${TEAM}:${channelId()}:1.1:answer`), false);
  });
});

describe('Slack: which messages get a reply by default (receiver, worker, fake Slack)', function () {
  this.timeout(120_000);

  describe('by default (SLACK_REPLY_TO unset: mentions)', () => {
    const system = deployment();

    it('acknowledges a plain channel message and does not reply to it', async () => {
      const channel = channelId();
      await deliverUnanswered(system, message(channel, nextTs()));
    });

    it('leaves the conversation alone for a message it does not answer: the bot has not taken it', async () => {
      const channel = channelId();
      await deliver(system, message(channel, nextTs()));
      assert.equal(await conversationState(channel), undefined);
      await deliver(system, appMention(channel, nextTs()));
      assert.equal(await conversationState(channel), 'bot_handling');
    });

    it('replies once to an app_mention, in its thread', async () => {
      const channel = channelId();
      const ts = nextTs();
      assert.equal((await deliver(system, appMention(channel, ts))).state, 'succeeded');
      assertOneReplyIn(system, channel, ts);
    });

    it('replies once to the message and app_mention events of one mention', async () => {
      const channel = channelId();
      const ts = nextTs();
      const text = `<@${BOT}> what are your opening hours?`;
      const results = await Promise.all([
        deliver(system, message(channel, ts, { text })),
        deliver(system, appMention(channel, ts, { text })),
      ]);
      assert.deepEqual(results.map((r) => r.state).sort(), ['duplicate', 'succeeded']);
      assertOneReplyIn(system, channel, ts);
    });

    it('replies to a message that mentions the bot even when no app_mention comes', async () => {
      const channel = channelId();
      const ts = nextTs();
      const result = await deliver(system, message(channel, ts, { text: `hey <@${BOT}>, are you open?` }));
      assert.equal(result.state, 'succeeded');
      assertOneReplyIn(system, channel, ts);
    });

    it('does not take a mention of someone else for a mention of the bot', async () => {
      const channel = channelId();
      await deliverUnanswered(system, message(channel, nextTs(), { text: '<@UOTHER01> lunch?' }));
    });

    it('replies once to a direct message', async () => {
      const channel = channelId('D');
      const ts = nextTs();
      const result = await deliver(system, message(channel, ts, { channel_type: 'im', text: 'hours?' }));
      assert.equal(result.state, 'succeeded');
      assertOneReplyIn(system, channel, ts);
    });

    it('replies to a reply in a thread the bot answered, in that thread', async () => {
      const channel = channelId();
      const parent = nextTs();
      await deliver(system, appMention(channel, parent));
      const reply = nextTs();
      const result = await deliver(
        system,
        message(channel, reply, { thread_ts: parent, parent_user_id: PERSON, text: 'and on Sundays?' }),
      );
      assert.equal(result.state, 'succeeded');
      const posts = postsIn(system, channel);
      assert.equal(posts.length, 2, 'the mention and the thread reply, one post each');
      assert.ok(posts.every((p) => p.body.thread_ts === parent));
    });

    it('replies to a reply in a thread the bot started', async () => {
      const channel = channelId();
      const parent = nextTs();
      const result = await deliver(
        system,
        message(channel, nextTs(), { thread_ts: parent, parent_user_id: BOT, text: 'thanks, and later?' }),
      );
      assert.equal(result.state, 'succeeded');
      assertOneReplyIn(system, channel, parent);
    });

    it('does not reply in a thread the bot is not in', async () => {
      const channel = channelId();
      const parent = nextTs();
      // The parent was a plain message (not answered): people talking among themselves.
      await deliverUnanswered(system, message(channel, parent));
      await deliverUnanswered(
        system,
        message(channel, nextTs(), { thread_ts: parent, parent_user_id: PERSON }),
      );
      await deliverUnanswered(
        system,
        message(channel, nextTs(), { thread_ts: nextTs(), parent_user_id: 'UOTHER01' }),
      );
    });
  });

  describe('SLACK_REPLY_TO=all', () => {
    const system = deployment({ SLACK_REPLY_TO: 'all' });

    it('replies once to a plain channel message', async () => {
      const channel = channelId();
      const ts = nextTs();
      assert.equal((await deliver(system, message(channel, ts))).state, 'succeeded');
      assertOneReplyIn(system, channel, ts);
    });

    it('still does not answer a bot, nor an edit', async () => {
      const channel = channelId();
      await deliverUnanswered(system, message(channel, nextTs(), { bot_id: 'B0OTHER01' }));
      const edit = { ...message(channel, nextTs()), subtype: 'message_changed' };
      await deliverUnanswered(system, edit);
    });
  });

  describe('SLACK_REPLY_TO_ALL_IN (every message in the channels listed)', () => {
    const listed = channelId();
    const alsoListed = channelId('G');
    const system = deployment({ SLACK_REPLY_TO_ALL_IN: `${listed}, ${alsoListed}` });

    it('replies to a plain message in a listed channel', async () => {
      for (const channel of [listed, alsoListed]) {
        const ts = nextTs();
        assert.equal((await deliver(system, message(channel, ts))).state, 'succeeded');
        assertOneReplyIn(system, channel, ts);
      }
    });

    it('does not reply to a plain message in any other channel', async () => {
      const channel = channelId();
      await deliverUnanswered(system, message(channel, nextTs()));
    });
  });
});

describe('Slack: replies into one channel paced as Slack asks (one a second), not learned from 429s', () => {
  const system = deployment();

  it('posts three replies in one channel a second apart, none refused, each answered once', async () => {
    system.slack.channelIntervalMs = 900;
    const channel = channelId();
    const mentions = [nextTs(), nextTs(), nextTs()].map((ts) => appMention(channel, ts));
    const results = await Promise.all(mentions.map((mention) => deliver(system, mention)));
    assert.deepEqual(
      results.map((r) => r.state),
      ['succeeded', 'succeeded', 'succeeded'],
    );
    const posts = postsIn(system, channel);
    assert.equal(system.slack.rateLimited.get(channel) ?? 0, 0, 'Slack refused no post with 429');
    assert.equal(posts.length, 3, 'three posts, one per mention');
    assert.deepEqual(posts.map((p) => p.body.thread_ts).sort(), mentions.map((m) => m.ts).sort());
    for (let i = 1; i < posts.length; i++)
      assert.ok(
        posts[i]!.at - posts[i - 1]!.at >= 900,
        `post ${i} came ${posts[i]!.at - posts[i - 1]!.at} ms after the one before`,
      );
  });
});
