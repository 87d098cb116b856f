// Every log line of `replyflow start` names its role once: the receiver's parts (the codec server, the
// operator API) say which part they are in a field of their own, beside the role of the process part
// they run in. A key written twice is read differently by different tools (JSON.parse keeps the last),
// so the lines are read as text. Real dev server, PostgreSQL and HTTP; the worker bundles the real
// workflows.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { launch, type Running } from '../../src/launcher';
import { freePort } from '../../src/ports';
import { eventually } from '../support/eventually';
import { testOperator } from '../support/operators';
import { capturedLogger, sandboxRequest } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { TEST_SANDBOX, uniqueId } from '../support/system';

/** The top-level keys of one JSON line, in order and with repeats (which JSON.parse drops). */
function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      let end = i + 1;
      while (line[end] !== '"') end += line[end] === '\\' ? 2 : 1;
      if (depth === 1 && /^\s*:/.test(line.slice(end + 1))) keys.push(JSON.parse(line.slice(i, end + 1)));
      i = end;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return keys;
}

describe('log lines of replyflow start (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(180_000);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-logs-'));
  const log = capturedLogger('info');
  let running: Running | undefined;

  after(async () => {
    await running?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reads its lines as a key counter would: a repeat of any key is found', () => {
    assert.deepEqual(topLevelKeys('{"level":30,"role":"receiver","a":{"role":"x"},"role":"codec"}'), [
      'level',
      'role',
      'a',
      'role',
    ]);
    assert.deepEqual(topLevelKeys('{"msg":"a \\"role\\": b","list":["role:"]}'), ['msg', 'list']);
  });

  it('has exactly one role in every line: the worker, the receiver, its codec server and its operator API', async () => {
    const [server, db] = await Promise.all([devServer(), database()]);
    const config = loadConfig({
      TEMPORAL_ADDRESS: server.address,
      DATABASE_URL: db.url,
      REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      REPLYFLOW_DATA_DIR: dataDir,
      TEMPORAL_TASK_QUEUE: uniqueId('q-logs-'),
      SANDBOX_ENABLED: 'true',
      SANDBOX_WEBHOOK_SECRET: TEST_SANDBOX.webhookSecret,
      SANDBOX_API_TOKEN: TEST_SANDBOX.apiToken,
      WORKER_METRICS_PORT: '0',
      TURN_GATHER: '100ms',
      PORT: String(await freePort()),
    });
    running = await launch(config, log.logger, 'all');
    const url = running.urls.receiver;
    const event = sandboxRequest(config);
    assert.equal(
      (await fetch(`${url}${event.path}`, { method: 'POST', headers: event.headers, body: event.body }))
        .status,
      202,
    );
    const codecLogin = await fetch(`${url}/codec/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=not-a-token',
    });
    assert.equal(codecLogin.status, 401);
    const viewer = await testOperator([]);
    const notPermitted = await fetch(`${url}/operator/conversations/chat:sandbox:c1/close`, {
      method: 'POST',
      headers: { authorization: `Bearer ${viewer.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'only a viewer' }),
    });
    assert.equal(notPermitted.status, 403);
    await eventually(
      'the bot replied',
      async () =>
        (
          await db.pool.query(
            `SELECT 1 FROM sandbox_messages WHERE conversation_id = $1 AND author = 'bot'`,
            [event.conversationId],
          )
        ).rowCount,
      { until: (n) => n === 1 },
    );
    // The worker writes its line about the send after the reply's row: wait for it too.
    await eventually('the worker logged', async () =>
      log
        .raw()
        .split('\n')
        .some((l) => l.includes('"role":"worker"')),
    );

    const lines = log
      .raw()
      .split('\n')
      .filter((l) => l.trim() !== '');
    const repeated = lines.filter((l) => {
      const keys = topLevelKeys(l);
      return new Set(keys).size !== keys.length;
    });
    assert.deepEqual(repeated, [], 'no line carries a key twice');
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const roleOf = (msg: string) => {
      const line = parsed.find((p) => p.msg === msg);
      assert.ok(line, `a line "${msg}" in:\n${lines.join('\n')}`);
      return [line.role, line.component];
    };
    assert.deepEqual(roleOf('codec login refused'), ['receiver', 'codec']);
    assert.deepEqual(roleOf('operator API: not permitted'), ['receiver', 'operator-api']);
    assert.ok(
      parsed.some((p) => p.role === 'worker' && p.component === undefined),
      'the worker logged too, with one role',
    );
  });
});
