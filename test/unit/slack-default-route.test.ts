// The default route's choice for Slack (src/routes.ts answersByDefault): what addresses the bot is
// answered, what does not is left alone, and the effects table is asked only about a thread reply that
// nothing else settles, once, for the parent's answer.
import assert from 'node:assert/strict';
import { slackProvider } from '../../src/providers/slack';
import type { InboundEvent } from '../../src/providers/types';
import { answersByDefault, chatBusinessKey, planner, type SlackReplySettings } from '../../src/routes';
import { signSlackRequest } from '../support/signers';
import { eventsOf, requestContext } from './providers/context';

const SECRET = 'slack-default-route-secret';
const MENTIONS: SlackReplySettings = { replyTo: 'mentions', allIn: [] };

/** A Slack event as the receiver normalises it, for the bot user UBOT. */
function slackEvent(event: Record<string, unknown>): InboundEvent {
  const body = JSON.stringify({
    type: 'event_callback',
    team_id: 'T1',
    event_id: 'Ev1',
    event_time: 1_700_000_000,
    event: { user: 'U7', text: 'lunch?', ts: '1700000000.000200', channel: 'C1', ...event },
    authorizations: [{ team_id: 'T1', user_id: 'UBOT', is_bot: true }],
  });
  const [normalised] = eventsOf(
    slackProvider(SECRET).parse(requestContext(body, signSlackRequest(SECRET, body))),
  );
  return normalised!;
}

/** A lookup that answers `found` and remembers what it was asked. */
function lookup(found: boolean) {
  const asked: [string, string][] = [];
  return {
    asked,
    answered: async (target: string, businessKey: string) => {
      asked.push([target, businessKey]);
      return found;
    },
  };
}

describe('the default route for Slack (answersByDefault)', () => {
  const plain = { type: 'message', channel_type: 'channel' };
  const threadReply = { ...plain, thread_ts: '1700000000.000100', parent_user_id: 'U7' };

  it('answers mentions and direct messages without asking the effects table', async () => {
    const { asked, answered } = lookup(false);
    for (const event of [
      { type: 'app_mention', text: '<@UBOT> hours?' },
      { ...plain, text: 'hey <@UBOT>' },
      { ...plain, channel: 'D1', channel_type: 'im' },
      { ...threadReply, text: '<@UBOT> and Sundays?' },
    ])
      assert.equal(
        await answersByDefault(slackEvent(event), MENTIONS, answered),
        true,
        JSON.stringify(event),
      );
    assert.deepEqual(asked, []);
  });

  it('leaves a plain channel message alone, without asking', async () => {
    const { asked, answered } = lookup(true);
    assert.equal(await answersByDefault(slackEvent(plain), MENTIONS, answered), false);
    assert.deepEqual(asked, []);
  });

  it("asks once, for the parent's answer, about a reply in someone else's thread", async () => {
    for (const found of [true, false]) {
      const { asked, answered } = lookup(found);
      const event = slackEvent(threadReply);
      assert.equal(await answersByDefault(event, MENTIONS, answered), found);
      assert.deepEqual(asked, [['slack', chatBusinessKey(event, 'answer', '1700000000.000100')]]);
      assert.equal(asked[0]![1], 'chat:slack:T1:C1:1700000000.000100:answer');
    }
  });

  it('answers a reply in the bot’s own thread without asking', async () => {
    const { asked, answered } = lookup(false);
    assert.equal(
      await answersByDefault(slackEvent({ ...threadReply, parent_user_id: 'UBOT' }), MENTIONS, answered),
      true,
    );
    assert.deepEqual(asked, []);
  });

  it('answers every message where the settings say so, and only there', async () => {
    const { asked, answered } = lookup(false);
    const all: SlackReplySettings = { replyTo: 'all', allIn: [] };
    const inC1: SlackReplySettings = { replyTo: 'mentions', allIn: ['C1'] };
    assert.equal(await answersByDefault(slackEvent(plain), all, answered), true);
    assert.equal(await answersByDefault(slackEvent(threadReply), all, answered), true);
    assert.equal(await answersByDefault(slackEvent(plain), inC1, answered), true);
    assert.equal(await answersByDefault(slackEvent({ ...plain, channel: 'C2' }), inC1, answered), false);
    assert.deepEqual(asked, []);
  });

  it('plans no reply to a bot or an edit, whatever the settings', async () => {
    const all: SlackReplySettings = { replyTo: 'all', allIn: [] };
    for (const event of [
      { ...plain, bot_id: 'B1' },
      { ...plain, subtype: 'message_changed' },
    ]) {
      const normalised = slackEvent(event);
      const defaultReply = await answersByDefault(normalised, all, lookup(true).answered);
      assert.deepEqual(planner()(normalised, { defaultReply }), [], JSON.stringify(event));
    }
  });

  it('leaves out only the default route when it does not answer', () => {
    const event = slackEvent({ type: 'app_mention', text: '<@UBOT> hours?' });
    assert.equal(planner()(event).length, 1);
    assert.deepEqual(planner()(event, { defaultReply: false }), []);
  });
});
