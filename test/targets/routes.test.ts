// The route file (unit): validation that lists every problem with its path, key and body mapping from
// event fields, conditions, secrets from the environment, and the worker refusing to start on problems.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import type { Pool } from '../../src/db/pool';
import { RouteFileError, RouteMappingError } from '../../src/errors';
import type { InboundEvent } from '../../src/providers/types';
import { configuredPlans, loadRouteFile, parseRoutes } from '../../src/routes';
import { createTargets } from '../../src/targets';
import { createWorker } from '../../src/worker';
import { silentLogger, testConfig } from '../support/system';
import { stripeRefund } from './harness';

const VALID = `
endpoints:
  warehouse:
    url: https://warehouse.example/api/orders/{order}/reservations
    headers: { Authorization: "Bearer \${WAREHOUSE_TOKEN}" }
    idempotency: { header: X-Request-Key, format: plain }
    lookup: { url: "https://warehouse.example/api/reservations?reference={effectId}" }
    consistencyDelay: 5s
routes:
  - name: refunds
    when:
      provider: stripe
      eventType: [refund.created, refund.updated]
      fields: { data.object.status: [succeeded, pending] }
    businessKey: "order:{data.object.metadata.shop}:{data.object.metadata.order}:{operationId}"
    operationId: "refund:{data.object.id}"
    steps:
      - name: restock
        target: http:warehouse
        destination: { order: "{data.object.metadata.order}" }
        body: { amount: "{data.object.amount}", note: "refund {data.object.id} via {$provider}", lines: "{data.object.metadata}" }
`;

function problemsOf(text: string, format: 'json' | 'yaml' = 'yaml', env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseRoutes(text, format, env);
  } catch (err) {
    assert.ok(err instanceof RouteFileError);
    return err.problems;
  }
  return assert.fail('expected problems');
}

const refund = (status = 'succeeded'): InboundEvent => {
  const event = stripeRefund({ shop: 'shop1', order: 'o-9', refund: 're_42', amount: 700 });
  (event.payload as { data: { object: { status: string } } }).data.object.status = status;
  return event;
};

