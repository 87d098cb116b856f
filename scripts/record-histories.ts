// Records the histories that test/workflow/replay.test.ts replays: one per path of the event workflow
// and one of a conversation's turns workflow. Run it after a deliberate, compatible workflow change:
//   npm run record-histories
// (then commit test/histories/*.json). Histories of older workflow versions stay as v<N>-*.json: the
// replay test keeps proving that workflows started by earlier releases still run. Uses the same real
// servers and fakes as the tests.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { createTenantCredentialStore } from '../src/db/tenant-credentials';
import { connectClient, payloadCodec } from '../src/temporal/client';
import { startDevServer } from '../src/temporal/dev-server';
import { eventually } from '../test/support/eventually';
import { FakeTarget } from '../test/support/fake-target';
import { FakeOrders } from '../test/support/fakes/orders';
import { decide, sealFor, testOperator } from '../test/support/operators';
import { database, devServer, stopServers, TEST_ENCRYPTION_KEY } from '../test/support/servers';
import { sandboxEvent, startTestWorker, testConfig, uniqueId } from '../test/support/system';
import { temporalCli } from '../test/support/temporal-cli';
import { startEvent, waitForState } from '../test/support/workflows';
import { stripeRefund } from '../test/targets/harness';
import type { handleEvent } from '../workflows';
import { resolveSignal, statusQuery, tenantRevokedWorkflowId } from '../workflows/messages';
import { Tenant } from '../workflows/search-attributes';

const HISTORIES = path.resolve(__dirname, '..', 'test', 'histories');

