// Configured routes and the generic HTTP target through the whole event workflow (time-skipping
// server, real PostgreSQL): a route file maps Stripe events onto order, warehouse, ledger and CRM
// fakes over real HTTP. One effect per business key and operation id; multi-step effects resume at
// the first step not done; each endpoint's promise (key, lookup, neither) decides the unknown path.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Config } from '../../src/config';
import { updateVerdict } from '../../src/operator/decisions';
import type { InboundEvent } from '../../src/providers/types';
import { reprocessUpdate } from '../../workflows/messages';
import { FailedStep } from '../../workflows/search-attributes';
import { FakeOrders } from '../support/fakes/orders';
import { operatorDecides, sealFor, staffOperators } from '../support/operators';
import { timeSkipping } from '../support/servers';
import { FAST_POLICY, startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows, startEvent, waitForState } from '../support/workflows';
import { stripeRefund } from './harness';

const TOKEN_VARIABLE = 'REPLYFLOW_TEST_ORDERS_TOKEN';

function routeFile(urls: Record<'orders' | 'warehouse' | 'ledger' | 'crm', string>): string {
  return `
endpoints:
  orders:
    url: ${urls.orders}/orders
    headers: { Authorization: "Bearer \${${TOKEN_VARIABLE}}" }
  warehouse:
    url: ${urls.warehouse}/reservations
  ledger:            # no idempotency key, but a lookup by our reference
    url: ${urls.ledger}/entries
    idempotency: { honoured: false }
    lookup: { url: "${urls.ledger}/entries?reference={effectId}" }
    consistencyDelay: 2s
  crm:               # neither: an unknown outcome can only be held
    url: ${urls.crm}/notes
    idempotency: { honoured: false }

routes:
  - name: refund-to-orders
    when: { provider: stripe, eventType: refund.created, fields: { data.object.status: succeeded } }
    businessKey: "order:{data.object.metadata.shop}:{data.object.metadata.order}:{operationId}"
    operationId: "refund:{data.object.id}"
    steps:
      - name: register
        target: http:orders
        body: { order: "{data.object.metadata.order}", refund: "{data.object.id}", amount: "{data.object.amount}" }

  - name: checkout-to-warehouse
    when: { provider: stripe, eventType: checkout.session.completed }
    businessKey: "order:{data.object.metadata.shop}:{data.object.metadata.order}:{operationId}"
    operationId: "checkout:{data.object.id}"
    steps:
      - name: register
        target: http:orders
        body: { order: "{data.object.metadata.order}" }
      - name: reserve
        target: http:warehouse
        body: { order: "{data.object.metadata.order}", operation: "{operationId}" }

  - name: invoice-to-ledger
    when: { provider: stripe, eventType: invoice.paid }
    businessKey: "ledger:{data.object.id}"
    steps: [{ name: book, target: http:ledger, body: { invoice: "{data.object.id}" } }]

  - name: customer-to-crm
    when: { provider: stripe, eventType: customer.created }
    businessKey: "crm:{data.object.id}"
    steps: [{ name: note, target: http:crm, body: { customer: "{data.object.id}" } }]
`;
}

/** A Stripe event of `type` whose object is `object`. */
function stripeEvent(type: string, object: Record<string, unknown>): InboundEvent {
  const base = stripeRefund({ shop: 's', order: 'o', refund: 'r', amount: 0 });
  return { ...base, eventType: type, payload: { id: base.eventId, type, data: { object } } };
}

