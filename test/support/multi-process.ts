// Past one machine: two receivers and two workers, each a separate `replyflow` process as a deployment
// runs them, against one Temporal and one PostgreSQL. Concurrent duplicates spread over both receivers,
// and second event ids for the same message, still give exactly one reply per business key. Run on the
// dev server (test/integration/multi-process.test.ts) and on the cluster (test/cluster/).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { freePort } from '../../src/ports';
import { signStandardWebhook } from '../../src/providers/standard-webhooks';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import type { EventResult } from '../../workflows/handle-event';
import { eventually } from './eventually';
import { TEST_ENCRYPTION_KEY } from './servers';
import { TEST_SANDBOX, uniqueId } from './system';
import { effectRows } from './workflows';

const { TaskQueueType, TaskQueueKind } = temporal.api.enums.v1;
const CONVERSATIONS = 6;
/** Copies of each event delivered to each receiver, all at once. */
const COPIES_PER_RECEIVER = 3;

interface RoleProcess {
  child: ChildProcess;
  /** The last lines it wrote to stderr, to explain a process that died. */
  stderr: () => string;
  exited: Promise<number | null>;
}

function spawnRole(role: 'receiver' | 'worker', env: Record<string, string>): RoleProcess {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin/replyflow.js'), role], {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stderr: () => stderr, exited };
}

async function stopRole(role: RoleProcess): Promise<void> {
  if (role.child.exitCode !== null || role.child.signalCode !== null) return;
  const killer = setTimeout(() => role.child.kill('SIGKILL'), 20_000);
  role.child.kill('SIGTERM');
  await role.exited;
  clearTimeout(killer);
}

/** Observes `probe` until it holds, stopping at once if a process died. */
async function until(what: string, roles: RoleProcess[], probe: () => Promise<boolean>) {
  await eventually(what, probe, {
    timeoutMs: 90_000,
    intervalMs: 200,
    abortIf: () => {
      const dead = roles.find((role) => role.child.exitCode !== null);
      return dead && `a replyflow process exited (${dead.child.exitCode}):\n${dead.stderr()}`;
    },
  });
}

/**
 * Registers the suite's hooks and test in the calling `describe`: `servers` gives the Temporal frontend
 * and the PostgreSQL (the one `database()` of ./servers also reads, for the effect rows).
 */
