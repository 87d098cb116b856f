// The Stripe provider: the signature vector, requests signed by stripe's own test helper broken one
// thing at a time, secret rolls, and the `evt_` event key.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { WebhookPayloadError, WebhookVerificationError } from '../../../src/providers/errors';
import { stripeProvider, verifyStripeRequest } from '../../../src/providers/stripe';
import { signStripeEvent } from '../../support/signers';
import { eventsOf, flipOneByte, requestContext } from './context';

const SECRET = 'whsec_test_secret';
const provider = stripeProvider(SECRET);

const paymentSucceeded = JSON.stringify({
  id: 'evt_1PaymentSucceeded',
  object: 'event',
  api_version: '2025-01-27',
  created: 1_700_000_000,
  livemode: false,
  type: 'payment_intent.succeeded',
  data: { object: { id: 'pi_123', object: 'payment_intent', amount: 2000, description: 'opening hours' } },
});

const stripeHeader = (body: string, secret: string, at: Date) =>
  Stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret,
    timestamp: Math.floor(at.getTime() / 1000),
  });

function parse(body: string) {
  return provider.parse(requestContext(body, signStripeEvent(SECRET, body)));
}

describe('Stripe provider', () => {
  describe('signature', () => {
    it('matches the computed vector', () => {
      const body = '{"id":"evt_test_webhook","object":"event"}';
      const expected = 't=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990';
      const at = new Date(1_700_000_000_000);
      assert.equal(signStripeEvent(SECRET, body, at)['stripe-signature'], expected);
      verifyStripeRequest(SECRET, requestContext(body, { 'stripe-signature': expected }, { receivedAt: at }));
    });

    // One fixed arrival time, so that the window's edge does not depend on when a second ticks over.
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const at = (offsetMs: number) => new Date(now.getTime() + offsetMs);
    const arriving = (raw: string | Buffer, signature: string) =>
      requestContext(raw, { 'stripe-signature': signature }, { receivedAt: now });
    const valid = () => stripeHeader(paymentSucceeded, SECRET, now);

    it('accepts a request signed by stripe.webhooks.generateTestHeaderString, up to 300 s either side', () => {
      verifyStripeRequest(SECRET, arriving(paymentSucceeded, valid()));
      for (const offset of [-300_000, 300_000]) {
        verifyStripeRequest(
          SECRET,
          arriving(paymentSucceeded, stripeHeader(paymentSucceeded, SECRET, at(offset))),
        );
      }
    });

    it('says which side of the window a timestamp missed', () => {
      const reason = (offsetMs: number) => {
        try {
          verifyStripeRequest(
            SECRET,
            arriving(paymentSucceeded, stripeHeader(paymentSucceeded, SECRET, at(offsetMs))),
          );
        } catch (err) {
          return (err as Error).message;
        }
        return 'accepted';
      };
      assert.match(reason(-301_000), /older than 300 s/);
      assert.match(reason(301_000), /more than 300 s in the future/);
    });

    it('accepts any matching v1 while a secret is rolled, and ignores v0', () => {
      const t = Math.floor(now.getTime() / 1000);
      const signatureWith = (secret: string) =>
        /v1=([0-9a-f]+)/.exec(stripeHeader(paymentSucceeded, secret, now))![1];
      const rolled = `t=${t},v1=${signatureWith('whsec_the_old_secret')},v1=${signatureWith(SECRET)},v0=deadbeef`;
      verifyStripeRequest(SECRET, arriving(paymentSucceeded, rolled));
    });

    const broken: [string, () => ReturnType<typeof requestContext>][] = [
      ['a changed body byte', () => arriving(flipOneByte(paymentSucceeded), valid())],
      [
        'another secret',
        () => arriving(paymentSucceeded, stripeHeader(paymentSucceeded, 'whsec_other', now)),
      ],
      [
        'a timestamp too old',
        () => arriving(paymentSucceeded, stripeHeader(paymentSucceeded, SECRET, at(-301_000))),
      ],
      // Stripe's libraries check only the age; a timestamp ahead of the clock is as much a replay window
      // (a request signed for later stays valid until then), so it is refused like Standard Webhooks do.
      [
        'a timestamp too far in the future',
        () => arriving(paymentSucceeded, stripeHeader(paymentSucceeded, SECRET, at(301_000))),
      ],
      [
        // The library signs over the last t=; a current one in front must not stand in for it.
        'a timestamp far in the future behind a current t=',
        () =>
          arriving(
            paymentSucceeded,
            `t=${now.getTime() / 1000},${stripeHeader(paymentSucceeded, SECRET, at(3_600_000))}`,
          ),
      ],
      [
        'a signed timestamp that is no number',
        () => {
          // The library signs over parseInt(t), here NaN; its age check lets NaN through.
          const v1 = createHmac('sha256', SECRET).update(`NaN.${paymentSucceeded}`).digest('hex');
          return arriving(paymentSucceeded, `t=soon,v1=${v1}`);
        },
      ],
      [
        'a timestamp other than the signed one',
        () => arriving(paymentSucceeded, valid().replace(/^t=\d+/, `t=${now.getTime() / 1000 - 1}`)),
      ],
      ['a v0 signature alone', () => arriving(paymentSucceeded, valid().replace('v1=', 'v0='))],
      ['a header without a timestamp', () => arriving(paymentSucceeded, valid().replace(/^t=\d+,/, ''))],
      ['a missing signature header', () => requestContext(paymentSucceeded, {}, { receivedAt: now })],
    ];
    for (const [name, make] of broken) {
      it(`rejects ${name}`, () => {
        assert.throws(() => verifyStripeRequest(SECRET, make()), WebhookVerificationError);
      });
    }

    it('gives a short reason, without the library’s payload or header', () => {
      assert.throws(
        () =>
          verifyStripeRequest(
            SECRET,
            arriving(paymentSucceeded, stripeHeader(paymentSucceeded, 'whsec_other', now)),
          ),
        (err: unknown) => {
          assert.ok(err instanceof WebhookVerificationError);
          assert.ok(!err.message.includes('opening hours'));
          assert.ok(err.message.length < 200);
          return true;
        },
      );
    });
  });

  describe('normalisation', () => {
    it('keys the event on its evt_ id and the object it is about, and asks for no reply', () => {
      const [event] = eventsOf(parse(paymentSucceeded));
      assert.equal(event!.provider, 'stripe');
      assert.equal(event!.eventId, 'evt_1PaymentSucceeded');
      assert.equal(event!.workflowId, 'webhook:stripe:evt_1PaymentSucceeded');
      assert.equal(event!.eventType, 'payment_intent.succeeded');
      assert.equal(event!.occurredAt, '2023-11-14T22:13:20.000Z');
      assert.deepEqual(event!.conversation, { id: 'payment_intent:pi_123', version: '1700000000' });
      assert.equal(event!.message, undefined);
      assert.equal(event!.replyTo, undefined);
      assert.equal((event!.payload as { livemode: boolean }).livemode, false);
    });

    it('has no conversation when the event’s object has no id', () => {
      const body = JSON.stringify({
        id: 'evt_2',
        object: 'event',
        type: 'balance.available',
        created: 1_700_000_000,
        data: { object: { object: 'balance', available: [] } },
      });
      const [event] = eventsOf(parse(body));
      assert.equal(event!.conversation, undefined);
    });
  });

  it('reads a thin event from an event destination (created as ISO 8601, related_object)', () => {
    const thin = JSON.stringify({
      id: 'evt_test_65R9Ijk8ZbeEM5RBHJ16R9Ijk8ZbeEM5RBHJ16',
      object: 'v2.core.event',
      type: 'v1.billing.meter.error_report_triggered',
      livemode: false,
      created: '2024-09-17T06:20:52.246Z',
      related_object: {
        id: 'mtr_test_61R9IjKD',
        type: 'billing.meter',
        url: '/v1/billing/meters/mtr_test_61R9IjKD',
      },
    });
    const [event] = eventsOf(parse(thin));
    assert.equal(event!.eventType, 'v1.billing.meter.error_report_triggered');
    assert.equal(event!.occurredAt, '2024-09-17T06:20:52.246Z');
    assert.equal(event!.conversation?.id, 'billing.meter:mtr_test_61R9IjKD');
  });

  describe('malformed bodies (400, no echo of the payload)', () => {
    it('rejects a created past the last date (9007199254740991)', () => {
      rejects(paymentSucceeded.replace('1700000000', String(Number.MAX_SAFE_INTEGER)), ['created']);
    });

    const rejects = (body: string, paths: string[]) =>
      assert.throws(
        () => parse(body),
        (err: unknown) => {
          assert.ok(err instanceof WebhookPayloadError);
          assert.deepEqual(err.issues.map((i) => i.path.join('.')).sort(), paths);
          assert.ok(!JSON.stringify([err.message, err.issues]).includes('opening hours'));
          return true;
        },
      );

    it('rejects an id that is not an evt_ id', () => {
      rejects(paymentSucceeded.replace('evt_1PaymentSucceeded', 'pi_123'), ['id']);
    });

    it('rejects an event without an id', () => {
      const body = JSON.parse(paymentSucceeded);
      delete body.id;
      rejects(JSON.stringify(body), ['id']);
    });

    it('rejects an event without type and created', () => {
      rejects(
        JSON.stringify({ id: 'evt_3', object: 'event', data: { object: { description: 'opening hours' } } }),
        ['created', 'type'],
      );
    });

    it('rejects a body that is not JSON', () => {
      rejects('opening hours', ['']);
    });
  });
});
