// `replyflow routes try FILE --event sample.json`: a provider's own delivery body from the conformance
// corpora (a Stripe refund built from the stripe package's types, a GitHub issue from
// @octokit/webhooks-examples), read as the receiver reads it, against a route file: which routes
// match, the effects they would plan, the field a mapping lacks, and nothing sent.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import examples from '@octokit/webhooks-examples';
import { TypeExamples } from '../conformance/type-examples';
import { cliOffline } from './harness';

const DIR = mkdtempSync(path.join(os.tmpdir(), 'replyflow-routes-try-'));

function file(name: string, content: string | object): string {
  const at = path.join(DIR, name);
  writeFileSync(at, typeof content === 'string' ? content : JSON.stringify(content));
  return at;
}

let stripeTypes: TypeExamples | undefined;

/** The refund.created event of the stripe package's Stripe.Event union, as conformance builds it. */
function stripeRefundSample(object: Record<string, unknown>): object {
  // Reading the package's types takes seconds: once per run.
  stripeTypes ??= new TypeExamples(`import type Stripe from 'stripe';\nexport type Snapshot = Stripe.Event;`);
  const types = stripeTypes;
  const variant = types.variants('Snapshot').find((v) => types.literal(v, 'type') === 'refund.created')!;
  const event = types.example(variant) as { data: { object: Record<string, unknown> } } & Record<
    string,
    unknown
  >;
  Object.assign(event, { id: 'evt_1RefundSample', created: 1_767_225_600 });
  Object.assign(event.data.object, object);
  return event;
}

const issueOpened = examples
  .find((definition) => definition.name === 'issues')!
  .examples.find((example) => (example as { action?: string }).action === 'opened')!;

