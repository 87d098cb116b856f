// The Standard Webhooks provider (`/webhooks/std/:source`): the libraries' test vector, requests
// signed by `standardwebhooks` broken one thing at a time, one secret per source, and the event key.
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { WebhookPayloadError, WebhookVerificationError } from '../../../src/providers/errors';
import { standardWebhooksProvider } from '../../../src/providers/standard-webhooks';
import { eventsOf, flipOneByte, requestContext } from './context';

const ORDERS_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SHIPPING_SECRET = 'whsec_c2hpcHBpbmctc291cmNlLXNlY3JldC0xMjM0';
const provider = standardWebhooksProvider({ orders: ORDERS_SECRET, shipping: SHIPPING_SECRET });

const orderPaid = JSON.stringify({
  type: 'order.paid',
  timestamp: '2026-11-30T10:00:00.000Z',
  data: { orderId: 'o-17', note: 'leave at the door' },
});

function signed(secret: string, id: string, body: string, at: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

const fromSource = (source: string, body: string | Buffer, headers: Record<string, string>) =>
  requestContext(body, headers, { params: { source } });

describe('Standard Webhooks provider', () => {
  describe('signature', () => {
    it("matches the libraries' test vector", () => {
      const at = new Date(1614265330 * 1000);
      const body = '{"test": 2432232314}';
      const headers = signed(ORDERS_SECRET, 'msg_p5jXN8AQM9LWM0D4loKWxJek', body, at);
      assert.equal(headers['webhook-signature'], 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    });

    // The library reads the clock itself, so "too old" and "too new" keep a margin over the 300 s.
    const valid = () => signed(ORDERS_SECRET, 'msg_1', orderPaid, new Date());
    const verify = (ctx: ReturnType<typeof requestContext>) => provider.verify(ctx);

    it('accepts a request signed by the standardwebhooks library, for its own source', async () => {
      await verify(fromSource('orders', orderPaid, valid()));
      await verify(
        fromSource('shipping', orderPaid, signed(SHIPPING_SECRET, 'msg_1', orderPaid, new Date())),
      );
    });

    it('accepts a signature list in which one signature matches (secret rotation)', async () => {
      const headers = valid();
      const other = signed(SHIPPING_SECRET, 'msg_1', orderPaid, new Date())['webhook-signature'];
      await verify(
        fromSource('orders', orderPaid, {
          ...headers,
          'webhook-signature': `${other} ${headers['webhook-signature']}`,
        }),
      );
    });

    const broken: [string, () => ReturnType<typeof requestContext>][] = [
      ['a changed body byte', () => fromSource('orders', flipOneByte(orderPaid), valid())],
      [
        'another secret',
        () => fromSource('orders', orderPaid, signed(SHIPPING_SECRET, 'msg_1', orderPaid, new Date())),
      ],
      ['another source’s request', () => fromSource('shipping', orderPaid, valid())],
      ['an unknown source', () => fromSource('nobody', orderPaid, valid())],
      [
        'a timestamp too old',
        () =>
          fromSource(
            'orders',
            orderPaid,
            signed(ORDERS_SECRET, 'msg_1', orderPaid, new Date(Date.now() - 310_000)),
          ),
      ],
      [
        'a timestamp too new',
        () =>
          fromSource(
            'orders',
            orderPaid,
            signed(ORDERS_SECRET, 'msg_1', orderPaid, new Date(Date.now() + 310_000)),
          ),
      ],
      ['a changed webhook-id', () => fromSource('orders', orderPaid, { ...valid(), 'webhook-id': 'msg_2' })],
      [
        'a missing signature header',
        () => fromSource('orders', orderPaid, { ...valid(), 'webhook-signature': '' }),
      ],
      [
        'a missing timestamp header',
        () => fromSource('orders', orderPaid, { ...valid(), 'webhook-timestamp': '' }),
      ],
      [
        'a timestamp that is not a number',
        () => fromSource('orders', orderPaid, { ...valid(), 'webhook-timestamp': '1e9' }),
      ],
    ];
    for (const [name, make] of broken) {
      it(`rejects ${name}`, async () => {
        await assert.rejects(async () => verify(make()), WebhookVerificationError);
      });
    }
  });

  describe('normalisation', () => {
    const parse = (source: string, id: string, body: string) =>
      provider.parse(fromSource(source, body, signed(ORDERS_SECRET, id, body, new Date())));

    it('names the provider std.<source> and keys the event on webhook-id', () => {
      const [event] = eventsOf(parse('orders', 'msg_2Abc', orderPaid));
      assert.equal(event!.provider, 'std.orders');
      assert.equal(event!.eventId, 'msg_2Abc');
      assert.equal(event!.workflowId, 'webhook:std.orders:msg_2Abc');
      assert.equal(event!.eventType, 'order.paid');
      assert.equal(event!.occurredAt, '2026-11-30T10:00:00.000Z');
      assert.equal(event!.replyTo, undefined);
      assert.deepEqual((event!.payload as { data: unknown }).data, {
        orderId: 'o-17',
        note: 'leave at the door',
      });
    });

    it('gives the same webhook-id from two sources two workflows', () => {
      const [orders] = eventsOf(parse('orders', 'msg_same', orderPaid));
      const [shipping] = eventsOf(parse('shipping', 'msg_same', orderPaid));
      assert.notEqual(orders!.workflowId, shipping!.workflowId);
    });

    const shapes: [string, unknown, string][] = [
      ['without type, timestamp or data', { note: 'leave at the door' }, 'unknown'],
      [
        'with a numeric timestamp',
        { type: 'user.created', timestamp: 1654012591835, data: { id: 'u1' } },
        'user.created',
      ],
      [
        'with created_at instead of timestamp',
        { type: 'email.sent', created_at: '2024-02-22T23:41:12Z', data: {} },
        'email.sent',
      ],
      ['that is an array', [{ type: 'a' }, { type: 'b' }], 'unknown'],
    ];
    for (const [shape, value, eventType] of shapes) {
      it(`accepts a verified body ${shape} (the spec only recommends the envelope)`, () => {
        const [event] = eventsOf(parse('orders', 'msg_s', JSON.stringify(value)));
        assert.equal(event!.workflowId, 'webhook:std.orders:msg_s');
        assert.equal(event!.eventType, eventType);
        assert.deepEqual(event!.payload, value);
      });
    }

    for (const source of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      it(`answers a source named ${source} as unknown (401), not with Object's member`, () => {
        const body = JSON.stringify({ type: 'x' });
        assert.throws(
          () => provider.verify(fromSource(source, body, signed(ORDERS_SECRET, 'msg_p', body, new Date()))),
          WebhookVerificationError,
        );
      });
    }

    it('leaves occurredAt unset when the payload timestamp is not a date', () => {
      const [event] = eventsOf(
        parse('orders', 'msg_3', orderPaid.replace('2026-11-30T10:00:00.000Z', 'soon')),
      );
      assert.equal(event!.occurredAt, undefined);
    });
  });

  describe('malformed requests (400, no echo of the payload)', () => {
    const rejects = (make: () => unknown, paths: string[]) =>
      assert.throws(make, (err: unknown) => {
        assert.ok(err instanceof WebhookPayloadError);
        assert.deepEqual(err.issues.map((i) => i.path.join('.')).sort(), paths);
        assert.ok(!JSON.stringify([err.message, err.issues]).includes('leave at the door'));
        return true;
      });
    const parse = (id: string, body: string) =>
      provider.parse(fromSource('orders', body, signed(ORDERS_SECRET, id, body, new Date())));

    it('rejects a webhook-id that cannot be part of a workflow id', () => {
      rejects(() => parse('msg 1/..', orderPaid), ['headers.webhook-id']);
    });

    it('rejects a body nested deeper than any real payload, before it reaches Temporal', () => {
      const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
      rejects(() => parse('msg_6', deep), ['']);
    });

    it('rejects a body that is not JSON', () => {
      rejects(() => parse('msg_5', 'leave at the door'), ['']);
    });
  });
});
