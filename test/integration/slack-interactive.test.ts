// Slack slash commands and buttons answered through their response_url, as Slack would deliver them:
// signed form-encoded requests through the real receiver, the event workflow on the dev server,
// PostgreSQL, the built-in FAQ responder, and a fake of Slack's response URLs that counts the answers
// it was sent. A command or a click is answered once, a redelivery adds nothing, a spent URL fails.
import assert from 'node:assert/strict';
import type { BlockButtonAction, SlashCommand } from '@slack/bolt';
import type { Config } from '../../src/config';
import type { ReceiverHandle } from '../../src/receiver';
import { DEFAULT_FAQ } from '../../src/responders/faq';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { FakeResponseUrls } from '../support/fakes/slack-response';
import { startTestReceiver } from '../support/receiver';
import { devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { signSlackRequest } from '../support/signers';
import { startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows, waitForState } from '../support/workflows';

const SIGNING_SECRET = 'slack-interactive-test-signing-secret';
const TEAM = 'T0INTERACT';
const answerTo = (pattern: string) => DEFAULT_FAQ.entries.find((e) => e.patterns.includes(pattern))!.answer;

/** A trigger id as Slack writes them (`<digits>.<digits>.<hex>`), new for each delivery. */
const triggerId = () =>
  `${Date.now()}.${Math.floor(Math.random() * 1e9)}.${uniqueId('t').replace(/\W/g, '')}`;

function slashCommand(responseUrl: string, text: string): SlashCommand {
  return {
    token: 'verification-token',
    command: '/ask',
    text,
    response_url: responseUrl,
    trigger_id: triggerId(),
    user_id: 'U0PERSON',
    user_name: 'ada',
    team_id: TEAM,
    team_domain: 'acme',
    channel_id: uniqueId('C').toUpperCase(),
    channel_name: 'general',
    api_app_id: 'A0INTERACT',
  };
}

function buttonClick(responseUrl: string, value: string): BlockButtonAction {
  const channel = uniqueId('C').toUpperCase();
  const ts = `${Math.floor(Date.now() / 1000)}.000100`;
  return {
    type: 'block_actions',
    actions: [
      {
        type: 'button',
        block_id: 'topics',
        action_id: 'ask',
        action_ts: ts,
        value,
        text: { type: 'plain_text', text: 'Refunds' },
      },
    ],
    team: { id: TEAM, domain: 'acme' },
    user: { id: 'U0PERSON', username: 'ada' },
    channel: { id: channel, name: 'general' },
    token: 'verification-token',
    response_url: responseUrl,
    trigger_id: triggerId(),
    api_app_id: 'A0INTERACT',
    container: { type: 'message', message_ts: ts, channel_id: channel },
  };
}

describe('Slack commands and buttons answered through response_url (receiver, worker, fake Slack)', function () {
  this.timeout(120_000);
  let config: Config;
  let receiver: ReceiverHandle;
  let temporal: TemporalClient;
  let hooks: FakeResponseUrls;
  let worker: { stop(): Promise<void> } | undefined;

  before(async () => {
    const server = await devServer();
    hooks = await new FakeResponseUrls().start();
    // No SLACK_BOT_TOKEN: answering through a response_url needs none.
    config = testConfig({ SLACK_SIGNING_SECRET: SIGNING_SECRET, SLACK_API_URL: `${hooks.url}/api/` });
    receiver = await startTestReceiver({ config, temporalAddress: server.address });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    worker = await startTestWorker({ address: server.address, config });
  });
  after(async () => {
    await worker?.stop();
    await receiver?.stop();
    await temporal?.close();
    await hooks?.stop();
  });

  /** Posts a form as Slack does; Slack must get an empty 200 (it shows a body to the person). */
  async function post(form: Record<string, string>): Promise<void> {
    const body = new URLSearchParams(form).toString();
    const response = await fetch(`${receiver.url}/webhooks/slack`, {
      method: 'POST',
      headers: signSlackRequest(SIGNING_SECRET, body, new Date(), 'application/x-www-form-urlencoded'),
      body,
    });
    assert.deepEqual([response.status, await response.text()], [200, '']);
  }

  const handleOf = (trigger: string) => temporal.client.workflow.getHandle(`webhook:slack:${trigger}`);
  const command = async (c: SlashCommand) => {
    await post({ ...c });
    return handleOf(c.trigger_id);
  };
  const click = async (b: BlockButtonAction) => {
    await post({ payload: JSON.stringify(b) });
    return handleOf(b.trigger_id);
  };

  it("answers a slash command once, with the responder's answer to its text", async () => {
    const url = hooks.urlFor(uniqueId('cmd'));
    const result = await (await command(slashCommand(url, 'what are your opening hours?'))).result();
    assert.equal(result.state, 'succeeded');
    const answers = hooks.answersTo(url);
    assert.equal(answers.length, 1, 'one answer');
    assert.deepEqual(answers[0]!.body, { text: answerTo('opening hours') });
  });

  it("answers a button click once, with the responder's answer to the button's value", async () => {
    const url = hooks.urlFor(uniqueId('btn'));
    const result = await (await click(buttonClick(url, 'refund'))).result();
    assert.equal(result.state, 'succeeded');
    assert.deepEqual(
      hooks.answersTo(url).map((a) => a.body),
      [{ text: answerTo('refund') }],
    );
  });

  it('answers a command delivered twice, and a click delivered twice, once each', async () => {
    const commandUrl = hooks.urlFor(uniqueId('cmd-twice'));
    const clickUrl = hooks.urlFor(uniqueId('btn-twice'));
    const c = slashCommand(commandUrl, 'hello');
    const b = buttonClick(clickUrl, 'refund');
    await Promise.all([command(c), command(c), click(b)]);
    await click(b);
    const results = await Promise.all([handleOf(c.trigger_id).result(), handleOf(b.trigger_id).result()]);
    assert.deepEqual(
      results.map((r) => r.state),
      ['succeeded', 'succeeded'],
    );
    assert.deepEqual([hooks.answersTo(commandUrl).length, hooks.answersTo(clickUrl).length], [1, 1]);
  });

  it('fails (permanent) an answer whose response_url is gone (404), without trying again', async () => {
    const url = hooks.urlFor(uniqueId('expired'));
    hooks.next({ status: 404 });
    const c = slashCommand(url, 'hello');
    const view = await waitForState(await command(c), 'failed');
    assert.equal(view.lastErrorClass, 'permanent');
    const rows = await effectRows(`chat:slack:${TEAM}:${c.channel_id}:${c.trigger_id}:`);
    assert.deepEqual(
      rows.map((r) => [r.target, r.status, r.last_error_class]),
      [['slack-response', 'failed', 'permanent']],
    );
    assert.equal(hooks.answersTo(url).length, 1, 'one attempt: a spent URL stays spent');
  });
});
