// The event workflow's paths on the time-skipping server, against real PostgreSQL and a fake target
// over real HTTP. Each test asserts what matters: sends the fake received, rows, workflow state.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Alert } from '../../activities';
import type { Config } from '../../src/config';
import { statusQuery } from '../../workflows/messages';
import { FakeTarget } from '../support/fake-target';
import { decide, type TestOperator, twoOperators } from '../support/operators';
import { timeSkipping } from '../support/servers';
import { sandboxEvent, startTestWorker, testConfig, uniqueId } from '../support/system';
import { auditRows, effectRows, startEvent, waitForState } from '../support/workflows';

describe('event workflow paths end to end: sends, lookups, holds and decisions (time-skipping server, real PostgreSQL)', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let fake: FakeTarget;
  let config: Config;
  const alerts: Alert[] = [];
  let alertsDown = false;

  let worker: { stop(): Promise<void> };
  let alice: TestOperator;
  let bob: TestOperator;

  before(async () => {
    ({ asker: alice, approver: bob } = await twoOperators());
    env = await timeSkipping();
    fake = await new FakeTarget().start();
    config = testConfig({ SANDBOX_API_URL: fake.url });
    worker = await startTestWorker({
      address: env.address,
      config,
      deps: {
        notify: async (a) => {
          if (alertsDown) throw new Error('alert webhook answered 503');
          alerts.push(a);
        },
      },
    });
  });
  after(async () => {
    await worker?.stop();
    await fake.stop();
  });
  beforeEach(() => {
    alerts.length = 0;
    alertsDown = false;
  });

  const keyOf = (conversationId: string, messageId: string) =>
    `chat:sandbox:${conversationId}:${messageId}:answer`;

  it('sends one reply and records the effect as succeeded', async () => {
    const conv = uniqueId('c');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', text: 'opening hours?' });
    const result = await (await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event)).result();
    assert.equal(result.state, 'succeeded');
    const [row] = await effectRows(keyOf(conv, 'm1'));
    assert.equal(row.status, 'succeeded');
    assert.equal(fake.sendsFor(row.id).length, 1);
    assert.match(fake.deliveredTo(conv)[0]!.text, /open 9:00-18:00/);
    assert.equal(fake.sendsFor(row.id)[0]!.idempotencyKey, row.id);
  });

  it('sends once when two event ids carry the same message, even concurrently', async () => {
    const conv = uniqueId('c');
    const first = sandboxEvent({ conversationId: conv, messageId: 'm1' });
    const second = sandboxEvent({ conversationId: conv, messageId: 'm1' });
    const handles = await Promise.all(
      [first, second].map((e) => startEvent(env.client, config.TEMPORAL_TASK_QUEUE, e)),
    );
    // Both run at once; their results are awaited one by one because the time-skipping client
    // counts unlocks per pending result() call, and parallel calls unbalance that count.
    const results = [];
    for (const handle of handles) results.push(await handle.result());
    assert.deepEqual(results.map((r) => r.state).sort(), ['duplicate', 'succeeded']);
    assert.equal(fake.deliveredTo(conv).length, 1);
    const rows = await effectRows(keyOf(conv, 'm1'));
    assert.equal(rows.length, 1);
    const dup = results.find((r) => r.state === 'duplicate')!;
    assert.equal(dup.effects[0]!.ownerWorkflowId, rows[0].workflow_id);
  });

  it('finishes as duplicate when the event is already in the ledger', async () => {
    const conv = uniqueId('c');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1' });
    const replayed = { ...event, workflowId: `${event.workflowId}:again` };
    const results = [
      await (await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event)).result(),
      await (await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, replayed)).result(),
    ];
    assert.deepEqual(
      results.map((r) => r.state),
      ['succeeded', 'duplicate'],
    );
    assert.equal(fake.deliveredTo(conv).length, 1);
  });

  it('honours Retry-After on a 429 and resends with the same idempotency key', async () => {
    const conv = uniqueId('c');
    fake.next({ status: 429, retryAfter: '120' });
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1' });
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    const result = await handle.result();
    const description = await handle.describe();
    assert.equal(result.state, 'succeeded');
    const [row] = await effectRows(keyOf(conv, 'm1'));
    const sends = fake.sendsFor(row.id);
    assert.equal(sends.length, 2);
    assert.equal(sends[0]!.idempotencyKey, sends[1]!.idempotencyKey);
    assert.equal(fake.deliveredTo(conv).length, 1);
    const elapsedMs = description.closeTime!.getTime() - description.startTime.getTime();
    assert.ok(elapsedMs >= 120_000, `workflow time between attempts ${elapsedMs} ms < Retry-After 120 s`);
    assert.ok(elapsedMs <= 120_000 * 1.2 + 10_000, `jitter beyond 20 % (${elapsedMs} ms)`);
  });

  it('parks a permanent error as failed, then reprocess sends it', async () => {
    const conv = uniqueId('c');
    fake.next({ status: 404 });
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1' });
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    const failedView = await waitForState(handle, 'failed');
    assert.equal(
      await decide(handle, alice, 'reprocess', { reason: 'destination fixed' }),
      'Accepted: reprocess',
    );
    const result = await handle.result();
    assert.equal(failedView.lastErrorClass, 'permanent');
    assert.match(failedView.recommendedAction ?? '', /destination/);
    assert.equal(result.state, 'succeeded');
    const [row] = await effectRows(keyOf(conv, 'm1'));
    assert.equal(fake.sendsFor(row.id).length, 2);
    assert.equal(fake.deliveredTo(conv).length, 1);
    const audit = await auditRows(event.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.state_before, a.state_after, a.result]),
      [['reprocess', alice.account.name, 'failed', 'processing', 'accepted']],
    );
    assert.ok(alerts.some((a) => a.kind === 'failed'));
  });

  it('settles a lost response by lookup, without a second send', async () => {
    const conv = uniqueId('c');
    fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-lookup' });
    const result = await (await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event)).result();
    assert.equal(result.state, 'succeeded');
    const [row] = await effectRows(keyOf(conv, 'm1'));
    assert.equal(row.status, 'succeeded');
    assert.equal(fake.sendsFor(row.id).length, 1);
    assert.ok(fake.lookups.includes(row.id));
  });

  it('looks again after the consistency delay before deciding "not found"', async () => {
    const conv = uniqueId('c');
    fake.next('accept-then-drop');
    fake.lookupMisses = 1;
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-lookup' });
    const result = await (await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event)).result();
    assert.equal(result.state, 'succeeded');
    const [row] = await effectRows(keyOf(conv, 'm1'));
    assert.equal(fake.sendsFor(row.id).length, 1);
    assert.equal(fake.lookups.filter((l) => l === row.id).length, 2);
  });

  it('holds an unknown outcome the target cannot settle, and mark-sent completes it without sending', async () => {
    const conv = uniqueId('c');
    fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind' });
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    const held = await waitForState(handle, 'held');
    const verdict = await decide(handle, alice, 'resolve', {
      action: 'mark-sent',
      reason: 'seen in the chat',
      externalId: 'ext-42',
    });
    assert.equal(verdict, 'Accepted: marked sent as ext-42');
    const result = await handle.result();
    assert.equal(held.lastErrorClass, 'unknown');
    assert.equal(result.state, 'succeeded');
    const [row] = await effectRows(keyOf(conv, 'm1'));
    assert.equal(row.status, 'succeeded');
    assert.equal(row.external_id, 'ext-42');
    assert.equal(fake.sendsFor(row.id).length, 1);
    const audit = await auditRows(event.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.state_before, a.state_after]),
      [['mark-sent', alice.account.name, 'held', 'succeeded']],
    );
    assert.ok(alerts.some((a) => a.kind === 'held' && a.workflowId === event.workflowId));
  });

  it('resends a held item only after a different person approves, and exactly once', async () => {
    const conv = uniqueId('c');
    fake.next('drop');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind' });
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    await waitForState(handle, 'held');
    const asked = await decide(handle, alice, 'resolve', {
      action: 'resend',
      reason: 'customer says nothing arrived',
    });
    assert.equal(asked, 'Accepted: awaiting approval');
    const beforeApproval = fake.sendsFor((await effectRows(keyOf(conv, 'm1')))[0].id).length;
    // alice holds every role but approve: even with it, she could not approve her own resend.
    const selfApproval = await decide(handle, alice, 'approve', { reason: 'approving my own' });
    assert.equal(
      selfApproval,
      `Rejected: not permitted: ${alice.account.name} does not have the approve role`,
    );
    assert.equal(
      await decide(handle, bob, 'approve', { reason: 'checked the chat log' }),
      'Accepted: resend approved',
    );
    const result = await handle.result();
    const afterSelfApproval = await handle.query(statusQuery);
    assert.equal(beforeApproval, 1, 'a resend request alone sends nothing');
    assert.equal(result.state, 'succeeded');
    const [row] = await effectRows(keyOf(conv, 'm1'));
    assert.equal(fake.sendsFor(row.id).length, 2);
    assert.equal(fake.deliveredTo(conv).length, 1);
    const decisions = afterSelfApproval.operatorHistory.map((d) => [d.action, d.actor, d.result]);
    assert.deepEqual(decisions, [
      ['resend', alice.account.name, 'accepted'],
      ['approve', alice.account.name, 'rejected'],
      ['approve', bob.account.name, 'accepted'],
    ]);
    const audit = await auditRows(event.workflowId);
    assert.equal(audit.length, 3);
    assert.equal(audit[2].approver, bob.account.name);
  });

  it('discards a held item on request and records who did it', async () => {
    const conv = uniqueId('c');
    fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind' });
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    await waitForState(handle, 'held');
    await decide(handle, alice, 'resolve', { action: 'discard', reason: 'customer answered by phone' });
    const result = await handle.result();
    assert.equal(result.state, 'discarded');
    const [row] = await effectRows(keyOf(conv, 'm1'));
    assert.equal(row.status, 'discarded');
    const audit = await auditRows(event.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.state_after]),
      [['discard', alice.account.name, 'discarded']],
    );
  });

  it('rejects invalid operator messages and changes nothing', async () => {
    const conv = uniqueId('c');
    fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind' });
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    await waitForState(handle, 'held');
    const verdicts = [
      await decide(handle, alice, 'resolve', { action: 'explode' as never, reason: 'x' }),
      await decide(handle, alice, 'resolve', { action: 'mark-sent', reason: 'no id' }),
      await decide(handle, alice, 'resolve', { action: 'discard', reason: '' }),
      await decide(handle, bob, 'approve', { reason: 'nothing pending' }),
      await decide(handle, alice, 'reprocess', { reason: 'not failed' }),
    ];
    assert.deepEqual(verdicts, [
      'Rejected: action must be one of mark-sent, resend, discard',
      'Rejected: mark-sent needs the externalId of the message that was sent',
      'Rejected: reason is required (at most 500 characters)',
      'Rejected: no resend awaits approval (state held)',
      'Rejected: only failed work can be reprocessed (state held)',
    ]);
    await decide(handle, alice, 'resolve', { action: 'discard', reason: 'cleanup' });
    await handle.result();
    const view = await handle.query(statusQuery);
    assert.deepEqual(
      view.operatorHistory.map((d) => d.result),
      ['rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'accepted'],
    );
    assert.ok(view.operatorHistory.slice(0, 5).every((d) => d.stateAfter === 'held'));
  });

  it('reminds with escalation while held, over skipped hours, and never resolves on its own', async () => {
    const conv = uniqueId('c');
    fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind' });
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    await waitForState(handle, 'held');
    await env.sleep('30 hours');
    const stillHeld = await handle.query(statusQuery);
    await decide(handle, alice, 'resolve', { action: 'discard', reason: 'done' });
    await handle.result();
    assert.equal(stillHeld.state, 'held');
    const reminders = alerts.filter((a) => a.kind === 'reminder' && a.workflowId === event.workflowId);
    // 15 min, 1 h, 4 h, then every 4 h: at least 7 reminders in 30 hours, with rising levels.
    assert.ok(reminders.length >= 7, `only ${reminders.length} reminders`);
    assert.deepEqual(
      reminders.map((r) => r.level),
      reminders.map((_, i) => i + 1),
    );
    const [row] = await effectRows(keyOf(conv, 'm1'));
    assert.equal(fake.sendsFor(row.id).length, 1);
  });

  it('stays held when the alert channel is down, and can still be resolved', async () => {
    const conv = uniqueId('c');
    alertsDown = true;
    fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind' });
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    await waitForState(handle, 'held');
    await env.sleep('2 hours');
    assert.equal((await handle.query(statusQuery)).state, 'held');
    await decide(handle, alice, 'resolve', { action: 'mark-sent', reason: 'seen', externalId: 'x9' });
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(alerts.length, 0);
  });
});
