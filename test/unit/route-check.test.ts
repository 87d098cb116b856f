// The route file check (unit): every problem of a file listed at once, one line each with its path;
// unknown providers, event types, targets and fields named with the likely fix; the checks against a
// worker's environment only when the environment is given; valid files read exactly as before.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import type { Pool } from '../../src/db/pool';
import { RouteFileError } from '../../src/errors';
import { launch } from '../../src/launcher';
import { checkRouteText, type RouteSet } from '../../src/routes';
import { closest, editDistance } from '../../src/suggest';
import { createWorker } from '../../src/worker';
import { silentLogger, testConfig } from '../support/system';

const problems = (text: string, options: Parameters<typeof checkRouteText>[2] = {}) =>
  checkRouteText(text, 'yaml', options).problems;

/** One route around `when` and `steps`, the rest valid. */
const route = (when: string, steps = '[{ name: note, target: sandbox, text: "hi" }]') =>
  `routes:\n  - name: r\n    when: ${when}\n    businessKey: "k:{id}"\n    steps: ${steps}\n`;

describe('route file check', () => {
  it('lists every problem of a file at once, each with its path and the fix', () => {
    const file = `
endpoints:
  orders:
    url: https://orders.example/api/orders/{order}
    idempotency: { header: Idempotency-Key, fromat: plain }
routes:
  - name: refunds
    when:
      provider: strip
      eventType: [refund.creatd, refund.updated]
    businessKey: "refund:{data.object.id}"
    steps:
      - name: register
        target: http:orders
        destination: { ordr: "{data.object.metadata.order}" }
        body: { amount: "{data.object.amount}" }
  - name: issues
    when: { provider: github, eventType: issues, feilds: { action: opened } }
    businesKey: "issue:{issue.number}"
    steps:
      - { name: ack, target: githb, text: "thanks" }
  - name: shop
    when: { provider: std.shop, eventType: order.paid }
    businessKey: "order:{data.id}"
    steps: [{ name: note, target: http:orders, destination: { order: "{data.id}" }, body: { a: 1 }, retries: 3 }]
`;
    assert.deepEqual(problems(file), [
      'endpoints.orders.idempotency.fromat: unknown field (did you mean "format"?)',
      'routes[0].when.provider: unknown provider "strip" (did you mean "stripe"?)',
      'routes[0].when.eventType[0]: unknown stripe event type "refund.creatd" (did you mean "refund.created"?)',
      'routes[0].steps[0].destination: endpoint "orders" needs {order} for its URL: add destination.order',
      'routes[0].steps[0].destination.ordr: endpoint "orders" has no {ordr} in its URLs (did you mean "order"?)',
      'routes[1].businesKey: unknown field (did you mean "businessKey"?)',
      'routes[1].when.feilds: unknown field (did you mean "fields"?)',
      'routes[1].when.eventType: unknown github event type "issues" (GitHub adds the action: issues.assigned, issues.closed, issues.deleted, … 16 in all)',
      'routes[1].steps[0].target: unknown target "githb" (did you mean "github"?)',
      'routes[2].steps[0].retries: unknown field (fields here: name, target, destination, body, text, reply)',
    ]);
  });

  it('suggests the provider and event type meant, and lists the choices when nothing is close', () => {
    assert.deepEqual(problems(route('{ provider: Slack, eventType: app_mention }')), [
      'routes[0].when.provider: unknown provider "Slack" (did you mean "slack"?)',
    ]);
    assert.deepEqual(problems(route('{ provider: mailgun, eventType: delivered }')), [
      'routes[0].when.provider: unknown provider "mailgun" (providers: slack, line, github, stripe, sandbox, std.<source>)',
    ]);
    assert.deepEqual(problems(route('{ provider: line, eventType: [mesage, postback, nothing_like_it] }')), [
      'routes[0].when.eventType[0]: unknown line event type "mesage" (did you mean "message"?)',
      'routes[0].when.eventType[2]: unknown line event type "nothing_like_it" (line sends: accountLink, activated, beacon, botResumed, botSuspended, deactivated, delivery, follow, join, leave, memberJoined, memberLeft, membership, message, module, postback, unfollow, unsend, videoPlayComplete)',
    ]);
    assert.deepEqual(problems(route('{ provider: sandbox, eventType: mesage }')), [
      'routes[0].when.eventType: unknown sandbox event type "mesage" (did you mean "message"?)',
    ]);
  });

  it('takes every event type the providers send, and any for a Standard Webhooks source', () => {
    for (const when of [
      '{ provider: stripe, eventType: [refund.created, v1.billing.meter.error_report_triggered] }',
      '{ provider: github, eventType: [issues.opened, push, repository_dispatch.deploy-now] }',
      '{ provider: slack, eventType: [app_mention, message, reaction_added] }',
      '{ provider: line, eventType: [message, postback, follow] }',
      '{ provider: sandbox, eventType: [message, handoff, close] }',
      '{ provider: std.shop, eventType: [order.paid, whatever-they-send] }',
    ])
      assert.deepEqual(problems(route(when)), [], when);
  });

  it('checks a Standard Webhooks source against STANDARD_WEBHOOKS_SECRETS when it is known, else its form', () => {
    const shop = route('{ provider: std.shpo, eventType: order.paid }');
    assert.deepEqual(problems(shop), []);
    assert.deepEqual(problems(shop, { standardWebhooksSources: ['shop', 'billing'] }), [
      'routes[0].when.provider: no Standard Webhooks source "shpo" in STANDARD_WEBHOOKS_SECRETS (did you mean "std.shop"?)',
    ]);
    assert.deepEqual(problems(route('{ provider: "std.my shop", eventType: order.paid }')), [
      'routes[0].when.provider: "std.my shop" is no Standard Webhooks source (std.<source>: letters, digits, - and _)',
    ]);
  });

  it('refuses unknown keys at every level, and does not repeat a field the typo left missing', () => {
    const file = `
endpoint: {}
endpoints:
  orders: { url: "https://o.example", lookup: { url: "https://o.example/{effectId}", idFeild: id } }
routes:
  - name: r
    when: { provider: stripe, eventTyp: refund.created }
    businessKey: "k:{id}"
    step: []
`;
    assert.deepEqual(problems(file), [
      'endpoint: unknown field (did you mean "endpoints"?)',
      'endpoints.orders.lookup.idFeild: unknown field (did you mean "idField"?)',
      'routes[0].step: unknown field (did you mean "steps"?)',
      'routes[0].when.eventTyp: unknown field (did you mean "eventType"?)',
    ]);
  });

  it('checks against a worker environment only when given one: variables, targets, sources', () => {
    const file = `
endpoints:
  orders: { url: "https://o.example", headers: { Authorization: "Bearer \${ORDERS_TOKEN}" } }
routes:
  - name: r
    when: { provider: stripe, eventType: charge.failed }
    businessKey: "k:{data.object.id}"
    steps:
      - { name: tell, target: slack, destination: { channel: C1 }, text: "failed" }
      - { name: book, target: http:orders, body: {} }
`;
    assert.deepEqual(problems(file), []);
    const worker = { env: {}, targetConfigured: (target: string) => target === 'github' };
    assert.deepEqual(problems(file, worker), [
      'endpoints.orders.headers.Authorization: environment variable ORDERS_TOKEN is not set',
      'routes[0].steps[0].target: target "slack" is not configured (set SLACK_BOT_TOKEN, SLACK_CLIENT_ID or TENANTS_FILE)',
    ]);
    const set = checkRouteText(file, 'yaml', { env: { ORDERS_TOKEN: 'secret-value' } }).set;
    assert.equal(set?.endpoints.orders?.headers.Authorization, 'Bearer secret-value');
  });

  it('reads a valid file exactly as before: the example of docs/targets.md', () => {
    const docs = readFileSync(path.join(__dirname, '..', '..', 'docs', 'targets.md'), 'utf8');
    const example = /## Routes \(`ROUTES_FILE`\)[\s\S]*?```yaml\n([\s\S]*?)```/.exec(docs)![1]!;
    const checked = checkRouteText(example, 'yaml', { env: { ORDERS_TOKEN: 't' } });
    assert.deepEqual(checked.problems, []);
    const expected: RouteSet = {
      endpoints: {
        orders: {
          url: 'https://orders.example/api/orders',
          method: 'POST',
          headers: { Authorization: 'Bearer t' },
          idempotency: { header: 'Idempotency-Key', format: 'quoted', honoured: true },
          idField: 'id',
          consistencyDelayMs: 0,
        },
        warehouse: {
          url: 'https://wms.example/v1/orders/{order}/reservations',
          method: 'POST',
          headers: {},
          idempotency: { header: 'Idempotency-Key', format: 'quoted', honoured: true },
          idField: 'id',
          lookup: { url: 'https://wms.example/v1/reservations?reference={effectId}', idField: 'id' },
          consistencyDelayMs: 5000,
        },
      },
      routes: [
        {
          name: 'refund-to-orders',
          provider: 'stripe',
          eventTypes: ['refund.created', 'refund.updated'],
          fields: { 'data.object.status': ['succeeded'] },
          integration: 'refund-to-orders',
          businessKey: 'order:{data.object.metadata.shop}:{data.object.metadata.order}:{operationId}',
          operationId: 'refund:{data.object.id}',
          steps: [
            {
              name: 'register',
              target: 'http:orders',
              destination: {},
              body: { order: '{data.object.metadata.order}', amount: '{data.object.amount}' },
            },
            {
              name: 'restock',
              target: 'http:warehouse',
              destination: { order: '{data.object.metadata.order}' },
              body: { operation: '{operationId}' },
            },
          ],
        },
      ],
    };
    assert.deepEqual(checked.set, expected);
  });

  it('stops a worker at start with the file problems and its missing targets in one list', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-check-')), 'routes.yaml');
    writeFileSync(
      file,
      route('{ provider: strip, eventType: charge.failed }', '[{ name: t, target: slack, text: x }]'),
    );
    await assert.rejects(
      createWorker({
        config: testConfig({ ROUTES_FILE: file }),
        pool: {} as Pool,
        temporalAddress: '127.0.0.1:1',
        encryptionKey: '',
        logger: silentLogger,
      }),
      (err: Error) =>
        err instanceof RouteFileError &&
        err.problems.join('\n') ===
          [
            'routes[0].when.provider: unknown provider "strip" (did you mean "stripe"?)',
            'routes[0].steps[0].target: target "slack" is not configured (set SLACK_BOT_TOKEN, SLACK_CLIENT_ID or TENANTS_FILE)',
          ].join('\n'),
    );
  });

  it('refuses `replyflow start` before it connects to PostgreSQL or Temporal', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-check-data-'));
    const file = path.join(dataDir, 'routes.yaml');
    writeFileSync(file, route('{ provider: stripe, eventType: refund.creatd }'));
    // Closed ports: a start that got as far as connecting would fail with another error.
    const config = loadConfig({
      REPLYFLOW_DATA_DIR: dataDir,
      ROUTES_FILE: file,
      DATABASE_URL: 'postgres://replyflow@127.0.0.1:1/replyflow',
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      LOG_LEVEL: 'silent',
    });
    await assert.rejects(
      launch(config, silentLogger, 'all'),
      (err: Error) => err instanceof RouteFileError && /refund\.creatd/.test(err.problems.join('\n')),
    );
  });
});

describe('suggestions', () => {
  it('counts a swap of neighbours as one edit', () => {
    assert.deepEqual(
      [
        ['refund', 'refnud'],
        ['strip', 'stripe'],
        ['', 'abc'],
        ['kitten', 'sitting'],
      ].map(([a, b]) => editDistance(a!, b!)),
      [1, 1, 3, 3],
    );
  });

  it('offers the closest names, ignoring case, and none when nothing is near', () => {
    assert.deepEqual(closest('strip', ['slack', 'stripe', 'line']), ['stripe']);
    assert.deepEqual(closest('GITHUB', ['github']), ['github']);
    assert.deepEqual(closest('mailgun', ['slack', 'stripe', 'line']), []);
    assert.deepEqual(closest('lin', ['line', 'link', 'lint', 'lino']), ['line', 'link', 'lint']);
  });
});
