// Stripe conformance: every event type the `stripe` package declares, in both payload styles Stripe
// sends: snapshot events (the Stripe.Event union, the object in `data`) and thin events from event
// destinations (Stripe.V2.Core.EventNotification, `created` as ISO 8601). Each with the fields the
// package marks required, signed with the package's own test helper: all answered 2xx.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { signStripeEvent } from '../support/signers';
import { assertAll2xx, conformanceReceiver, type Delivery, report, SECRETS, sendAll } from './harness';
import { TypeExamples } from './type-examples';

function delivery(name: string, event: unknown): Delivery {
  const body = JSON.stringify(event);
  return { name, path: '/webhooks/stripe', headers: signStripeEvent(SECRETS.stripe, body), body };
}

const eventId = () => `evt_${randomUUID().replace(/-/g, '').slice(0, 24)}`;

describe('conformance: Stripe (the event types of the stripe package through the receiver)', function () {
  this.timeout(300_000);
  const { receiver } = conformanceReceiver();
  const types = new TypeExamples(
    `import type Stripe from 'stripe';\nexport type Snapshot = Stripe.Event;\nexport type Thin = Stripe.V2.Core.EventNotification;`,
  );

  const sendEvery = async (union: 'Snapshot' | 'Thin', top: Record<string, () => unknown>) => {
    const deliveries = types.variants(union).map((variant) => {
      const type = types.literal(variant, 'type');
      assert.ok(type, `every ${union} member names its type`);
      const event = types.example(variant) as Record<string, unknown>;
      for (const [key, make] of Object.entries(top)) event[key] = make();
      return delivery(type, event);
    });
    const answers = await sendAll(receiver(), deliveries);
    report(`Stripe ${union.toLowerCase()} events`, answers);
    assertAll2xx(answers);
    assert.deepEqual(
      answers
        .filter((a) => !(a.status === 202 && a.body.workflowId?.startsWith('webhook:stripe:evt_')))
        .map((a) => a.delivery.name),
      [],
    );
    return answers;
  };

  it('answers every snapshot event type 2xx, each with a workflow', async () => {
    const answers = await sendEvery('Snapshot', {
      id: eventId,
      created: () => Math.floor(Date.now() / 1000),
    });
    assert.ok(answers.length >= 250, `stripe declares ${answers.length} snapshot event types`);
  });

  it('answers every thin event type (event destinations) 2xx, each with a workflow', async () => {
    const answers = await sendEvery('Thin', {
      id: eventId,
      created: () => new Date().toISOString(),
      related_object: () => ({ id: 'obj_123', type: 'billing.meter', url: '/v1/billing/meters/obj_123' }),
    });
    assert.ok(answers.length >= 250, `stripe declares ${answers.length} thin event types`);
  });

  it('answers an event type Stripe adds later 2xx', async () => {
    const event = {
      id: eventId(),
      object: 'event',
      type: 'future_object.invented',
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 'fo_1', object: 'future_object' } },
    };
    const [answer] = await sendAll(receiver(), [delivery('future_object.invented', event)]);
    assert.equal(answer!.status, 202);
  });
});
