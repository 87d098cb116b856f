// Alerts over real HTTP: held, reminder and failed alerts reach a webhook receiver (Slack incoming
// webhook style) and the log, with the recommended action and a link to the workflow in the Web UI,
// and never the message text; a webhook that fails once still gets the alert. The worker's metrics
// count each alert delivered, by kind, and each failed delivery.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNotifier, workflowUrl } from '../../src/alerts';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { createWorkerMetrics, type WorkerMetrics } from '../../src/worker-metrics';

import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import { operatorDecides } from '../support/operators';
import { capturedLogger, counterValue } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { FAST_POLICY, sandboxEvent, testConfig, uniqueId, withWorker } from '../support/system';
import { startEvent, waitForState } from '../support/workflows';

const UI = 'http://127.0.0.1:8233';

/** A webhook receiver that records every alert and can fail the next deliveries with 500. */
class AlertHook {
  readonly received: Record<string, unknown>[] = [];
  readonly contentTypes: string[] = [];
  failNext = 0;
  private server?: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk) => {
        raw += chunk;
      });
      req.on('end', () => {
        if (this.failNext > 0) {
          this.failNext -= 1;
          res.writeHead(500).end('try again');
          return;
        }
        this.contentTypes.push(String(req.headers['content-type']));
        this.received.push(JSON.parse(raw) as Record<string, unknown>);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Waits until an alert of `kind` (and level) for the workflow arrived; polls what was recorded. */
  alert(workflowId: string, kind: string, level = 0) {
    return eventually(
      `a ${kind} alert (level ${level}) for ${workflowId} arrives`,
      () => this.received.find((a) => a.workflowId === workflowId && a.kind === kind && a.level === level),
      { timeoutMs: 60_000 },
    );
  }
}

describe('alerts: held, reminder and failed work to the alert webhook and the log, never message text', function () {
  this.timeout(180_000);
  let hook: AlertHook;
  let fake: FakeTarget;
  let temporal: TemporalClient;
  const log = capturedLogger();
  const config = testConfig({ TEMPORAL_UI_URL: UI });

  before(async () => {
    const [server] = await Promise.all([devServer(), database()]);
    [hook, fake] = await Promise.all([new AlertHook().start(), new FakeTarget().start()]);
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
  });
  after(async () => {
    await Promise.all([hook?.stop(), fake?.stop(), temporal?.close()]);
  });

  /** Runs `fn` with a worker on the suite's queue, whose metrics it is given. */
  const run = async <T>(fn: (metrics: WorkerMetrics) => Promise<T>) => {
    const [server, db] = await Promise.all([devServer(), database()]);
    const workerConfig = { ...config, SANDBOX_API_URL: fake.url, ALERT_WEBHOOK_URL: hook.url };
    const metrics = createWorkerMetrics(db.pool);
    return withWorker(
      {
        address: server.address,
        config: workerConfig,
        deps: {
          metrics,
          // Reminders every 1.5 s instead of 15 min, so the escalation is seen within the test.
          policy: { ...FAST_POLICY, reminderScheduleMs: [1500, 1500] },
          notify: createNotifier({
            logger: log.logger,
            webhookUrl: workerConfig.ALERT_WEBHOOK_URL,
            temporalUiUrl: workerConfig.TEMPORAL_UI_URL,
            namespace: workerConfig.TEMPORAL_NAMESPACE,
          }),
        },
      },
      () => fn(metrics),
    );
  };

  /** The alerts a worker counted as delivered and as failed, by kind, from its scrape. */
  const alertCounts = async (metrics: WorkerMetrics) => {
    const text = await metrics.registry.metrics();
    const count = (name: string) =>
      Object.fromEntries(
        (['held', 'failed', 'reminder'] as const).map((kind) => [kind, counterValue(text, name, { kind })]),
      );
    return { delivered: count('replyflow_alerts_total'), failed: count('replyflow_alert_failures_total') };
  };

  const assertSafe = (alert: Record<string, unknown>, secret: string, workflowId: string) => {
    const link = workflowUrl(UI, 'default', workflowId);
    assert.equal(alert.link, link);
    assert.match(
      String(alert.text),
      new RegExp(`Recommended: ${String(alert.recommendedAction).slice(0, 20)}`),
    );
    assert.ok(String(alert.text).includes(link), 'the text a chat shows carries the link');
    assert.ok(!JSON.stringify(alert).includes(secret), 'no message text in the alert');
  };

  it('alerts a held item with its recommended action and link, escalates with reminders, and retries a failing webhook', async () => {
    const secret = `my card number is ${uniqueId('')}`;
    const event = sandboxEvent({ conversationId: uniqueId('c'), target: 'sandbox-blind', text: secret });
    fake.next('accept-then-drop');
    hook.failNext = 1;
    await run(async (metrics) => {
      const handle = await startEvent(temporal.client, config.TEMPORAL_TASK_QUEUE, event);
      const held = await waitForState(handle, 'held', 60_000);
      const alert = await hook.alert(handle.workflowId, 'held');
      assert.equal(alert.businessKey, held.businessKey);
      assert.equal(alert.recommendedAction, held.recommendedAction);
      assert.match(String(alert.recommendedAction), /mark-sent/);
      assert.equal(alert.errorClass, 'unknown');
      assertSafe(alert, secret, handle.workflowId);
      assert.equal(hook.contentTypes[0], 'application/json');

      const reminder = await hook.alert(handle.workflowId, 'reminder', 1);
      assert.match(String(reminder.text), /reminder #1/);
      assertSafe(reminder, secret, handle.workflowId);

      // Counted once delivered: the held alert once, after the one delivery the webhook failed.
      const counts = await eventually('the worker counts the reminder', () => alertCounts(metrics), {
        until: (c) => c.delivered.reminder! >= 1,
      });
      const reminders = hook.received.filter(
        (a) => a.workflowId === handle.workflowId && a.kind === 'reminder',
      );
      assert.deepEqual(counts.failed, { held: 1, failed: 0, reminder: 0 });
      assert.equal(counts.delivered.held, 1);
      assert.equal(counts.delivered.failed, 0);
      assert.ok(counts.delivered.reminder! <= reminders.length, 'no reminder counted that did not arrive');

      await operatorDecides(handle, 'resolve', {
        action: 'discard',
        reason: 'test over',
      });
      assert.equal((await handle.result()).state, 'discarded');
    });
    const lines = log
      .lines()
      .filter((l) => (l.alert as { workflowId?: string })?.workflowId === event.workflowId);
    assert.ok(lines.some((l) => (l.alert as { kind: string }).kind === 'held'));
    assert.ok(
      lines.every((l) => (l.alert as { link: string }).link === workflowUrl(UI, 'default', event.workflowId)),
    );
    assert.ok(!log.raw().includes(secret), 'no message text in the log');
  });

  it('alerts failed work with the fix the target adapter gives', async () => {
    const secret = `please cancel order ${uniqueId('')}`;
    const event = sandboxEvent({ conversationId: uniqueId('c'), text: secret });
    fake.next({ status: 404 });
    await run(async (metrics) => {
      const handle = await startEvent(temporal.client, config.TEMPORAL_TASK_QUEUE, event);
      await waitForState(handle, 'failed', 60_000);
      const alert = await hook.alert(handle.workflowId, 'failed');
      const counts = await eventually('the worker counts the failed alert', () => alertCounts(metrics), {
        until: (c) => c.delivered.failed === 1,
      });
      assert.deepEqual(counts, {
        delivered: { held: 0, failed: 1, reminder: 0 },
        failed: { held: 0, failed: 0, reminder: 0 },
      });
      assert.equal(alert.recommendedAction, 'check the destination (URL, channel, issue)');
      assert.equal(alert.errorClass, 'permanent');
      assertSafe(alert, secret, handle.workflowId);
      await operatorDecides(handle, 'resolve', {
        action: 'discard',
        reason: 'test over',
      });
      assert.equal((await handle.result()).state, 'discarded');
    });
    assert.ok(!log.raw().includes(secret), 'no message text in the log');
  });
});
