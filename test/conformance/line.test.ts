// LINE conformance: every webhook event type LINE's own SDK declares (npm @line/bot-sdk, the
// webhook.Event union generated from LINE's OpenAPI document), every kind of message content and of
// source, a redelivery, and the console's empty verify request, each signed as LINE signs: all 2xx.
// Postbacks (buttons, date pickers, rich menu switches), typed as webhook.PostbackEvent, are answered
// by the default route: one reply each, through the reply token.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { webhook } from '@line/bot-sdk';
import { lineProvider } from '../../src/providers/line';
import { answersByDefault, defaultPlans } from '../../src/routes';
import { signLineRequest } from '../support/signers';
import { eventsOf, requestContext } from '../unit/providers/context';
import { assertAll2xx, conformanceReceiver, type Delivery, report, SECRETS, sendAll } from './harness';
import { TypeExamples } from './type-examples';

const DESTINATION = 'U0123456789abcdef0123456789abcdef';

/** A person's postback as LINE sends it, checked against @line/bot-sdk's own type. */
function postbackEvent(postback: webhook.PostbackContent): webhook.PostbackEvent {
  return {
    type: 'postback',
    mode: 'active',
    timestamp: Date.now(),
    source: { type: 'user', userId: 'U4af4980629f0000000000000000000' },
    webhookEventId: `01${randomUUID().replace(/-/g, '').toUpperCase().slice(0, 24)}`,
    deliveryContext: { isRedelivery: false },
    replyToken: randomUUID().replace(/-/g, ''),
    postback,
  };
}

/** Postbacks with each kind of params LINE documents (https://developers.line.biz/en/reference/messaging-api/#postback-event). */
const POSTBACKS: Record<string, webhook.PostbackContent> = {
  'postback (button)': { data: 'action=buy&itemid=111' },
  'postback (datetimepicker date)': { data: 'storeId=12345', params: { date: '2017-12-25' } },
  'postback (datetimepicker time)': { data: 'storeId=12345', params: { time: '01:00' } },
  'postback (datetimepicker datetime)': { data: 'storeId=12345', params: { datetime: '2017-12-25T01:00' } },
  'postback (richmenuswitch)': {
    data: 'richmenu-changed-to-b',
    params: { newRichMenuAliasId: 'richmenu-alias-b', status: 'SUCCESS' },
  },
};

function delivery(name: string, events: unknown[]): Delivery {
  const body = JSON.stringify({ destination: DESTINATION, events });
  return { name, path: '/webhooks/line', headers: signLineRequest(SECRETS.line, body), body };
}