async function main() {
  const server = await devServer();
  const fake = await new FakeTarget().start();
  const config = testConfig({ SANDBOX_API_URL: fake.url });
  const worker = await startTestWorker({ address: server.address, config });
  const { client, close } = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
  const start = (event: Parameters<typeof startEvent>[2]) =>
    startEvent(client, config.TEMPORAL_TASK_QUEUE, event);
  const save = async (name: string, workflowId: string) => {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    // The workflow id goes with the history: workflow code may depend on it (turn request ids do).
    writeFileSync(path.join(HISTORIES, `${name}.json`), `${JSON.stringify({ workflowId, history })}\n`);
    console.log(`recorded ${name}`);
  };
  try {
    const [alice, bob] = await Promise.all([
      testOperator(['resend', 'mark-sent', 'discard', 'reprocess', 'approve']),
      testOperator(['approve']),
    ]);
    const conv = uniqueId('c');
    const ok = await start(sandboxEvent({ conversationId: conv, messageId: 'm1' }));
    await ok.result();
    await save('succeeded', ok.workflowId);

    const dup = await start(sandboxEvent({ conversationId: conv, messageId: 'm1' }));
    await dup.result();
    await save('duplicate', dup.workflowId);

    fake.next({ status: 429, retryAfter: '1' });
    const retried = await start(sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1' }));
    await retried.result();
    await save('retried', retried.workflowId);

    fake.next('accept-then-drop');
    const marked = await start(
      sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' }),
    );
    await waitForState(marked, 'held');
    await decide(marked, alice, 'resolve', { action: 'mark-sent', reason: 'seen', externalId: 'x1' });
    await marked.result();
    await save('held-mark-sent', marked.workflowId);

    fake.next('drop');
    const resent = await start(
      sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' }),
    );
    await waitForState(resent, 'held');
    await decide(resent, alice, 'resolve', { action: 'resend', reason: 'not there' });
    await decide(resent, alice, 'approve', { reason: 'self' });
    await decide(resent, bob, 'approve', { reason: 'checked' });
    await resent.result();
    await save('held-resend-approved', resent.workflowId);

    fake.next({ status: 404 });
    const failed = await start(sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1' }));
    await waitForState(failed, 'failed');
    await decide(failed, alice, 'reprocess', { reason: 'fixed' });
    await failed.result();
    await save('failed-reprocessed', failed.workflowId);

    // A route that cannot map the event parks it failed at planEffects (plan-failed-parks); with the
    // route file fixed and the worker restarted, a reprocess plans it again and it is sent.
    const orders = await new FakeOrders().start();
    const routeFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-record-')), 'routes.yaml');
    const routes = (orderField: string) => `
endpoints: { orders: { url: ${orders.url}/orders } }
routes:
  - name: refund-to-orders
    when: { provider: stripe, eventType: refund.created }
    businessKey: "order:{data.object.metadata.shop}:{${orderField}}"
    steps: [{ name: register, target: http:orders, body: { order: "{${orderField}}" } }]
`;
    writeFileSync(routeFile, routes('data.object.metadata.order_ref'));
    const routed = testConfig({ ROUTES_FILE: routeFile });
    let routedWorker = await startTestWorker({ address: server.address, config: routed });
    try {
      const refund = stripeRefund({ shop: 's1', order: uniqueId('o'), refund: uniqueId('re_'), amount: 1 });
      const unmapped = await startEvent(client, routed.TEMPORAL_TASK_QUEUE, refund);
      await waitForState(unmapped, 'failed');
      // Stopped only once the failure's alert went out, so that the stop does not cut the task that
      // parks it (a query answered within it said `failed` already).
      await eventually('the failed plan is alerted', async () =>
        (await unmapped.fetchHistory()).events?.some((e) => e.activityTaskCompletedEventAttributes),
      );
      await routedWorker.stop();
      writeFileSync(routeFile, routes('data.object.metadata.order'));
      routedWorker = await startTestWorker({ address: server.address, config: routed });
      // The query the decision binds to goes to the stopped worker's sticky queue first: ask until the new one answers.
      await waitForState(unmapped, 'failed');
      await decide(unmapped, alice, 'reprocess', { reason: 'route fixed' });
      await unmapped.result();
      await save('mapping-failed-reprocessed', unmapped.workflowId);
    } finally {
      await routedWorker.stop();
      await orders.stop();
    }

    // Decisions by signal: an unsealed one (refused), then a sealed one.
    fake.next('accept-then-drop');
    const signalled = await start(
      sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' }),
    );
    await waitForState(signalled, 'held');
    const discard = { workflowId: signalled.workflowId, action: 'discard' as const, reason: 'by signal' };
    await signalled.signal(resolveSignal, discard);
    const { hold } = await signalled.query(statusQuery);
    await signalled.signal(resolveSignal, sealFor(alice.account, discard, { hold }));
    await signalled.result();
    await save('held-discarded-by-signal', signalled.workflowId);

    // Held for a tenant whose installation is then revoked: the tenantRevoked workflow tells the run,
    // which reads the revocation and ends discarded (revoked-tenant-ends-held). The workflow does not
    // know targets: a blind sandbox reply carrying a Slack tenant takes the same path as a Slack one.
    const revokedTenant = `slack:T${uniqueId('rec')
      .replace(/[^a-z0-9]/gi, '')
      .toUpperCase()}`;
    const tenantStore = createTenantCredentialStore(
      (await database()).pool,
      payloadCodec(TEST_ENCRYPTION_KEY),
    );
    await tenantStore.put(
      revokedTenant,
      { source: 'admin', secret: { botToken: 'xoxb-recording' } },
      { by: 'recording', reason: 'recording' },
    );
    fake.next('accept-then-drop');
    const ofTenant = sandboxEvent({
      conversationId: uniqueId('c'),
      messageId: 'm1',
      target: 'sandbox-blind',
    });
    ofTenant.replyTo!.destination.tenant = revokedTenant;
    // Tenant, as the receiver's start sets it: what the revocation's announcement lists runs by.
    const revokedHeld = await client.workflow.start<typeof handleEvent>('handleEvent', {
      workflowId: ofTenant.workflowId,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [ofTenant],
      typedSearchAttributes: [{ key: Tenant, value: revokedTenant }],
    });
    await waitForState(revokedHeld, 'held');
    await tenantStore.revoke(revokedTenant, 'app_uninstalled', { by: 'recording', reason: 'recording' });
    const notice = await client.workflow.start('tenantRevoked', {
      workflowId: tenantRevokedWorkflowId(revokedTenant, uniqueId('Ev')),
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [{ tenant: revokedTenant, settleMs: 1000 }],
    });
    await revokedHeld.result();
    await notice.result();
    await save('held-ended-by-revocation', revokedHeld.workflowId);
    await save('tenant-revoked', notice.workflowId);

    // Two messages of one conversation at once: the later one waits for its turn, and is told.
    const busy = uniqueId('c');
    const sentAt = Date.now();
    fake.answerDelayMs = 500;
    const [earlier, later] = await Promise.all(
      [0, 1].map((i) =>
        start(
          sandboxEvent({
            conversationId: busy,
            messageId: `m${i}`,
            sentAt: new Date(sentAt + i).toISOString(),
          }),
        ),
      ),
    );
    await earlier!.result();
    await later!.result();
    fake.answerDelayMs = 0;
    await save('contended-earlier', earlier!.workflowId);
    await save('contended-later', later!.workflowId);

    // Five at once: the fifth is four sends back, too far to wait inside its attempt, so its workflow
    // waits to be told (yourTurn) by the fourth's.
    const line = uniqueId('c');
    const lineAt = Date.now();
    fake.answerDelayMs = 300;
    const five = await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        start(
          sandboxEvent({
            conversationId: line,
            messageId: `m${i}`,
            sentAt: new Date(lineAt + i).toISOString(),
          }),
        ),
      ),
    );
    for (const handle of five) await handle.result();
    fake.answerDelayMs = 0;
    await save('tells-next-in-line', five[3]!.workflowId);
    await save('told-its-turn', five[4]!.workflowId);

    const closedConv = uniqueId('c');
    await (await start(sandboxEvent({ conversationId: closedConv, type: 'close' }))).result();
    const stale = await start(sandboxEvent({ conversationId: closedConv, messageId: 'm1' }));
    await stale.result();
    await save('stale', stale.workflowId);

    // A reset to before the hold: the new run finds the row held and waits (adopt-effect-row); the
    // approval re-delivered into it is a replay; a fresh one finds the effect moved on, then one resends.
    fake.next('accept-then-drop', 'accept-then-drop');
    const reset = await start(
      sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' }),
    );
    await waitForState(reset, 'held');
    const firstTask = (await reset.fetchHistory()).events!.find(
      (e) => e.workflowTaskCompletedEventAttributes,
    );
    await decide(reset, alice, 'resolve', { action: 'resend', reason: 'not there' });
    await decide(reset, bob, 'approve', { reason: 'checked' });
    await waitForState(reset, 'held');
    const { runId } = await reset.describe();
    const cli = await temporalCli([
      'workflow',
      'reset',
      '--workflow-id',
      reset.workflowId,
      '--event-id',
      String(firstTask!.eventId),
      '--reason',
      'recording',
    ]);
    if (!cli.ok) throw new Error(cli.out);
    await eventually('the reset run holds', async () => {
      const d = await reset.describe();
      return d.runId !== runId && (await reset.query(statusQuery)).state === 'held';
    });
    await decide(reset, alice, 'resolve', { action: 'resend', reason: 'after the reset' });
    await decide(reset, bob, 'approve', { reason: 'checked again' });
    // The reset ended the first run; the handle of the start follows it, not the reset.
    await client.workflow.getHandle(reset.workflowId).result();
    await save('reset-adopts-held', reset.workflowId);

    // A flood of plaintext signals on a server that suggests continuing as new early: the run that
    // carries the wait on, then decided (its input holds what the first run handed on).
    const low = await startDevServer({
      port: 0,
      dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 },
    });
    const lowWorker = await startTestWorker({ address: low.address, config });
    const lowClient = await connectClient(low.address, 'default', TEST_ENCRYPTION_KEY);
    try {
      fake.next('accept-then-drop');
      const flooded = await startEvent(
        lowClient.client,
        config.TEMPORAL_TASK_QUEUE,
        sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' }),
      );
      await waitForState(flooded, 'held');
      const firstRun = (await flooded.describe()).runId;
      const plain = new Client({ connection: lowClient.connection, namespace: 'default' });
      for (let i = 0; i < 80; i++)
        await plain.workflow
          .getHandle(flooded.workflowId)
          .signal(resolveSignal, { action: 'resend' } as never);
      await eventually('the wait goes on in a new run', async () => {
        const d = await flooded.describe();
        return d.runId !== firstRun && (await flooded.query(statusQuery)).state === 'held';
      });
      await decide(flooded, alice, 'resolve', { action: 'discard', reason: 'after the flood' });
      await flooded.result();
      const history = await lowClient.client.workflow.getHandle(flooded.workflowId).fetchHistory();
      writeFileSync(
        path.join(HISTORIES, 'continued-after-flood.json'),
        `${JSON.stringify({ workflowId: flooded.workflowId, history })}\n`,
      );
      console.log('recorded continued-after-flood');

      // An answer of three messages whose second is held through a flood: the new run carries the
      // rest of the answer (Resumed.answer), the second is marked sent, the third is sent.
      const bot = testConfig({ SANDBOX_API_URL: fake.url, RESPONDER_MODULE: 'test/bots/rich-bot.ts' });
      const botWorker = await startTestWorker({ address: low.address, config: bot });
      try {
        fake.next('accept', 'accept-then-drop');
        const answer = await startEvent(
          lowClient.client,
          bot.TEMPORAL_TASK_QUEUE,
          sandboxEvent({
            conversationId: uniqueId('c'),
            messageId: 'm1',
            text: 'plain three',
            target: 'sandbox-blind',
          }),
        );
        await waitForState(answer, 'held');
        const answerRun = (await answer.describe()).runId;
        for (let i = 0; i < 80; i++)
          await plain.workflow
            .getHandle(answer.workflowId)
            .signal(resolveSignal, { action: 'resend' } as never);
        await eventually('the answer goes on in a new run', async () => {
          const d = await answer.describe();
          return d.runId !== answerRun && (await answer.query(statusQuery)).state === 'held';
        });
        await decide(answer, alice, 'resolve', { action: 'mark-sent', reason: 'seen', externalId: 'x2' });
        await answer.result();
        const answered = await lowClient.client.workflow.getHandle(answer.workflowId).fetchHistory();
        writeFileSync(
          path.join(HISTORIES, 'answer-continued-after-flood.json'),
          `${JSON.stringify({ workflowId: answer.workflowId, history: answered })}\n`,
        );
        console.log('recorded answer-continued-after-flood');
      } finally {
        await botWorker.stop();
      }
    } finally {
      await lowClient.close();
      await lowWorker.stop();
      await low.stop();
    }
  } finally {
    await close();
    await worker.stop();
    await fake.stop();
    await stopServers();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
