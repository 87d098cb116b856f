// Two LINE channels behind one replyflow (receiver, worker, dev server, PostgreSQL, the fake Messaging
// API): channel A from TENANTS_FILE, channel B added with `replyflow tenant add` after the receiver and
// the worker started (LINE_CHANNELS=tenants), no LINE_CHANNEL_* shortcut. Each webhook is verified with
// its destination's secret and answered once with its own access token (the fake checks which token
// each request carried); an unknown destination, or a request signed with the other channel's secret,
// is 401 with nothing recorded.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { run } from '../../src/cli/main';
import type { EventResult } from '../../workflows/run-view';
import { eventually } from '../support/eventually';
import { FakeLine } from '../support/fakes/line';
import { startTestReceiver, startTestSystem, type TestSystem, unreachablePool } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { signLineRequest } from '../support/signers';
import { testConfig, uniqueId } from '../support/system';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const channel = () => ({ destination: `U${hex(16)}`, secret: hex(16), token: `token-${hex(12)}` });

describe('Several LINE channels: TENANTS_FILE and `replyflow tenant add` (receiver, worker, dev server, PostgreSQL, fake LINE)', function () {
  this.timeout(120_000);
  const a = channel();
  const b = channel();
  /** The variables TENANTS_FILE names: this run's own, set for the receiver and the worker. */
  const vars = { secret: `LINE_IT_SECRET_${hex(4)}`, token: `LINE_IT_TOKEN_${hex(4)}` };
  let line: FakeLine;
  let system: TestSystem | undefined;

  before(async () => {
    const _server = await devServer();
    line = await new FakeLine(a.token).allowToken(b.token).start();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'line-channels-'));
    const file = path.join(dir, 'tenants.yaml');
    writeFileSync(
      file,
      `line:\n  - destination: ${a.destination}\n    channelSecretEnv: ${vars.secret}\n    accessTokenEnv: ${vars.token}\n    name: Shop A\n`,
    );
    process.env[vars.secret] = a.secret;
    process.env[vars.token] = a.token;
    const config = testConfig({
      TENANTS_FILE: file,
      LINE_CHANNELS: 'tenants',
      LINE_API_URL: line.url,
      SANDBOX_ENABLED: 'false',
    });
    system = await startTestSystem({ config });
  });
  after(async () => {
    await system?.stop();
    await line?.stop();
    delete process.env[vars.secret];
    delete process.env[vars.token];
  });

  /** `replyflow tenant add` as the admin runs it, the secrets in variables of its own shell. */
  async function addChannel(c: ReturnType<typeof channel>) {
    let stderr = '';
    const code = await run(
      [
        'tenant',
        'add',
        `line:${c.destination}`,
        '--channel-secret-env',
        'B_SECRET',
        '--access-token-env',
        'B_TOKEN',
      ],
      {
        env: {
          REPLYFLOW_ADMIN_DATABASE_URL: (await database()).adminUrl,
          REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
          B_SECRET: c.secret,
          B_TOKEN: c.token,
          LOG_LEVEL: 'silent',
        },
        stdout: { write: () => true },
        stderr: { write: (text: string) => (stderr += text) },
        confirm: async () => false,
        readSecret: async () => '',
      },
    );
    assert.equal(code, 0, stderr);
  }

  /** A person's message to the channel's bot, as LINE delivers it. */
  function message(destination: string, user: string) {
    const webhookEventId = uniqueId('01LC').toUpperCase();
    const { replyToken } = line.replyToken(user);
    const body = JSON.stringify({
      destination,
      events: [
        {
          type: 'message',
          mode: 'active',
          timestamp: Date.now(),
          source: { type: 'user', userId: user },
          webhookEventId,
          deliveryContext: { isRedelivery: false },
          replyToken,
          message: { id: uniqueId(''), type: 'text', quoteToken: 'q', text: 'what are your opening hours?' },
        },
      ],
    });
    return { webhookEventId, body };
  }
  const deliver = (body: string, secret: string) =>
    fetch(`${system!.receiver.url}/webhooks/line`, {
      method: 'POST',
      headers: signLineRequest(secret, body),
      body,
    });

  async function nothingRecorded(webhookEventId: string) {
    const workflowId = `webhook:line:${webhookEventId}`;
    await assert.rejects(
      system!.temporal.client.workflow.getHandle(workflowId).describe(),
      WorkflowNotFoundError,
    );
    const { rows } = await (await database()).pool.query(
      "SELECT 1 FROM events WHERE provider = 'line' AND event_id = $1",
      [webhookEventId],
    );
    assert.equal(rows.length, 0, 'no ledger row');
  }

  it('answers each channel once, with its own access token, a channel added while running included', async () => {
    // Before B is added, its destination is unknown: refused, nothing recorded.
    const early = message(b.destination, uniqueId('Uearly'));
    assert.equal((await deliver(early.body, b.secret)).status, 401);
    await nothingRecorded(early.webhookEventId);

    await addChannel(b);
    const users = { a: uniqueId('Ua'), b: uniqueId('Ub') };
    const toA = message(a.destination, users.a);
    const toB = message(b.destination, users.b);
    assert.equal((await deliver(toA.body, a.secret)).status, 202);
    // The receiver remembers an unknown destination for a moment: LINE's redelivery finds the new channel.
    await eventually(
      'the receiver finds channel B',
      async () => (await deliver(toB.body, b.secret)).status === 202,
    );
    // A redelivery of each is a duplicate: still one reply each.
    assert.equal((await deliver(toA.body, a.secret)).status, 200);
    assert.equal((await deliver(toB.body, b.secret)).status, 200);

    for (const { webhookEventId } of [toA, toB]) {
      const handle = system!.temporal.client.workflow.getHandle<() => Promise<EventResult>>(
        `webhook:line:${webhookEventId}`,
      );
      assert.equal((await handle.result()).state, 'succeeded');
    }
    assert.deepEqual(
      line.deliveredTo(users.a).map((d) => [d.via, d.accessToken]),
      [['reply', a.token]],
    );
    assert.deepEqual(
      line.deliveredTo(users.b).map((d) => [d.via, d.accessToken]),
      [['reply', b.token]],
    );
  });

  it('refuses an unknown destination with 401, and records nothing', async () => {
    const unknown = message(`U${hex(16)}`, uniqueId('Ux'));
    const res = await deliver(unknown.body, a.secret);
    assert.equal(res.status, 401);
    assert.ok(!(await res.text()).includes(a.secret));
    await nothingRecorded(unknown.webhookEventId);
  });

  it('answers 503 with Retry-After while the tenant store cannot be read, and records nothing', async () => {
    const pool = unreachablePool();
    const down = await startTestReceiver({
      config: testConfig({ LINE_CHANNELS: 'tenants', SANDBOX_ENABLED: 'false' }),
      temporalAddress: (await devServer()).address,
      pool,
    });
    try {
      const { webhookEventId, body } = message(b.destination, uniqueId('Ud'));
      const res = await fetch(`${down.url}/webhooks/line`, {
        method: 'POST',
        headers: signLineRequest(b.secret, body),
        body,
      });
      assert.equal(res.status, 503);
      assert.ok(Number(res.headers.get('retry-after')) > 0);
      await nothingRecorded(webhookEventId);
    } finally {
      await down.stop();
      await pool.end();
    }
  });

  it('refuses a request signed with the other channel’s secret with 401, and records nothing', async () => {
    const forged = message(a.destination, uniqueId('Uf'));
    assert.equal((await deliver(forged.body, b.secret)).status, 401);
    await nothingRecorded(forged.webhookEventId);
    const other = message(b.destination, uniqueId('Uf'));
    assert.equal((await deliver(other.body, a.secret)).status, 401);
    await nothingRecorded(other.webhookEventId);
  });
});
