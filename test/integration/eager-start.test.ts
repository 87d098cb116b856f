// `replyflow start` runs the receiver and a worker in one process: the receiver starts each event's
// workflow on the worker's connection and asks for eager execution, so Temporal hands the run's first
// workflow task back with the start, to that worker, instead of queueing it for a poll. A receiver on
// its own starts through the task queue as before. Both kinds of start end in exactly one reply, and a
// redelivery is still a duplicate. Real dev server, PostgreSQL and HTTP; the worker bundles the real
// workflows.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { launch, type Running } from '../../src/launcher';
import { freePort } from '../../src/ports';
import { eventually } from '../support/eventually';
import { type SignedRequest, sandboxRequest } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { silentLogger, TEST_SANDBOX, uniqueId } from '../support/system';

describe('eager start: replyflow start hands an event to its own worker (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(180_000);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-eager-'));
  const running: Running[] = [];
  let env: Record<string, string>;

  before(async () => {
    const [server, db] = await Promise.all([devServer(), database()]);
    env = {
      TEMPORAL_ADDRESS: server.address,
      DATABASE_URL: db.url,
      REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      REPLYFLOW_DATA_DIR: dataDir,
      TEMPORAL_TASK_QUEUE: uniqueId('q-eager-'),
      SANDBOX_ENABLED: 'true',
      SANDBOX_WEBHOOK_SECRET: TEST_SANDBOX.webhookSecret,
      SANDBOX_API_TOKEN: TEST_SANDBOX.apiToken,
      WORKER_METRICS_PORT: '0',
      TURN_GATHER: '100ms',
      LOG_LEVEL: 'silent',
    };
  });
  after(async () => {
    for (const r of running.reverse()) await r.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (role: 'all' | 'receiver', extra: Record<string, string> = {}) => {
    const r = await launch(
      loadConfig({ ...env, PORT: String(await freePort()), ...extra }),
      silentLogger,
      role,
    );
    running.push(r);
    return r;
  };
  const post = (receiverUrl: string, request: SignedRequest) =>
    fetch(`${receiverUrl}${request.path}`, { method: 'POST', headers: request.headers, body: request.body });
  const starts = async (receiverUrl: string) => {
    const text = await (await fetch(`${receiverUrl}/metrics`)).text();
    const count = (dispatch: string) =>
      Number(
        text.match(
          new RegExp(`^replyflow_workflow_starts_total\\{dispatch="${dispatch}"\\} (\\d+)`, 'm'),
        )?.[1],
      );
    return { eager: count('eager'), queue: count('queue') };
  };
  const botReplies = async (conversationIds: string[]) => {
    const { pool } = await database();
    const { rows } = await pool.query<{ conversation_id: string; n: number }>(
      `SELECT conversation_id, count(*)::int AS n FROM sandbox_messages
        WHERE author = 'bot' AND conversation_id = ANY($1::text[]) GROUP BY conversation_id`,
      [conversationIds],
    );
    return new Map(rows.map((row) => [row.conversation_id, row.n]));
  };

  it('starts eagerly from replyflow start and through the queue from a receiver alone; one reply each', async () => {
    const all = await start('all');
    const config = loadConfig(env);
    // The worker replies through the sandbox API of the process it runs in.
    const events = Array.from({ length: 3 }, () => sandboxRequest(config));
    for (const event of events) assert.equal((await post(all.urls.receiver, event)).status, 202);
    // A redelivery of the first: a duplicate, not a second start.
    assert.equal((await post(all.urls.receiver, events[0]!)).status, 200);

    const alone = await start('receiver', { SANDBOX_API_URL: `${all.urls.receiver}/sandbox/api` });
    const queued = sandboxRequest(config);
    assert.equal((await post(alone.urls.receiver, queued)).status, 202);

    const conversations = [...events, queued].map((e) => e.conversationId);
    const replies = await eventually('a bot reply in each conversation', () => botReplies(conversations), {
      until: (seen) => conversations.every((c) => seen.get(c) === 1),
      timeoutMs: 60_000,
      describe: (seen) => JSON.stringify(Object.fromEntries(seen)),
    });
    assert.deepEqual(
      conversations.map((c) => replies.get(c)),
      [1, 1, 1, 1],
    );
    assert.deepEqual(await starts(all.urls.receiver), { eager: 3, queue: 0 });
    assert.deepEqual(await starts(alone.urls.receiver), { eager: 0, queue: 1 });
  });
});
