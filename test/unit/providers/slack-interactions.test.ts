// Slack's slash commands and interactivity (src/providers/slack-interactions.ts): the request from
// Slack's signing documentation parsed as the command it is, each payload type normalised with the
// key Slack makes unique for it, a valid one broken one thing at a time, the response_url kept out of
// everything but the reply's destination, and what the bot is given (src/responders/bot-event.ts).
import assert from 'node:assert/strict';
import type { BlockButtonAction, MessageShortcut, ViewClosedAction, ViewSubmitAction } from '@slack/bolt';
import { WebhookPayloadError } from '../../../src/providers/errors';
import { slackProvider } from '../../../src/providers/slack';
import { toBotEvent } from '../../../src/responders/bot-event';
import { answersByDefault, chatBusinessKey, planner } from '../../../src/routes';
import { signSlackRequest } from '../../support/signers';
import { eventsOf, requestContext } from './context';

const FORM = 'application/x-www-form-urlencoded';
const SECRET = 'slack-interactions-test-secret';
const provider = slackProvider(SECRET);
const RESPONSE_URL = 'https://hooks.slack.com/actions/T1/123/abcdef';

function parse(body: string) {
  return provider.parse(requestContext(body, signSlackRequest(SECRET, body, new Date(), FORM)));
}

const interactionBody = (payload: object) =>
  new URLSearchParams({ payload: JSON.stringify(payload) }).toString();

function button(extra: Partial<BlockButtonAction> = {}): BlockButtonAction {
  return {
    type: 'block_actions',
    actions: [
      {
        type: 'button',
        block_id: 'b1',
        action_id: 'approve',
        action_ts: '1700000000.000300',
        value: 'approve-42',
        text: { type: 'plain_text', text: 'Approve' },
      },
    ],
    team: { id: 'T1', domain: 'acme' },
    user: { id: 'U7', username: 'ada' },
    channel: { id: 'C1', name: 'general' },
    token: 'verification-token',
    response_url: RESPONSE_URL,
    trigger_id: '111.222.aaa',
    api_app_id: 'A1',
    container: { type: 'message', message_ts: '1700000000.000100', channel_id: 'C1' },
    ...extra,
  };
}

/** The slash command in https://api.slack.com/authentication/verifying-requests-from-slack. */
const DOCS_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const DOCS_BODY =
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
const DOCS_SIGNATURE = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';

