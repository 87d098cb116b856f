// Slack conformance: every Events API event type and message subtype that Slack's own SDK declares
// (npm @slack/types, pinned: the SlackEvent union), each with the fields the SDK marks required,
// wrapped in the event_callback envelope and signed as Slack signs; plus the envelopes that carry no
// event (url_verification, app_rate_limited, a type Slack adds later); and slash commands and every
// interaction payload @slack/bolt declares (each kind of block element action, shortcuts, modals),
// form-encoded as Slack sends them. Every one is answered 2xx; a redelivered command is a duplicate.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { signSlackRequest } from '../support/signers';
import {
  assertAll2xx,
  conformanceReceiver,
  type Delivery,
  ignoredCount,
  report,
  requestCount,
  SECRETS,
  sendAll,
} from './harness';
import { TypeExamples } from './type-examples';

const FORM = 'application/x-www-form-urlencoded';

/** A command or an interaction, form-encoded and signed as Slack sends them. */
function formDelivery(name: string, form: Record<string, string>): Delivery {
  const body = new URLSearchParams(form).toString();
  return {
    name,
    path: '/webhooks/slack',
    headers: signSlackRequest(SECRETS.slack, body, new Date(), FORM),
    body,
  };
}

function delivery(name: string, envelope: object): Delivery {
  const body = JSON.stringify(envelope);
  return { name, path: '/webhooks/slack', headers: signSlackRequest(SECRETS.slack, body), body };
}

/** The envelope Slack wraps every event in (@slack/bolt's EnvelopedEvent). */
function eventCallback(event: unknown): object {
  const now = Math.floor(Date.now() / 1000);
  return {
    token: 'verification-token',
    team_id: 'T0001',
    api_app_id: 'A0001',
    event,
    type: 'event_callback',
    event_id: `Ev${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`,
    event_time: now,
    authorizations: [
      { enterprise_id: null, team_id: 'T0001', user_id: 'U0001', is_bot: true, is_enterprise_install: false },
    ],
    is_ext_shared_channel: false,
    event_context: `4-${randomUUID()}`,
  };
}