describe('configured routes and generic HTTP targets through the event workflow', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let orders: FakeOrders;
  let warehouse: FakeOrders;
  let ledger: FakeOrders;
  let crm: FakeOrders;
  let config: Config;
  let worker: { stop(): Promise<void> };

  before(async () => {
    env = await timeSkipping();
    orders = await new FakeOrders().start();
    warehouse = await new FakeOrders().start();
    ledger = await new FakeOrders().start();
    crm = await new FakeOrders().start();
    ledger.honoursKeys = false;
    crm.honoursKeys = false;
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-routes-')), 'routes.yaml');
    writeFileSync(
      file,
      routeFile({ orders: orders.url, warehouse: warehouse.url, ledger: ledger.url, crm: crm.url }),
    );
    process.env[TOKEN_VARIABLE] = 'orders-secret';
    config = testConfig({ ROUTES_FILE: file });
    worker = await startTestWorker({ address: env.address, config });
  });
  after(async () => {
    await worker?.stop();
    await Promise.all([orders, warehouse, ledger, crm].map((fake) => fake?.stop()));
    delete process.env[TOKEN_VARIABLE];
  });

  const start = (event: InboundEvent) => startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
  const run = async (event: InboundEvent) => (await start(event)).result();
  const ordersFor = (order: string) => orders.in('orders').filter((r) => r.body.order === order);

  it('makes two partial refunds two effects, and a redelivery of one of them none', async () => {
    const order = uniqueId('o');
    const first = stripeRefund({ shop: 'shop1', order, refund: uniqueId('re_'), amount: 500 });
    const second = stripeRefund({ shop: 'shop1', order, refund: uniqueId('re_'), amount: 300 });
    // Another event id for the first refund (e.g. refund.created and a resend of it): same operation.
    const again = {
      ...stripeRefund({ shop: 'shop1', order, refund: 'x', amount: 0 }),
      payload: first.payload,
    };
    const results = [await run(first), await run(second), await run(again)];
    assert.deepEqual(
      results.map((r) => r.state),
      ['succeeded', 'succeeded', 'duplicate'],
    );
    assert.deepEqual(
      ordersFor(order)
        .map((r) => r.body.amount)
        .sort(),
      [300, 500],
    );
    const rows = await effectRows(`order:shop1:${order}:refund:`);
    assert.equal(rows.length, 2);
    assert.ok(rows.every((r) => r.target === 'http:orders' && r.status === 'succeeded'));
    assert.equal(results[2]!.effects[0]!.ownerWorkflowId, first.workflowId);
    const posts = orders.posts('orders').filter((p) => p.body.order === order);
    assert.equal(posts.length, 2);
    assert.ok(posts.every((p) => p.headers.authorization === 'Bearer orders-secret'));
  });

  it('sends the key as the IETF draft quoted string and resends a lost response with it: the API replays', async () => {
    const order = uniqueId('o');
    orders.next('accept-then-drop');
    const event = stripeRefund({ shop: 'shop1', order, refund: uniqueId('re_'), amount: 100 });
    assert.equal((await run(event)).state, 'succeeded');
    const [row] = await effectRows(`order:shop1:${order}:`);
    const keys = orders
      .posts('orders')
      .filter((p) => p.body.order === order)
      .map((p) => p.headers['idempotency-key']);
    assert.deepEqual(keys, [`"${row.id}"`, `"${row.id}"`]);
    assert.equal(ordersFor(order).length, 1);
    assert.equal(row.external_id, ordersFor(order)[0]!.id);
  });

  it('retries later with the same key when the API says the first request is still in flight (409)', async () => {
    const order = uniqueId('o');
    orders.next({ status: 409, retryAfter: '5' });
    assert.equal(
      (await run(stripeRefund({ shop: 'shop1', order, refund: uniqueId('re_'), amount: 1 }))).state,
      'succeeded',
    );
    assert.equal(orders.posts('orders').filter((p) => p.body.order === order).length, 2);
    assert.equal(ordersFor(order).length, 1);
  });

  it('fails a key reused with another payload (422) without retrying, and says so', async () => {
    const order = uniqueId('o');
    orders.next({ status: 422, body: { title: 'Idempotency-Key is already used with another payload' } });
    const handle = await start(stripeRefund({ shop: 'shop1', order, refund: uniqueId('re_'), amount: 1 }));
    const failed = await waitForState(handle, 'failed');
    assert.equal(failed.lastErrorClass, 'permanent');
    assert.match(failed.lastError ?? '', /idempotency key reused with a different payload/);
    assert.match(failed.recommendedAction ?? '', /operation id/);
    assert.equal(orders.posts('orders').filter((p) => p.body.order === order).length, 1);
    await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'checked the route' });
    assert.equal((await handle.result()).state, 'discarded');
  });

  it('resumes a multi-step effect at the failed step: reprocess reserves inventory, never re-registers', async () => {
    const order = uniqueId('o');
    warehouse.next({ status: 400 });
    const event = stripeEvent('checkout.session.completed', {
      id: uniqueId('cs_'),
      metadata: { shop: 'shop2', order },
    });
    const handle = await start(event);
    const failed = await waitForState(handle, 'failed');
    assert.equal(failed.step, 'reserve');
    const { typedSearchAttributes } = await handle.describe();
    assert.equal(typedSearchAttributes.get(FailedStep), 'reserve');
    assert.equal(ordersFor(order).length, 1);
    assert.equal(warehouse.in('reservations').filter((r) => r.body.order === order).length, 0);

    await operatorDecides(handle, 'reprocess', { reason: 'warehouse fixed the SKU' });
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(orders.posts('orders').filter((p) => p.body.order === order).length, 1, 'step 1 not redone');
    const reserves = warehouse.posts('reservations').filter((p) => p.body.order === order);
    assert.equal(reserves.length, 2, 'step 2 ran again');
    assert.equal(reserves[0]!.headers['idempotency-key'], reserves[1]!.headers['idempotency-key']);
    const rows = await effectRows(`order:shop2:${order}:`);
    assert.deepEqual(
      rows.map((r) => [r.business_key.split('#')[1], r.status]),
      [
        ['register', 'succeeded'],
        ['reserve', 'succeeded'],
      ],
    );
  });

  it('settles a lost response by lookup where the API has no key but can be asked', async () => {
    const invoice = uniqueId('in_');
    ledger.next('accept-then-drop');
    ledger.lookupMisses = 1;
    assert.equal((await run(stripeEvent('invoice.paid', { id: invoice }))).state, 'succeeded');
    const [row] = await effectRows(`ledger:${invoice}`);
    assert.equal(row.status, 'succeeded');
    assert.equal(ledger.posts('entries').filter((p) => p.body.invoice === invoice).length, 1);
    assert.equal(ledger.to('/entries', 'GET').filter((r) => r.query.get('reference') === row.id).length, 2);
  });

  it('holds a lost response where the API can neither dedupe nor be asked', async () => {
    const customer = uniqueId('cus_');
    crm.next('accept-then-drop');
    const handle = await start(stripeEvent('customer.created', { id: customer }));
    const held = await waitForState(handle, 'held');
    assert.match(held.recommendedAction ?? '', /cannot be asked/);
    assert.equal(crm.posts('notes').filter((p) => p.body.customer === customer).length, 1);
    await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'seen in the CRM' });
    await handle.result();
  });

  it('asks for nothing when a condition does not match', async () => {
    const order = uniqueId('o');
    const event = stripeRefund({ shop: 'shop1', order, refund: uniqueId('re_'), amount: 1 });
    (event.payload as { data: { object: { status: string } } }).data.object.status = 'pending';
    const result = await run(event);
    assert.equal(result.state, 'succeeded');
    assert.match(result.reason ?? '', /no route/);
    assert.equal(orders.posts('orders').filter((p) => p.body.order === order).length, 0);
  });

  it('parks an event a matching route cannot map as failed, naming the route and field; a reprocess with the same routes fails it again', async () => {
    const sentBefore = orders.posts('orders').length;
    const event = stripeEvent('refund.created', { id: uniqueId('re_'), status: 'succeeded', metadata: {} });
    const handle = await start(event);
    const failed = await waitForState(handle, 'failed');
    const named = 'route refund-to-orders: field data.object.metadata.shop is missing from the event';
    assert.deepEqual(
      [failed.step, failed.lastErrorClass, failed.lastError, failed.recommendedAction, failed.hold],
      [
        'planEffects',
        'route_mapping',
        `${named} (businessKey)`,
        `${named}; fix ROUTES_FILE, restart the workers, then reprocess`,
        'plan:1',
      ],
    );
    assert.equal((await handle.describe()).typedSearchAttributes.get(FailedStep), 'planEffects');

    // The routes are unchanged: planned again, it fails again, at a new hold.
    const stale = sealFor(
      (await staffOperators()).asker.account,
      { workflowId: handle.workflowId, reason: 'fixed?' },
      {
        decision: 'reprocess',
        hold: 'plan:1',
      },
    );
    assert.equal(await operatorDecides(handle, 'reprocess', { reason: 'try again' }), 'Accepted: reprocess');
    const again = await waitForState(handle, 'failed');
    assert.equal(again.hold, 'plan:2');
    assert.equal(
      await updateVerdict(handle.executeUpdate(reprocessUpdate, { args: [stale] })),
      'Rejected: this decision answers hold plan:1, but the item is at hold plan:2: look at it again',
    );
    assert.equal(
      await operatorDecides(handle, 'resolve', { action: 'mark-sent', externalId: 'x', reason: 'sent?' }),
      'Rejected: nothing was planned, so nothing was sent: reprocess once the route is fixed, or discard',
    );
    assert.equal(
      await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'refund done by hand' }),
      'Accepted: discard',
    );
    const result = await handle.result();
    assert.equal(result.state, 'discarded');
    assert.equal(result.effects.length, 0);
    assert.equal(orders.posts('orders').length, sentBefore);
  });

  it('fails the workflow when nobody decides on a failed plan within the park time', async () => {
    const event = stripeEvent('refund.created', { id: uniqueId('re_'), status: 'succeeded', metadata: {} });
    const failure = await run(event).then(
      () => assert.fail('expected the workflow to fail'),
      (err: unknown) => err,
    );
    assert.ok(failure instanceof WorkflowFailedError);
    assert.match(
      failure.cause?.message ?? '',
      /route refund-to-orders: field data\.object\.metadata\.shop is missing/,
    );
    assert.equal((failure.cause as ApplicationFailure | undefined)?.type, 'EffectFailed');
    const { startTime, closeTime } = await env.client.workflow.getHandle(event.workflowId).describe();
    assert.ok(closeTime!.getTime() - startTime.getTime() >= FAST_POLICY.failedParkMs, 'waited the park time');
  });
});
