// A route that cannot map an event, at run time, through the real receiver, dev server and
// PostgreSQL: a signed Stripe refund whose route maps a field the event lacks is acknowledged, parks
// as failed at step planEffects with the route and the field named (status, search attributes, the
// operator API's failed list, the alert, the ledger), and after the route file is fixed and the
// workers restarted, one reprocess sends it exactly once; a second reprocess is refused.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Alert } from '../../activities';
import type { Config } from '../../src/config';
import type { ReceiverHandle } from '../../src/receiver';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { statusQuery } from '../../workflows/messages';
import { FailedStep, LastErrorClass, RecommendedAction, ReplyState } from '../../workflows/search-attributes';
import { eventually } from '../support/eventually';
import { FakeOrders } from '../support/fakes/orders';
import { type TestOperator, testOperator } from '../support/operators';
import { startTestReceiver } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { signStripeEvent } from '../support/signers';
import { startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows, historyInputBytes, waitForState } from '../support/workflows';

const STRIPE_SECRET = 'whsec_mapping_failed_test_secret';

/** The route file; `orderField` is where the route reads the order number from. */
function routes(ordersUrl: string, orderField: string): string {
  return `
endpoints:
  orders: { url: ${ordersUrl}/orders }
routes:
  - name: refund-to-orders
    when: { provider: stripe, eventType: refund.created }
    businessKey: "order:{data.object.metadata.shop}:{${orderField}}:{operationId}"
    operationId: "refund:{data.object.id}"
    steps:
      - name: register
        target: http:orders
        body: { order: "{${orderField}}", refund: "{data.object.id}" }
`;
}