export function multiProcessSuite(servers: () => Promise<{ temporalAddress: string; databaseUrl: string }>) {
  const taskQueue = uniqueId('q-multi-');
  const secret = TEST_SANDBOX.webhookSecret;
  let receivers: RoleProcess[] = [];
  let workers: RoleProcess[] = [];
  let receiverUrls: string[] = [];
  let temporalClient: TemporalClient;

  before(async () => {
    const { temporalAddress, databaseUrl } = await servers();
    const ports = [await freePort(), await freePort()];
    receiverUrls = ports.map((port) => `http://127.0.0.1:${port}`);
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? os.tmpdir(),
      TEMPORAL_ADDRESS: temporalAddress,
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_SIZE: '5',
      REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      REPLYFLOW_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'replyflow-multi-')),
      TEMPORAL_TASK_QUEUE: taskQueue,
      SANDBOX_ENABLED: 'true',
      SANDBOX_WEBHOOK_SECRET: secret,
      SANDBOX_API_TOKEN: TEST_SANDBOX.apiToken,
      // Four processes share two cores with the servers: give durable starts room before a 503.
      WEBHOOK_START_DEADLINE_MS: '15000',
      LOG_LEVEL: 'error',
      REPLYFLOW_SDK_LOG_LEVEL: 'ERROR',
    };
    receivers = ports.map((port) => spawnRole('receiver', { ...env, PORT: String(port) }));
    // The sandbox target lives on the receivers and keeps its state in PostgreSQL: any one will do.
    // Two workers on one host need two metrics ports (in compose each container has its own).
    const metricsPorts = [await freePort(), await freePort()];
    workers = metricsPorts.map((metricsPort) =>
      spawnRole('worker', {
        ...env,
        SANDBOX_API_URL: `${receiverUrls[0]}/sandbox/api`,
        WORKER_METRICS_PORT: String(metricsPort),
      }),
    );
    temporalClient = await connectClient(temporalAddress, 'default', TEST_ENCRYPTION_KEY);
    const all = [...receivers, ...workers];
    for (const url of receiverUrls) {
      await until(`${url} is ready`, all, async () => (await fetch(`${url}/readyz`)).ok);
    }
    for (const taskQueueType of [
      TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    ]) {
      await until('both workers poll the task queue', all, async () => {
        const { pollers } = await temporalClient.connection.workflowService.describeTaskQueue({
          namespace: 'default',
          taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType,
        });
        return new Set(pollers.map((p) => p.identity)).size >= 2;
      });
    }
  });

  after(async () => {
    await Promise.all([...receivers, ...workers].map(stopRole));
    await temporalClient?.close();
  });

  const deliver = (receiverUrl: string, eventId: string, body: string) =>
    fetch(`${receiverUrl}/webhooks/sandbox`, {
      method: 'POST',
      headers: signStandardWebhook(secret, eventId, body),
      body,
    });

  it('replies exactly once per business key under concurrent duplicates on both receivers', async () => {
    const conversations = Array.from({ length: CONVERSATIONS }, () => uniqueId('c'));
    // Per conversation one message, delivered under two event ids (as Slack does for a mention), each
    // redelivered several times to each receiver, everything in flight at once.
    const deliveries = conversations.flatMap((conversationId) => {
      const body = JSON.stringify({
        type: 'message',
        conversationId,
        messageId: 'm1',
        text: 'what are your opening hours?',
        sentAt: new Date().toISOString(),
      });
      return [uniqueId('evt_'), uniqueId('evt_')].flatMap((eventId) =>
        receiverUrls.flatMap((url) =>
          Array.from({ length: COPIES_PER_RECEIVER }, () => ({ conversationId, eventId, url, body })),
        ),
      );
    });
    const answers = await Promise.all(
      deliveries.map(async (d) => {
        const response = await deliver(d.url, d.eventId, d.body);
        return {
          ...d,
          status: response.status,
          json: (await response.json()) as { status: string; workflowId: string },
        };
      }),
    );

    const eventIds = [...new Set(answers.map((a) => a.eventId))];
    for (const eventId of eventIds) {
      const mine = answers.filter((a) => a.eventId === eventId);
      assert.deepEqual(
        mine.map((a) => a.status).sort(),
        [200, 200, 200, 200, 200, 202],
        `one 202 and five 200 duplicates for ${eventId}`,
      );
      for (const answer of mine) assert.equal(answer.json.workflowId, `webhook:sandbox:${eventId}`);
    }

    for (const conversationId of conversations) {
      const workflowIds = [
        ...new Set(answers.filter((a) => a.conversationId === conversationId).map((a) => a.json.workflowId)),
      ];
      const results: EventResult[] = [];
      for (const id of workflowIds) results.push(await temporalClient.client.workflow.getHandle(id).result());
      assert.deepEqual(results.map((r) => r.state).sort(), ['duplicate', 'succeeded'], conversationId);

      const rows = await effectRows(`chat:sandbox:${conversationId}:m1:answer`);
      assert.equal(rows.length, 1, `one effect row for ${conversationId}`);
      assert.equal(rows[0].status, 'succeeded');

      // Read the target through the other receiver: the sandbox's state is shared in PostgreSQL.
      const page = (await (
        await fetch(`${receiverUrls[1]}/sandbox/api/conversations/${conversationId}/messages`)
      ).json()) as {
        messages: { author: string; reference: string | null }[];
      };
      const replies = page.messages.filter((m) => m.author === 'bot');
      assert.equal(replies.length, 1, `one reply at the target for ${conversationId}`);
      assert.equal(replies[0]!.reference, rows[0].id, 'the reply carries the effect id');
    }
  });
}