describe('conformance: Slack (the event types of @slack/types through the receiver)', function () {
  this.timeout(300_000);
  const { receiver } = conformanceReceiver();
  const types = new TypeExamples(
    `import type { SlackEvent } from '@slack/types';\nexport type Event = SlackEvent;`,
  );
  // Compiled before the receiver starts: compiling blocks the process the receiver runs in.
  const bolt = new TypeExamples(
    `import type * as bolt from '@slack/bolt';
export type Command = bolt.SlashCommand;
export type Element = bolt.BlockElementAction;
export type BlockAction = bolt.BlockAction;
export type Shortcut = bolt.SlackShortcut;
export type ViewAction = bolt.SlackViewAction;`,
  );
  const now = Math.floor(Date.now() / 1000);
  const ts = `${now}.000100`;
  // Slack timestamps are strings of seconds; the SDK types them as plain strings.
  const overrides = { ts: () => ts, event_ts: () => ts, thread_ts: () => ts };

  it('answers every event type and message subtype 2xx, each event_callback with a workflow', async () => {
    const deliveries: Delivery[] = [];
    for (const variant of types.variants('Event')) {
      const type = types.literal(variant, 'type');
      assert.ok(type, 'every SlackEvent member names its type');
      const subtype = types.literal(variant, 'subtype');
      const name = subtype ? `${type}/${subtype}` : type;
      // app_rate_limited is an envelope of its own, not an event inside event_callback.
      const example = types.example(variant, overrides) as Record<string, unknown>;
      deliveries.push(delivery(name, type === 'app_rate_limited' ? example : eventCallback(example)));
    }
    assert.ok(deliveries.length >= 100, `@slack/types declares ${deliveries.length} event types`);
    const before = await ignoredCount(receiver(), 'slack', 'app_rate_limited');
    const answers = await sendAll(receiver(), deliveries);
    report('Slack', answers);
    assertAll2xx(answers);
    const notStarted = answers.filter(
      (a) => !(a.status === 202 && a.body.workflowId?.startsWith('webhook:slack:Ev')),
    );
    assert.deepEqual(
      notStarted.map((a) => `${a.delivery.name}: ${a.status} ${a.body.status}`),
      ['app_rate_limited: 200 ignored'],
    );
    assert.equal(await ignoredCount(receiver(), 'slack', 'app_rate_limited'), before + 1);
  });

  it('answers url_verification with its challenge and an unknown envelope type with 200, starting nothing', async () => {
    const before = await ignoredCount(receiver(), 'slack', 'unknown_envelope_type');
    const [challenge, future] = await sendAll(receiver(), [
      delivery('url_verification', { token: 't', challenge: 'c-123', type: 'url_verification' }),
      delivery('app_future_notice', {
        token: 't',
        team_id: 'T0001',
        api_app_id: 'A0001',
        type: 'app_future_notice',
      }),
    ]);
    assert.deepEqual([challenge!.status, challenge!.body], [200, { challenge: 'c-123' }]);
    assert.deepEqual(
      [future!.status, future!.body],
      [200, { status: 'ignored', reason: 'unknown_envelope_type' }],
    );
    assert.equal(await ignoredCount(receiver(), 'slack', 'unknown_envelope_type'), before + 1);
  });

  it('answers a retried delivery (X-Slack-Retry-Num) as a duplicate of the first', async () => {
    const first = delivery(
      'message',
      eventCallback({
        type: 'message',
        channel: 'C1',
        user: 'U1',
        text: 'hi',
        ts,
        event_ts: ts,
        channel_type: 'channel',
      }),
    );
    const retry = {
      ...first,
      headers: { ...first.headers, 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' },
    };
    const [a] = await sendAll(receiver(), [first]);
    const [b] = await sendAll(receiver(), [retry]);
    assert.deepEqual([a!.status, b!.status, b!.body.workflowId], [202, 200, a!.body.workflowId]);
  });

  it('answers every slash command and interaction payload of @slack/bolt with an empty 200, once each', async () => {
    let n = 0;
    // Slack's ids and URLs have formats the SDK types as plain strings.
    const ids = {
      trigger_id: () => `${now}.${++n}.${randomUUID().replace(/-/g, '')}`,
      response_url: () => `https://hooks.slack.com/actions/T0001/${n}/${randomUUID()}`,
      action_ts: () => ts,
      message_ts: () => ts,
      ts: () => ts,
      team: () => ({ id: 'T0001', domain: 'acme' }),
    };
    const example = (type: Parameters<TypeExamples['example']>[0], extra = {}) =>
      bolt.example(type, { ...ids, ...extra }) as Record<string, unknown>;
    const interaction = (name: string, payload: object) =>
      formDelivery(name, { payload: JSON.stringify(payload) });
    const deliveries: Delivery[] = [];
    for (const command of bolt.variants('Command'))
      deliveries.push(formDelivery('slash_command', example(command) as Record<string, string>));
    const [blockAction] = bolt.variants('BlockAction');
    for (const element of bolt.variants('Element')) {
      const action = example(element);
      deliveries.push(
        interaction(
          `block_actions/${String(action.type)}`,
          example(blockAction!, { actions: () => [action] }),
        ),
      );
    }
    for (const variant of [...bolt.variants('Shortcut'), ...bolt.variants('ViewAction')]) {
      const payload = example(variant);
      deliveries.push(interaction(String(payload.type), payload));
    }
    assert.ok(deliveries.length >= 20, `@slack/bolt declares ${deliveries.length} payloads`);
    const accepted = await requestCount(receiver(), 'slack', 'accepted');
    const duplicate = await requestCount(receiver(), 'slack', 'duplicate');
    const first = await sendAll(receiver(), deliveries);
    const again = await sendAll(receiver(), deliveries);
    report('Slack commands and interactivity', first);
    assertAll2xx([...first, ...again]);
    assert.deepEqual(
      [...first, ...again]
        .filter((a) => a.status !== 200 || Object.keys(a.body).length > 0)
        .map((a) => a.delivery.name),
      [],
      'every answer is an empty 200 (Slack shows a body to the person)',
    );
    assert.equal(await requestCount(receiver(), 'slack', 'accepted'), accepted + deliveries.length);
    assert.equal(await requestCount(receiver(), 'slack', 'duplicate'), duplicate + deliveries.length);
  });
});