describe('a route that cannot map an event at run time: failed, named, alerted, reprocessed after a fix (receiver, dev server, PostgreSQL)', function () {
  this.timeout(180_000);
  let orders: FakeOrders;
  let routeFile: string;
  let receiver: ReceiverHandle;
  let temporal: TemporalClient;
  let worker: { stop(): Promise<void> } | undefined;
  let operator: TestOperator;
  const alerts: Alert[] = [];
  let config: Config;

  const startWorker = async () => {
    worker = await startTestWorker({
      address: (await devServer()).address,
      config,
      deps: { notify: async (alert) => void alerts.push(alert) },
    });
  };
  before(async () => {
    const server = await devServer();
    orders = await new FakeOrders().start();
    routeFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-mapping-')), 'routes.yaml');
    // The mistake: the order number is in metadata.order, the route reads metadata.order_ref.
    writeFileSync(routeFile, routes(orders.url, 'data.object.metadata.order_ref'));
    config = testConfig({ ROUTES_FILE: routeFile, STRIPE_WEBHOOK_SECRET: STRIPE_SECRET });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    receiver = await startTestReceiver({ config, temporalAddress: server.address });
    await startWorker();
    operator = await testOperator(['reprocess', 'discard']);
  });
  after(async () => {
    await worker?.stop();
    await receiver?.stop();
    await temporal?.close();
    await orders?.stop();
  });

  const api = async (route: string, init: RequestInit = {}) => {
    const response = await fetch(`${receiver.url}/operator${route}`, {
      ...init,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${operator.token}`,
        ...init.headers,
      },
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const byId = (workflowId: string) => `/workflows/${encodeURIComponent(workflowId)}`;

  it('parks the refund as failed naming the route and the field, and one reprocess after the fix sends it once', async () => {
    const eventId = uniqueId('evt_');
    const order = uniqueId('o');
    const body = JSON.stringify({
      id: eventId,
      object: 'event',
      type: 'refund.created',
      created: Math.floor(Date.now() / 1000),
      data: {
        object: {
          id: uniqueId('re_'),
          object: 'refund',
          status: 'succeeded',
          metadata: { shop: 's1', order },
          // A long note: the event is 100 kB, which a reprocess must not add to the history again.
          description: 'x'.repeat(100_000),
        },
      },
    });
    const answer = await fetch(`${receiver.url}/webhooks/stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signStripeEvent(STRIPE_SECRET, body) },
      body,
    });
    assert.equal(answer.status, 202);
    const workflowId = `webhook:stripe:${eventId}`;
    const handle = temporal.client.workflow.getHandle(workflowId);

    const failed = await waitForState(handle, 'failed');
    const named = 'route refund-to-orders: field data.object.metadata.order_ref is missing from the event';
    assert.equal(failed.step, 'planEffects');
    assert.equal(failed.lastErrorClass, 'route_mapping');
    assert.equal(failed.lastError, `${named} (businessKey)`);
    assert.equal(failed.recommendedAction, `${named}; fix ROUTES_FILE, restart the workers, then reprocess`);
    assert.equal(failed.hold, 'plan:1');
    assert.equal(failed.attempts, 0);

    const listed = await eventually(
      `${workflowId} is in the failed list`,
      async () => (await api('/work/failed')).body as unknown as { workflowId: string }[],
      { until: (items) => Array.isArray(items) && items.some((i) => i.workflowId === workflowId) },
    );
    const item = listed.find((i) => i.workflowId === workflowId) as Record<string, unknown>;
    assert.equal(item.failedStep, 'planEffects');
    assert.equal(item.lastErrorClass, 'route_mapping');
    assert.equal(item.integration, 'refund-to-orders');
    assert.equal(item.recommendedAction, failed.recommendedAction);
    const sa = (await handle.describe()).typedSearchAttributes;
    assert.equal(sa.get(ReplyState), 'failed');
    assert.equal(sa.get(FailedStep), 'planEffects');
    assert.equal(sa.get(LastErrorClass), 'route_mapping');
    assert.equal(sa.get(RecommendedAction), failed.recommendedAction);

    const shown = await api(byId(workflowId));
    assert.equal(shown.status, 200);
    assert.equal(
      (shown.body.workflow as { status: { lastError: string } }).status.lastError,
      failed.lastError,
    );

    const alert = alerts.find((a) => a.workflowId === workflowId);
    assert.deepEqual(
      alert && {
        kind: alert.kind,
        step: alert.step,
        errorClass: alert.errorClass,
        action: alert.recommendedAction,
      },
      { kind: 'failed', step: 'planEffects', errorClass: 'route_mapping', action: failed.recommendedAction },
    );
    const { pool } = await database();
    const ledger = await pool.query(
      'SELECT outcome, outcome_reason FROM events WHERE provider = $1 AND event_id = $2',
      ['stripe', eventId],
    );
    assert.deepEqual(ledger.rows[0], { outcome: 'failed', outcome_reason: failed.lastError });
    const delivered = await pool.query('SELECT count(*)::int AS n FROM alerts WHERE workflow_id = $1', [
      workflowId,
    ]);
    assert.equal(delivered.rows[0].n, 1);
    assert.equal(orders.posts('orders').length, 0, 'nothing is sent while the route cannot map');

    // A selection reprocess (`replyflow reprocess --integration … --dry-run`) would take it.
    const planned = await api('/reprocess/plan', {
      method: 'POST',
      body: JSON.stringify({ query: `WorkflowId = "${workflowId}"`, reason: 'route fixed' }),
    });
    assert.deepEqual(
      (planned.body.plan as { workflowId: string; verdict: string }[]).map((i) => [i.workflowId, i.verdict]),
      [[workflowId, 'reprocess']],
    );

    // The fix: the route reads the field the event has; the workers restart with it.
    await worker!.stop();
    writeFileSync(routeFile, routes(orders.url, 'data.object.metadata.order'));
    await startWorker();
    // The first query after a restart may go to the stopped worker's sticky queue and time out (the
    // operator API answers 503 then, and an operator asks again): wait until the new worker answers.
    await waitForState(handle, 'failed');

    const reprocessed = await api(`${byId(workflowId)}/reprocess`, {
      method: 'POST',
      body: JSON.stringify({ reason: 'route file fixed' }),
    });
    assert.equal(reprocessed.status, 200);
    assert.match(String(reprocessed.body.verdict), /^Accepted/);
    const result = (await handle.result()) as { state: string };
    assert.equal(result.state, 'succeeded');
    const sent = orders.in('orders').filter((r) => r.body.order === order);
    assert.equal(sent.length, 1);
    const rows = await effectRows(`order:s1:${order}:refund:`);
    assert.deepEqual(
      rows.map((r) => [r.status, r.target]),
      [['succeeded', 'http:orders']],
    );
    assert.equal(orders.posts('orders').filter((r) => r.body.order === order).length, 1);
    const after = await pool.query('SELECT outcome FROM events WHERE provider = $1 AND event_id = $2', [
      'stripe',
      eventId,
    ]);
    assert.equal(after.rows[0].outcome, 'succeeded');

    const again = await api(`${byId(workflowId)}/reprocess`, {
      method: 'POST',
      body: JSON.stringify({ reason: 'once more' }),
    });
    assert.equal(again.status, 400);
    assert.match(
      String(again.body.error),
      /closed \(completed, state succeeded\): nothing awaits a decision/,
    );
    assert.equal(orders.posts('orders').filter((r) => r.body.order === order).length, 1);
    assert.equal((await handle.query(statusQuery)).state, 'succeeded');
    // The reprocess admitted the event again as a task, which read it from the run
    // (activities/run-event.ts): the history holds the event once.
    const inputs = await historyInputBytes(handle);
    assert.ok(inputs.run > 100_000);
    assert.equal(inputs.tasks.admitEvent?.length, 1);
    assert.ok(inputs.tasks.admitEvent[0]! < 2_000, `admitEvent input: ${inputs.tasks.admitEvent[0]} bytes`);
  });
});
