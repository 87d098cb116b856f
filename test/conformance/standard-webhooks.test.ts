// Standard Webhooks conformance: the spec's example payload and its signature test vector's body, and
// the body shapes real senders that sign by the standard use (numeric timestamps, none at all,
// `created_at`, no `type`, a batch), each signed by the `standardwebhooks` library, also with a
// second signature as during secret rotation: all answered 2xx, each with a workflow.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { signStandardWebhook } from '../../src/providers/standard-webhooks';
import {
  assertAll2xx,
  conformanceReceiver,
  type Delivery,
  report,
  SECRETS,
  STD_SOURCE,
  sendAll,
} from './harness';

/** Bodies as senders send them; the names say whose shape each follows. */
const SHAPES: [string, string][] = [
  [
    'the spec example (type, ISO timestamp, data)',
    '{"type": "contact.created", "timestamp": "2022-11-03T20:26:10.344522Z", "data": {"id": "1f81eb52-5198-4599-803e-771906343485", "type": "contact"}}',
  ],
  ["the libraries' test vector body", '{"test": 2432232314}'],
  [
    'a numeric timestamp in milliseconds',
    JSON.stringify({
      data: { id: 'user_29w83sxmDNGwOuEthce5gg56FcC' },
      object: 'event',
      type: 'user.created',
      timestamp: 1654012591835,
    }),
  ],
  [
    'created_at instead of timestamp',
    JSON.stringify({
      type: 'email.sent',
      created_at: '2024-02-22T23:41:12.126Z',
      data: { email_id: '56761188-7520-42d8-8898-ff6fc54ce618' },
    }),
  ],
  ['no timestamp at all', JSON.stringify({ type: 'order.created', data: { id: 'ord_1', amount: 1200 } })],
  [
    'no type (a hook with its own payload)',
    JSON.stringify({ user: { id: 'u1' }, email_data: { token: 't', email_action_type: 'signup' } }),
  ],
  [
    'a batch (JSON array)',
    JSON.stringify([
      { type: 'a.created', data: {} },
      { type: 'a.deleted', data: {} },
    ]),
  ],
  [
    'a numeric timestamp in seconds and nested data',
    JSON.stringify({
      type: 'invoice.paid',
      timestamp: 1700000000,
      data: { invoice: { lines: [{ amount: 1 }] } },
    }),
  ],
];

function delivery(
  name: string,
  body: string,
  headers = signStandardWebhook(SECRETS.standard, `msg_${randomUUID()}`, body),
): Delivery {
  return { name, path: `/webhooks/std/${STD_SOURCE}`, headers, body };
}

describe('conformance: Standard Webhooks (spec examples and real senders’ shapes through the receiver)', function () {
  this.timeout(120_000);
  const { receiver } = conformanceReceiver();

  it('answers every body shape 2xx, each with a workflow', async () => {
    const answers = await sendAll(
      receiver(),
      SHAPES.map(([name, body]) => delivery(name, body)),
    );
    report('Standard Webhooks', answers);
    assertAll2xx(answers);
    assert.deepEqual(
      answers
        .filter((a) => !(a.status === 202 && a.body.workflowId?.startsWith(`webhook:std.${STD_SOURCE}:msg_`)))
        .map((a) => a.delivery.name),
      [],
    );
  });

  it('accepts a signature list during secret rotation (an old secret’s signature first)', async () => {
    const body = SHAPES[0]![1];
    const id = `msg_${randomUUID()}`;
    const at = new Date();
    const headers = signStandardWebhook(SECRETS.standard, id, body, at);
    const old = new Webhook(`whsec_${Buffer.from('an-old-secret-rotated-out').toString('base64')}`).sign(
      id,
      at,
      body,
    );
    headers['webhook-signature'] = `${old} ${headers['webhook-signature']}`;
    const [answer] = await sendAll(receiver(), [delivery('rotation', body, headers)]);
    assert.equal(answer!.status, 202);
  });
});