describe('replyflow routes try', function () {
  this.timeout(120_000);
  /** Counts every request: the endpoints of the route file point here, and nothing may arrive. */
  let requests = 0;
  let server: Server;
  let routes: string;
  let refund: object;

  before(async () => {
    server = createServer((_req, res) => {
      requests += 1;
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    routes = file(
      'routes.yaml',
      `
endpoints:
  orders:
    url: ${base}/orders
    headers: { Authorization: "Bearer \${ORDERS_TOKEN}" }
  warehouse:
    url: ${base}/orders/{order}/reservations
  tracker:
    url: ${base}/tickets
routes:
  - name: refund-to-orders
    when: { provider: stripe, eventType: [refund.created, refund.updated], fields: { data.object.status: succeeded } }
    businessKey: "order:{data.object.metadata.shop}:{data.object.metadata.order}:{operationId}"
    operationId: "refund:{data.object.id}"
    steps:
      - name: register
        target: http:orders
        body: { order: "{data.object.metadata.order}", amount: "{data.object.amount}" }
      - name: restock
        target: http:warehouse
        destination: { order: "{data.object.metadata.order}" }
        body: { operation: "{operationId}" }
  - name: charge-failed
    when: { provider: stripe, eventType: charge.failed }
    businessKey: "charge:{data.object.id}"
    steps: [{ name: tell, target: slack, destination: { channel: C1 }, text: "charge {data.object.id} failed" }]
  - name: issue-to-tracker
    when: { provider: github, eventType: issues.opened }
    businessKey: "ticket:{repository.full_name}:{issue.number}"
    steps: [{ name: open, target: http:tracker, body: { title: "{issue.title}", number: "{issue.number}" } }]
  - name: app-issues
    when: { provider: github, eventType: issues.opened }
    businessKey: "app:{installation.id}:{issue.number}"
    steps: [{ name: note, target: http:tracker, body: { installation: "{installation.id}" } }]
`,
    );
    refund = stripeRefundSample({
      id: 're_42',
      amount: 700,
      status: 'succeeded',
      metadata: { shop: 'shop1', order: 'o-9' },
    });
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  afterEach(() => assert.equal(requests, 0, 'routes try sent a request'));

  it('shows the routes a Stripe refund matches and the exact effects they plan, exit 0', async () => {
    const result = await cliOffline(['routes', 'try', routes, '--event', file('refund.json', refund)], {
      ORDERS_TOKEN: 'orders-secret-value',
    });
    assert.equal(result.stderr, '');
    assert.equal(result.code, 0);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    assert.deepEqual(result.stdout.trimEnd().split('\n'), [
      'stripe refund.created evt_1RefundSample, read as the receiver reads it (signature not checked)',
      'route refund-to-orders: matches',
      '  effect refund-to-orders, business key order:shop1:o-9:refund:re_42',
      '    step register: http:orders, business key order:shop1:o-9:refund:re_42#register',
      `      request POST ${base}/orders`,
      '      destination {"operationId":"refund:re_42"}',
      '      body {"order":"o-9","amount":700}',
      '    step restock: http:warehouse, business key order:shop1:o-9:refund:re_42#restock',
      `      request POST ${base}/orders/o-9/reservations`,
      '      destination {"order":"o-9","operationId":"refund:re_42"}',
      '      body {"operation":"refund:re_42"}',
      'route charge-failed: no match (the event type is refund.created, not charge.failed)',
      'route issue-to-tracker: no match (the provider is stripe, not github)',
      'route app-issues: no match (the provider is stripe, not github)',
      'default route: no chat reply for this event',
      '1 of 4 routes match: 1 effect, 2 steps; nothing was sent and nothing started',
    ]);
    assert.ok(!result.stdout.includes('secret-value'));
  });

  it('names the route and the field a refund lacks, as the run would fail, exit 1', async () => {
    const lacking = stripeRefundSample({ id: 're_43', status: 'succeeded', metadata: { shop: 'shop1' } });
    const result = await cliOffline(['routes', 'try', routes, '--event', file('lacking.json', lacking)]);
    assert.equal(result.code, 1);
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(
      lines[1],
      'route refund-to-orders: matches, but the event would fail: route refund-to-orders: field data.object.metadata.order is missing from the event (businessKey)',
    );
    assert.equal(
      lines.at(-1),
      '1 of 4 routes match; the event would park as failed at run time (step planEffects) and send nothing; nothing was sent and nothing started',
    );
  });

  it('says when a mapped value would make the send fail, as the target would refuse it, exit 1', async () => {
    const empty = stripeRefundSample({
      id: 're_45',
      status: 'succeeded',
      metadata: { shop: 's', order: '' },
    });
    const result = await cliOffline(['routes', 'try', routes, '--event', file('empty.json', empty)]);
    assert.equal(result.code, 1);
    const lines = result.stdout.split('\n');
    assert.ok(
      lines.includes(
        '      would fail when sent: http:warehouse: {order} is empty (it would change the path); check where the route takes order from: the event gave an empty value, not an id',
      ),
      result.stdout,
    );
    assert.ok(
      lines.includes(
        '1 of 4 routes match: 1 effect, 2 steps, a step would fail when sent; nothing was sent and nothing started',
      ),
    );
  });

  it('explains why a route does not match: a field condition', async () => {
    const pending = stripeRefundSample({
      id: 're_44',
      status: 'pending',
      metadata: { shop: 's', order: 'o' },
    });
    const result = await cliOffline(['routes', 'try', routes, '--event', file('pending.json', pending)]);
    assert.equal(result.code, 0);
    assert.ok(
      result.stdout.includes(
        'route refund-to-orders: no match (data.object.status is "pending", not "succeeded")\n',
      ),
      result.stdout,
    );
  });

  it('reads a GitHub issue with its event header: the default acknowledgement and the routes, exit 1 for the one lacking a field', async () => {
    const sample = file('issue.json', issueOpened);
    const result = await cliOffline([
      'routes',
      'try',
      routes,
      '--event',
      sample,
      '-H',
      'X-GitHub-Event: issues',
    ]);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    assert.equal(result.code, 1);
    assert.deepEqual(result.stdout.trimEnd().split('\n').slice(1), [
      'route refund-to-orders: no match (the provider is github, not stripe)',
      'route charge-failed: no match (the provider is github, not stripe)',
      'route issue-to-tracker: matches',
      '  effect issue-to-tracker, business key ticket:Codertocat/Hello-World:1',
      '    step open: http:tracker, business key ticket:Codertocat/Hello-World:1',
      `      request POST ${base}/tickets`,
      '      destination {}',
      '      body {"title":"Spelling error in the README file","number":1}',
      'route app-issues: matches, but the event would fail: route app-issues: field installation.id is missing from the event (businessKey)',
      'default route: matches',
      '  effect github, business key chat:github:Codertocat/Hello-World#1:issue:ack',
      '    step reply: github, business key chat:github:Codertocat/Hello-World#1:issue:ack',
      '      destination {"owner":"Codertocat","repo":"Hello-World","issueNumber":"1"}',
      '      text written by the responder when the event runs (not asked here)',
      '2 of 4 routes match; the event would park as failed at run time (step planEffects) and send nothing; nothing was sent and nothing started',
    ]);
    assert.match(
      result.stdout.split('\n')[0]!,
      /^github issues\.opened sample:[\w-]+, read as the receiver reads it/,
    );
  });

  it('answers a Slack mention by default and not a plain channel message, as the worker decides', async () => {
    const envelope = (text: string, extra: object = {}) => ({
      type: 'event_callback',
      team_id: 'T1',
      event_id: `Ev${text.length}`,
      event_time: 1_767_225_600,
      authorizations: [{ user_id: 'UBOT', is_bot: true }],
      event: { type: 'message', channel: 'C1', user: 'U1', text, ts: '1767225600.000100', ...extra },
    });
    const plain = await cliOffline([
      'routes',
      'try',
      routes,
      '--event',
      file('plain.json', envelope('lunch?')),
    ]);
    assert.ok(plain.stdout.includes('default route: no chat reply for this event'), plain.stdout);
    const mention = await cliOffline([
      'routes',
      'try',
      routes,
      '--event',
      file('mention.json', envelope('<@UBOT> opening hours?')),
    ]);
    assert.ok(mention.stdout.includes('default route: matches'), mention.stdout);
    const thread = await cliOffline([
      'routes',
      'try',
      routes,
      '--event',
      file('thread.json', envelope('and then?', { thread_ts: '1767225500.000100' })),
    ]);
    assert.ok(
      thread.stdout.includes("answered only if replyflow answered the thread's parent"),
      thread.stdout,
    );
  });

  it('asks for what it cannot tell, and refuses what the receiver would refuse, exit 2', async () => {
    const sample = file('issue-no-header.json', issueOpened);
    const noHeader = await cliOffline(['routes', 'try', routes, '--event', sample, '--provider', 'github']);
    assert.deepEqual(
      [noHeader.code, noHeader.stderr],
      [
        2,
        "replyflow: GitHub sends the event name in a header, not in the body: add --header 'X-GitHub-Event: <name>' (issues, pull_request, push, …)\n",
      ],
    );
    const unknown = await cliOffline(['routes', 'try', routes, '--event', sample]);
    assert.deepEqual(
      [unknown.code, unknown.stderr],
      [
        2,
        'replyflow: cannot tell which provider sent the sample: add --provider (slack, line, github, stripe, sandbox, std.<source>)\n',
      ],
    );
    const noId = file('no-id.json', {
      object: 'event',
      type: 'refund.created',
      created: 1,
      data: { object: {} },
    });
    const refused = await cliOffline(['routes', 'try', routes, '--event', noId, '--provider', 'stripe']);
    assert.deepEqual(
      [refused.code, refused.stderr],
      [
        2,
        'replyflow: the receiver would refuse this sample (400): id: Invalid input: expected string, received undefined\n',
      ],
    );
    const badFile = file('bad-routes.yaml', 'routes: [{ name: r }]');
    const invalid = await cliOffline(['routes', 'try', badFile, '--event', file('r.json', refund)]);
    assert.equal(invalid.code, 2);
    assert.match(invalid.stdout, /^routes\[0\]\.when: /);
    assert.match(invalid.stderr, /^replyflow: fix the route file first/);
  });
});