describe('conformance: LINE (the webhook types of @line/bot-sdk through the receiver)', function () {
  this.timeout(300_000);
  const { receiver } = conformanceReceiver();
  const types = new TypeExamples(
    `import type { webhook } from '@line/bot-sdk';\nexport type Event = webhook.Event;`,
  );
  // Every event carries a fresh ULID-like id and a time in milliseconds; the rest is as the SDK declares.
  const eventOverrides = () => ({
    webhookEventId: () => `01${randomUUID().replace(/-/g, '').toUpperCase().slice(0, 24)}`,
    timestamp: () => Date.now(),
  });

  it('answers every event type, message content and source 2xx, each event with a workflow', async () => {
    const deliveries: Delivery[] = [];
    for (const variant of types.variants('Event')) {
      const type = types.literal(variant, 'type');
      assert.ok(type, 'every webhook.Event member names its type');
      const contents = types.propertyVariants(variant, 'message');
      const sources = types.propertyVariants(variant, 'source');
      // Message events once per kind of content; every event once per kind of source it may come from.
      for (const content of contents.length > 0 ? contents : [undefined]) {
        const kind = content ? types.literal(content, 'type') : undefined;
        const event = types.example(variant, eventOverrides()) as Record<string, unknown>;
        if (content) event.message = types.example(content);
        deliveries.push(delivery(kind ? `${type}/${kind}` : type, [event]));
      }
      for (const source of sources) {
        const event = types.example(variant, eventOverrides()) as Record<string, unknown>;
        event.source = types.example(source);
        deliveries.push(delivery(`${type} from ${types.literal(source, 'type')}`, [event]));
      }
    }
    const answers = await sendAll(receiver(), deliveries);
    report('LINE', answers);
    assertAll2xx(answers);
    assert.deepEqual(
      answers
        .filter((a) => !(a.status === 202 && a.body.workflowId?.startsWith('webhook:line:01')))
        .map((a) => a.delivery.name),
      [],
    );
    const eventTypes = new Set(types.variants('Event').map((v) => types.literal(v, 'type')));
    assert.ok(eventTypes.size >= 19, `@line/bot-sdk declares ${eventTypes.size} event types`);
  });

  it('answers the console verify request (no events) 200 and a batch of events with one workflow each', async () => {
    const [verify] = await sendAll(receiver(), [delivery('verify', [])]);
    assert.deepEqual([verify!.status, verify!.body], [200, {}]);
    const message = types.variants('Event').find((v) => types.literal(v, 'type') === 'message')!;
    const batch = [1, 2, 3].map(() => types.example(message, eventOverrides()));
    const [answer] = await sendAll(receiver(), [delivery('batch', batch)]);
    assert.equal(answer!.status, 202);
    assert.equal(answer!.body.workflows?.length, 3);
  });

  it('answers a redelivery (deliveryContext.isRedelivery) of a delivered event as a duplicate', async () => {
    const message = types.variants('Event').find((v) => types.literal(v, 'type') === 'message')!;
    const event = types.example(message, eventOverrides()) as Record<string, unknown>;
    const [first] = await sendAll(receiver(), [delivery('message', [event])]);
    const redelivered = { ...event, deliveryContext: { isRedelivery: true } };
    const [again] = await sendAll(receiver(), [delivery('message (redelivery)', [redelivered])]);
    assert.deepEqual(
      [first!.status, again!.status, again!.body.workflowId],
      [202, 200, first!.body.workflowId],
    );
  });

  describe('postbacks', () => {
    const events = Object.entries(POSTBACKS).map(([name, content]) => ({
      name,
      event: postbackEvent(content),
    }));
    const deliveries = events.map(({ name, event }) => delivery(name, [event]));

    it('answers postbacks with and without params 202, each with its workflow, and a redelivery as a duplicate', async () => {
      const answers = await sendAll(receiver(), deliveries);
      report('LINE postbacks', answers);
      assert.deepEqual(
        answers.map((a) => [a.status, a.body.workflowId]),
        events.map(({ event }) => [202, `webhook:line:${event.webhookEventId}`]),
      );
      const first = events[1]!.event;
      const redelivered = { ...first, deliveryContext: { isRedelivery: true } };
      const [again] = await sendAll(receiver(), [delivery('postback (redelivery)', [redelivered])]);
      assert.deepEqual(
        [again!.status, again!.body.status, again!.body.workflowId],
        [200, 'duplicate', `webhook:line:${first.webhookEventId}`],
      );
    });

    it('plans one reply per postback through its reply token (the default route), from the bytes LINE signs', async () => {
      const provider = lineProvider(SECRETS.line);
      const slack = { replyTo: 'mentions' as const, allIn: [] };
      for (const [i, d] of deliveries.entries()) {
        const ctx = requestContext(d.body, d.headers);
        await provider.verify(ctx);
        const [event] = eventsOf(provider.parse(ctx));
        assert.equal(await answersByDefault(event!, slack, async () => false), true, d.name);
        const plans = defaultPlans(event!);
        assert.deepEqual(
          plans.map((p) => p.steps.map((s) => [s.target, s.content.kind, s.destination.replyToken])),
          [[['line', 'reply', events[i]!.event.replyToken]]],
          d.name,
        );
      }
    });
  });
});
