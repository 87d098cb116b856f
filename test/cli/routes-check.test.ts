// `replyflow routes check [FILE]`: every problem of a route file on its own line, exit 2; a one-line
// summary and exit 0 for a valid file; checked against this environment unless --file-only; no
// secret printed. Nothing is started: no server is reached.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliOffline } from './harness';

const DIR = mkdtempSync(path.join(os.tmpdir(), 'replyflow-routes-check-'));

function routeFile(name: string, text: string): string {
  const file = path.join(DIR, name);
  writeFileSync(file, text);
  return file;
}

const VALID = `
endpoints:
  orders:
    url: https://orders.example/api/orders
    headers: { Authorization: "Bearer \${ORDERS_TOKEN}" }
routes:
  - name: refund-to-orders
    when: { provider: stripe, eventType: [refund.created, refund.updated] }
    businessKey: "refund:{data.object.id}"
    steps: [{ name: register, target: http:orders, body: { refund: "{data.object.id}" } }]
  - name: failed-charges
    when: { provider: stripe, eventType: charge.failed }
    businessKey: "charge:{data.object.id}"
    steps: [{ name: tell, target: slack, destination: { channel: C1 }, text: "charge {data.object.id} failed" }]
`;

const WORKER_ENV = { ORDERS_TOKEN: 'orders-secret-value', SLACK_BOT_TOKEN: 'xoxb-secret-value' };

describe('replyflow routes check', () => {
  it('prints every problem on its own line with its path, and exits 2', async () => {
    const file = routeFile(
      'mistakes.yaml',
      `
routes:
  - name: refunds
    when: { provider: strip, eventType: refund.creatd }
    businessKey: "refund:{data.object.id}"
    steps: [{ name: register, target: slak, text: "refund {data.object.id}" }]
  - name: issues
    wehn: { provider: github, eventType: issues.opened }
    businessKey: "issue:{issue.number}"
    steps: [{ name: ack, target: sandbox, text: "thanks" }]
`,
    );
    const result = await cliOffline(['routes', 'check', file, '--file-only']);
    assert.equal(result.code, 2);
    assert.deepEqual(result.stdout.trimEnd().split('\n'), [
      'routes[0].when.provider: unknown provider "strip" (did you mean "stripe"?)',
      'routes[0].when.eventType: unknown stripe event type "refund.creatd" (did you mean "refund.created"?)',
      'routes[0].steps[0].target: unknown target "slak" (did you mean "slack"?)',
      'routes[1].wehn: unknown field (did you mean "when"?)',
      `${file}: 4 problems`,
    ]);
    assert.equal(result.stderr, '');
  });

  it('says a valid file is valid in one line, and exits 0', async () => {
    const file = routeFile('valid.yaml', VALID);
    const result = await cliOffline(['routes', 'check', file], WORKER_ENV);
    assert.deepEqual(
      [result.code, result.stdout, result.stderr],
      [0, `${file}: no problems (2 routes, 1 endpoint), checked against this environment\n`, ''],
    );
  });

  it('checks ROUTES_FILE when no file is given, and says what to give when neither is', async () => {
    const file = routeFile('from-env.yaml', VALID);
    const fromEnv = await cliOffline(['routes', 'check'], { ...WORKER_ENV, ROUTES_FILE: file });
    assert.deepEqual([fromEnv.code, fromEnv.stdout.startsWith(`${file}: no problems`)], [0, true]);
    const neither = await cliOffline(['routes', 'check']);
    assert.deepEqual(
      [neither.code, neither.stderr],
      [2, 'replyflow: no route file: give one (routes check FILE) or set ROUTES_FILE\n'],
    );
  });

  it('checks what this environment lacks, unless --file-only, and never prints a secret', async () => {
    const file = routeFile('needs-env.yaml', VALID);
    const bare = await cliOffline(['routes', 'check', file]);
    assert.equal(bare.code, 2);
    assert.deepEqual(bare.stdout.trimEnd().split('\n'), [
      'endpoints.orders.headers.Authorization: environment variable ORDERS_TOKEN is not set',
      'routes[1].steps[0].target: target "slack" is not configured (set SLACK_BOT_TOKEN, SLACK_CLIENT_ID or TENANTS_FILE)',
      `${file}: 2 problems`,
    ]);
    const fileOnly = await cliOffline(['routes', 'check', file, '--file-only']);
    assert.deepEqual(
      [fileOnly.code, fileOnly.stdout],
      [0, `${file}: no problems (2 routes, 1 endpoint), the file alone (--file-only)\n`],
    );
    const broken = routeFile('broken-with-env.yaml', `${VALID}  - name: refund-to-orders\n`);
    for (const argv of [
      ['routes', 'check', file],
      ['routes', 'check', broken],
    ]) {
      const result = await cliOffline(argv, WORKER_ENV);
      assert.ok(!`${result.stdout}${result.stderr}`.includes('secret-value'), argv.join(' '));
    }
  });

  it('counts the LINE target as there when TENANTS_FILE lists LINE channels, as the worker registers it', async () => {
    const file = routeFile(
      'to-line.yaml',
      `
routes:
  - name: tell-line
    when: { provider: stripe, eventType: charge.failed }
    businessKey: "charge:{data.object.id}"
    steps: [{ name: tell, target: line, destination: { to: U1 }, text: "charge failed" }]
`,
    );
    const tenants = routeFile(
      'tenants.yaml',
      `line:\n  - destination: U${'f'.repeat(32)}\n    channelSecretEnv: SHOP_SECRET\n    accessTokenEnv: SHOP_TOKEN\n`,
    );
    const without = await cliOffline(['routes', 'check', file]);
    assert.equal(without.code, 2);
    assert.match(
      without.stdout,
      /routes\[0\]\.steps\[0\]\.target: target "line" is not configured \(set LINE_CHANNEL_ACCESS_TOKEN, TENANTS_FILE or LINE_CHANNELS=tenants\)/,
    );
    for (const env of [{ TENANTS_FILE: tenants }, { LINE_CHANNELS: 'tenants' }] as Record<string, string>[]) {
      const result = await cliOffline(['routes', 'check', file], env);
      assert.equal(result.code, 0, result.stdout);
    }
  });

  it('reads JSON as the worker does, and names a file it cannot read', async () => {
    const json = routeFile(
      'routes.json',
      JSON.stringify({ routes: [{ name: 'r', when: { provider: 'line', eventType: 'mesage' } }] }),
    );
    const result = await cliOffline(['routes', 'check', json, '--file-only']);
    assert.deepEqual(result.stdout.trimEnd().split('\n'), [
      'routes[0].businessKey: Invalid input: expected string, received undefined',
      'routes[0].steps: Invalid input: expected array, received undefined',
      'routes[0].when.eventType: unknown line event type "mesage" (did you mean "message"?)',
      `${json}: 3 problems`,
    ]);
    const missing = await cliOffline(['routes', 'check', path.join(DIR, 'nothing-here.yaml')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stdout, /^\(file\): cannot read the file \(ENOENT\)\n/);
  });
});