describe('route file', () => {
  it('maps an event to an effect: business key with operation id, destination, and a typed body', () => {
    const set = parseRoutes(VALID, 'yaml', { WAREHOUSE_TOKEN: 'w-secret' });
    const [plan, ...rest] = configuredPlans(set, refund());
    assert.equal(rest.length, 0);
    assert.equal(plan?.integration, 'refunds');
    assert.equal(plan?.businessKey, 'order:shop1:o-9:refund:re_42');
    assert.deepEqual(plan?.steps, [
      {
        name: 'restock',
        target: 'http:warehouse',
        destination: { order: 'o-9', operationId: 'refund:re_42' },
        content: {
          kind: 'payload',
          body: { amount: 700, note: 'refund re_42 via stripe', lines: { shop: 'shop1', order: 'o-9' } },
        },
      },
    ]);
    assert.deepEqual(set.endpoints.warehouse?.headers, { Authorization: 'Bearer w-secret' });
    assert.equal(set.endpoints.warehouse?.consistencyDelayMs, 5000);
  });

  it('gives another operation on the same order another key, and the same operation the same key', () => {
    const set = parseRoutes(VALID, 'yaml', { WAREHOUSE_TOKEN: 'x' });
    const second = stripeRefund({ shop: 'shop1', order: 'o-9', refund: 're_43', amount: 100 });
    const keys = [refund(), second, refund()].map((e) => configuredPlans(set, e)[0]?.businessKey);
    assert.deepEqual(keys, [
      'order:shop1:o-9:refund:re_42',
      'order:shop1:o-9:refund:re_43',
      'order:shop1:o-9:refund:re_42',
    ]);
  });

  it('matches on provider, event type and field conditions', () => {
    const set = parseRoutes(VALID, 'yaml', { WAREHOUSE_TOKEN: 'x' });
    assert.equal(configuredPlans(set, refund('pending')).length, 1, 'any of a list of values');
    assert.equal(configuredPlans(set, refund('failed')).length, 0);
    assert.equal(configuredPlans(set, { ...refund(), eventType: 'refund.updated' }).length, 1);
    assert.equal(configuredPlans(set, { ...refund(), eventType: 'charge.refunded' }).length, 0);
    assert.equal(configuredPlans(set, { ...refund(), provider: 'std.shop' }).length, 0);
  });

  it('names the route and the missing field when a matching event cannot be mapped', () => {
    const set = parseRoutes(VALID, 'yaml', { WAREHOUSE_TOKEN: 'x' });
    const event = refund();
    (event.payload as { data: { object: { metadata: object } } }).data.object.metadata = {};
    assert.throws(
      () => configuredPlans(set, event),
      (err: Error) =>
        err instanceof RouteMappingError &&
        err.message ===
          'route refunds: field data.object.metadata.shop is missing from the event (businessKey)' &&
        err.failure.field === 'data.object.metadata.shop',
    );
  });

  it('reads JSON like YAML', () => {
    const yaml = parseRoutes(VALID, 'yaml', { WAREHOUSE_TOKEN: 'x' });
    const json = parseRoutes(JSON.stringify(YAML.parse(VALID)), 'json', { WAREHOUSE_TOKEN: 'x' });
    assert.deepEqual(json, yaml);
  });

  it('lists every problem with its path, and no secret value', () => {
    const problems = problemsOf(
      `
endpoints:
  orders: { url: "ftp://orders.example/x", consistencyDelay: forever, headers: { Authorization: "Bearer \${ORDERS_TOKEN}" }, retries: 3 }
  crm: { url: "not a url", headers: { X-Key: "\${CRM_KEY}" } }
routes:
  - name: first
    when: { provider: stripe }
    businessKey: "x"
    steps: [{ name: a, target: http:orders, body: {}, text: hi }]
  - name: second
    when: { provider: stripe, eventType: charge.failed }
    businessKey: "order:{operationId}"
    steps:
      - { name: a, target: http:wharehouse, body: { a: "{bad path}" } }
      - { name: a, target: slack, reply: true }
  - name: second
    when: { provider: stripe, eventType: charge.failed }
    businessKey: "k"
    steps: []
`,
      'yaml',
      { CRM_KEY: 'crm-secret-value' },
    );
    assert.deepEqual(problems, [
      'endpoints.orders.retries: unknown field (fields here: url, method, headers, idempotency, idField, lookup, consistencyDelay)',
      'endpoints.crm.url: not a URL',
      'routes[0].when.eventType: expected an event type or a list of them',
      'routes[0].steps[0]: give exactly one of body, text or reply: true',
      `routes[1].businessKey: {operationId} needs the route's operationId (not set)`,
      'routes[1].steps[0].target: no endpoint named "wharehouse" (endpoints: orders, crm)',
      'routes[1].steps[0].body.a: {bad path} is not a field path such as {data.object.id}',
      'routes[1].steps[1].name: another step of this route is also named "a"',
      'routes[2].steps: Too small: expected array to have >=1 items',
      'routes[2].name: another route is also named "second"',
    ]);
    const more = problemsOf(
      `endpoints:\n  orders: { url: "ftp://o.example", consistencyDelay: forever, headers: { A: "\${ORDERS_TOKEN}" } }\n`,
    );
    assert.deepEqual(more, [
      'endpoints.orders.url: expected an http(s) URL',
      'endpoints.orders.consistencyDelay: expected a duration such as 500ms, 30s or 2m',
      'endpoints.orders.headers.A: environment variable ORDERS_TOKEN is not set',
    ]);
    assert.ok(!problems.join('\n').includes('crm-secret-value'));
  });

  it('says where a file is not YAML or JSON at all', () => {
    assert.match(problemsOf('routes: [', 'yaml')[0]!, /not valid YAML/);
    assert.match(problemsOf('{"routes": ', 'json')[0]!, /not valid JSON/);
    assert.deepEqual(problemsOf('routez: []'), ['routez: unknown field (did you mean "routes"?)']);
    assert.throws(
      () => loadRouteFile('/nonexistent/routes.yaml'),
      (err: Error) =>
        err instanceof RouteFileError && /cannot read the file \(ENOENT\)/.test(err.problems[0]!),
    );
  });

  it('registers one generic HTTP target per endpoint, with the capabilities the file declares', () => {
    const set = parseRoutes(VALID, 'yaml', { WAREHOUSE_TOKEN: 'x' });
    const targets = createTargets(testConfig({ SANDBOX_ENABLED: 'false' }), set.endpoints);
    assert.deepEqual([...targets.keys()], ['http:warehouse']);
    assert.deepEqual(targets.get('http:warehouse')?.capabilities, {
      idempotencyKey: true,
      lookup: true,
      consistencyDelayMs: 5000,
    });
  });

  it('registers Slack, Slack response URLs, LINE and GitHub only when their credentials are set', () => {
    const none = createTargets(testConfig({ SANDBOX_ENABLED: 'false' }));
    assert.equal(none.size, 0);
    const all = createTargets(
      testConfig({
        SANDBOX_ENABLED: 'false',
        SLACK_BOT_TOKEN: 'x',
        SLACK_SIGNING_SECRET: 's',
        LINE_CHANNEL_ACCESS_TOKEN: 'y',
        GITHUB_TOKEN: 'z',
      }),
    );
    assert.deepEqual([...all.keys()].sort(), ['github', 'line', 'slack', 'slack-response']);
  });

  it('stops the worker at start, before connecting, when routes name targets it has not configured', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-routes-'));
    const file = path.join(dir, 'routes.json');
    writeFileSync(
      file,
      JSON.stringify({
        routes: [
          {
            name: 'notify',
            when: { provider: 'stripe', eventType: 'charge.failed' },
            businessKey: 'notify:{data.object.id}',
            steps: [
              {
                name: 'tell',
                target: 'slack',
                destination: { channel: 'C1' },
                text: 'charge {data.object.id} failed',
              },
              {
                name: 'ticket',
                target: 'github',
                destination: { owner: 'a', repo: 'b', issueNumber: '1' },
                reply: true,
              },
            ],
          },
        ],
      }),
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
            'routes[0].steps[0].target: target "slack" is not configured (set SLACK_BOT_TOKEN, SLACK_CLIENT_ID or TENANTS_FILE)',
            'routes[0].steps[1].target: target "github" is not configured (set GITHUB_TOKEN, or GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY)',
          ].join('\n'),
    );
  });
});