describe('Slack commands and interactivity', () => {
  it("verifies and parses the slash command of Slack's signing documentation", async () => {
    const docs = slackProvider(DOCS_SECRET);
    const at = new Date(1531420618 * 1000);
    const ctx = requestContext(
      DOCS_BODY,
      {
        'content-type': FORM,
        'x-slack-request-timestamp': '1531420618',
        'x-slack-signature': DOCS_SIGNATURE,
      },
      { receivedAt: at },
    );
    await docs.verify(ctx);
    const result = docs.parse(ctx);
    assert.equal(result.kind === 'events' && result.ack, 'empty', 'acknowledged with an empty 200');
    const [event] = eventsOf(result);
    assert.deepEqual(
      {
        eventId: event!.eventId,
        workflowId: event!.workflowId,
        eventType: event!.eventType,
        conversation: event!.conversation,
        message: event!.message,
        replyTo: event!.replyTo,
      },
      {
        eventId: '398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
        workflowId: 'webhook:slack:398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
        eventType: 'slash_command',
        conversation: { id: 'T1DC2JH3J:G8PSS9T3V' },
        message: {
          id: '398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
          text: '',
          user: 'U2CERLKJA',
        },
        replyTo: {
          target: 'slack-response',
          kind: 'answer',
          destination: {
            responseUrl: 'https://hooks.slack.com/commands/T1DC2JH3J/397700885554/96rGlfmibIGlgcZRskXaIFfN',
            channel: 'G8PSS9T3V',
          },
        },
      },
    );
    assert.ok(!JSON.stringify(event!.payload).includes('hooks.slack.com'), 'the payload has no response_url');
  });

  it('gives the bot the command, its text and the payload without response_url', () => {
    const body = new URLSearchParams({
      command: '/weather',
      text: 'tokyo tomorrow',
      team_id: 'T1',
      channel_id: 'C1',
      user_id: 'U7',
      trigger_id: '123.456.abc',
      response_url: 'https://hooks.slack.com/commands/T1/1/x',
      api_app_id: 'A1',
    }).toString();
    const bot = toBotEvent(eventsOf(parse(body))[0]!);
    assert.equal(bot.eventType, 'slash_command');
    assert.equal(bot.text, 'tokyo tomorrow');
    assert.deepEqual(bot.slack, { team: 'T1', channel: 'C1', threadTs: undefined, command: '/weather' });
    assert.equal((bot.raw as Record<string, unknown>).command, '/weather');
    assert.ok(!JSON.stringify(bot).includes('hooks.slack.com'));
  });

  it('keys a button click on its trigger_id and gives the bot the action and its value', () => {
    const [event] = eventsOf(parse(interactionBody(button())));
    assert.equal(event!.workflowId, 'webhook:slack:111.222.aaa');
    assert.equal(event!.occurredAt, new Date(1_700_000_000_000).toISOString());
    assert.deepEqual(event!.message, { id: '111.222.aaa', text: 'approve-42', user: 'U7' });
    assert.deepEqual(event!.conversation, { id: 'T1:C1', version: '1700000000.000300' });
    assert.deepEqual(event!.replyTo?.destination, { responseUrl: RESPONSE_URL, channel: 'C1' });
    const bot = toBotEvent(event!);
    assert.deepEqual(bot.slack?.action, { actionId: 'approve', blockId: 'b1', value: 'approve-42' });
    assert.ok(!JSON.stringify(bot).includes('hooks.slack.com'));
  });

  it('plans one answer per click: two clicks on one message are two operations', () => {
    const plan = planner();
    const first = eventsOf(parse(interactionBody(button())))[0]!;
    const second = eventsOf(parse(interactionBody(button({ trigger_id: '111.222.bbb' }))))[0]!;
    const keys = [first, second].map((e) => plan(e)[0]?.businessKey);
    assert.deepEqual(keys, [chatBusinessKey(first, 'answer'), chatBusinessKey(second, 'answer')]);
    assert.notEqual(keys[0], keys[1]);
    assert.equal(plan(first)[0]?.steps[0]?.target, 'slack-response');
  });

  it('answers by default what carries a response_url, and nothing else', async () => {
    const never = async () => assert.fail('no effects lookup for an interaction');
    const settings = { replyTo: 'mentions' as const, allIn: [] };
    const shortcut: MessageShortcut = {
      type: 'message_action',
      callback_id: 'summarise',
      trigger_id: '333.444.ccc',
      message_ts: '1700000000.000100',
      response_url: RESPONSE_URL,
      message: { type: 'message', ts: '1700000000.000100', text: 'a long message', user: 'U8' },
      user: { id: 'U7', name: 'ada' },
      channel: { id: 'C1', name: 'general' },
      team: { id: 'T1', domain: 'acme' },
      token: 't',
      action_ts: '1700000001.000000',
    };
    const view = {
      id: 'V1',
      team_id: 'T1',
      type: 'modal',
      blocks: [],
      private_metadata: '',
      callback_id: 'feedback',
      state: { values: { b: { a: { type: 'plain_text_input', value: 'great' } } } },
      hash: 'h',
      title: { type: 'plain_text', text: 'Feedback' },
      close: null,
      submit: null,
      root_view_id: 'V1',
      previous_view_id: null,
      app_id: 'A1',
      external_id: '',
      bot_id: 'B1',
      notify_on_close: true,
      clear_on_close: false,
      app_installed_team_id: 'T1',
    } as unknown as ViewSubmitAction['view'];
    const submission = (extra: Partial<ViewSubmitAction>): ViewSubmitAction => ({
      type: 'view_submission',
      team: { id: 'T1', domain: 'acme' },
      user: { id: 'U7', name: 'ada' },
      view,
      api_app_id: 'A1',
      token: 't',
      trigger_id: '555.666.ddd',
      ...extra,
    });
    const closed: ViewClosedAction = {
      type: 'view_closed',
      team: { id: 'T1', domain: 'acme' },
      user: { id: 'U7', name: 'ada' },
      view,
      api_app_id: 'A1',
      token: 't',
      is_cleared: false,
    };
    const cases = {
      message_action: shortcut,
      view_submission_with_url: submission({
        response_urls: [{ block_id: 'b', action_id: 'a', channel_id: 'C2', response_url: RESPONSE_URL }],
      }),
      view_submission: submission({}),
      view_closed: closed,
      shortcut: {
        type: 'shortcut',
        callback_id: 'new',
        trigger_id: '777.888.eee',
        user: { id: 'U7', username: 'ada', team_id: 'T1' },
        team: { id: 'T1', domain: 'acme' },
        token: 't',
        action_ts: '1700000002.000000',
      },
    };
    const answered: Record<string, boolean> = {};
    for (const [name, payload] of Object.entries(cases)) {
      const [event] = eventsOf(parse(interactionBody(payload)));
      answered[name] = (await answersByDefault(event!, settings, never)) && planner()(event!).length === 1;
    }
    assert.deepEqual(answered, {
      message_action: true,
      view_submission_with_url: true,
      view_submission: false,
      view_closed: false,
      shortcut: false,
    });
    const [closing] = eventsOf(parse(interactionBody(closed)));
    assert.equal(closing!.workflowId, 'webhook:slack:view_closed:V1');
    const submitted = toBotEvent(eventsOf(parse(interactionBody(cases.view_submission_with_url)))[0]!);
    assert.deepEqual(submitted.slack?.view, { callbackId: 'feedback', values: view.state.values });
    assert.equal(submitted.slack?.channel, 'C2');
    assert.ok(!JSON.stringify(submitted).includes('hooks.slack.com'));
    const message = toBotEvent(eventsOf(parse(interactionBody(shortcut)))[0]!);
    assert.deepEqual(
      [message.text, message.slack?.shortcut],
      ['a long message', { callbackId: 'summarise' }],
    );
  });

  it('acknowledges an interaction type it does not key on (legacy attachments, dialogs) and ignores it', () => {
    const result = parse(interactionBody({ type: 'interactive_message', callback_id: 'x', actions: [] }));
    assert.deepEqual(result, { kind: 'ignored', reason: 'unknown_envelope_type', ack: 'empty' });
  });

  describe('refuses (400) a form that Slack would not send', () => {
    const refused = (body: string) => assert.throws(() => parse(body), WebhookPayloadError);

    it('a command without a trigger_id', () => {
      refused(
        new URLSearchParams({
          command: '/x',
          team_id: 'T1',
          channel_id: 'C1',
          user_id: 'U1',
          response_url: 'https://hooks.slack.com/commands/T1/1/x',
        }).toString(),
      );
    });
    it('a trigger_id that cannot be a workflow id', () => {
      refused(interactionBody(button({ trigger_id: '../../etc' })));
    });
    it('a payload that is not JSON', () => {
      refused(new URLSearchParams({ payload: '{not json' }).toString());
    });
    it('a button click without its actions', () => {
      refused(interactionBody(button({ actions: [] })));
    });
    it('a response_url that is not a URL', () => {
      refused(interactionBody(button({ response_url: 'javascript:alert(1)' })));
    });
  });
});
