// Order by business state, not arrival time; one conversation at a time, many in parallel. On the
// real dev server (real time: the turns' gather window and concurrency are real) and PostgreSQL.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { conversationActivities } from '../../activities/conversation';
import type { ActivityDeps } from '../../activities/deps';
import type { Config } from '../../src/config';
import { toMicros } from '../../src/conversations';
import { operateConversation } from '../../src/operator/conversations';
import type { InboundEvent } from '../../src/providers/types';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { statusQuery } from '../../workflows/messages';
import { FakeTarget } from '../support/fake-target';
import { operatorDecides } from '../support/operators';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { FAST_POLICY, sandboxEvent, startTestWorker, testConfig, uniqueId } from '../support/system';
import { auditRows, effectRows, startEvent, waitForState } from '../support/workflows';

describe('ordering: business state decides, one conversation at a time (dev server, PostgreSQL)', function () {
  this.timeout(180_000);
  let fake: FakeTarget;
  let config: Config;
  let temporal: TemporalClient;
  let client: Client;
  let burstConfig: Config;
  let workers: { stop(): Promise<void> }[] = [];

  before(async () => {
    const [server] = await Promise.all([devServer(), database()]);
    fake = await new FakeTarget().start();
    config = testConfig({ SANDBOX_API_URL: fake.url });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    client = temporal.client;
    burstConfig = testConfig({ SANDBOX_API_URL: fake.url });
    workers = await Promise.all([
      startTestWorker({ address: server.address, config }),
      // A gather window generous enough for a loaded CI machine to queue a burst before the first grant.
      startTestWorker({
        address: server.address,
        config: burstConfig,
        deps: { policy: { ...FAST_POLICY, turnGatherMs: 4000 } },
      }),
    ]);
  });
  after(async () => {
    for (const worker of workers) await worker.stop();
    await temporal?.close();
    await fake?.stop();
  });
  beforeEach(() => {
    fake.answerDelayMs = 0;
  });

  const at = (base: number, offsetMs: number) => new Date(base + offsetMs).toISOString();
  const run = async (event: InboundEvent) =>
    (await startEvent(client, config.TEMPORAL_TASK_QUEUE, event)).result();
  const conversationState = async (conversationId: string) => {
    const { pool } = await database();
    const { rows } = await pool.query('SELECT state, version::text FROM conversations WHERE id = $1', [
      `sandbox:${conversationId}`,
    ]);
    return rows[0];
  };

  it('refuses an older message that arrives after a newer close, records why, and sends nothing', async () => {
    const conv = uniqueId('c');
    const base = Date.now();
    const close = sandboxEvent({ conversationId: conv, type: 'close', sentAt: at(base, 2000) });
    const late = sandboxEvent({ conversationId: conv, messageId: 'm1', sentAt: at(base, 1000) });
    assert.equal((await run(close)).state, 'succeeded');
    const result = await run(late);
    assert.equal(result.state, 'stale');
    assert.match(result.reason ?? '', /closed → bot_handling is not allowed/);
    assert.deepEqual(await conversationState(conv), {
      state: 'closed',
      version: String(toMicros(at(base, 2000))),
    });
    const { pool } = await database();
    const { rows } = await pool.query('SELECT * FROM rejected_events WHERE event_id = $1', [late.eventId]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].current_state, 'closed');
    assert.equal(rows[0].compared_version, String(toMicros(at(base, 1000))));
    assert.equal(rows[0].workflow_id, late.workflowId);
    assert.equal(fake.deliveredTo(conv).length, 0);
    const status = await client.workflow.getHandle(late.workflowId).query(statusQuery);
    assert.equal(status.state, 'stale');
    assert.match(status.reason ?? '', /not allowed/);
  });

  it('judges equal timestamps by the transition table, not by time', async () => {
    const base = Date.now();
    const closedFirst = uniqueId('c');
    assert.equal(
      (await run(sandboxEvent({ conversationId: closedFirst, type: 'close', sentAt: at(base, 0) }))).state,
      'succeeded',
    );
    assert.equal(
      (await run(sandboxEvent({ conversationId: closedFirst, sentAt: at(base, 0) }))).state,
      'stale',
    );

    const messageFirst = uniqueId('c');
    assert.equal(
      (await run(sandboxEvent({ conversationId: messageFirst, sentAt: at(base, 0) }))).state,
      'succeeded',
    );
    assert.equal(
      (await run(sandboxEvent({ conversationId: messageFirst, type: 'close', sentAt: at(base, 0) }))).state,
      'succeeded',
    );
    assert.equal((await conversationState(messageFirst)).state, 'closed');
    assert.equal(fake.deliveredTo(messageFirst).length, 1);
  });

  it('sends a shuffled burst of 20 messages of one conversation in source order, one at a time', async () => {
    const conv = uniqueId('c');
    const base = Date.now();
    fake.answerDelayMs = 30;
    const events = Array.from({ length: 20 }, (_, i) =>
      sandboxEvent({
        conversationId: conv,
        messageId: `m${String(i + 1).padStart(2, '0')}`,
        sentAt: at(base, i),
      }),
    );
    const shuffled = [...events].sort(() => Math.random() - 0.5);
    const handles = await Promise.all(
      shuffled.map((e) => startEvent(client, burstConfig.TEMPORAL_TASK_QUEUE, e)),
    );
    const results = await Promise.all(handles.map((h) => h.result()));
    assert.ok(results.every((r) => r.state === 'succeeded'));

    const effects = await effectRows(`chat:sandbox:${conv}:`);
    const messageOf = new Map(effects.map((e) => [e.id, e.business_key.split(':')[3]]));
    const sends = fake.requests
      .filter((r) => r.method === 'POST' && r.conversationId === conv)
      .sort((a, b) => a.at - b.at);
    assert.deepEqual(
      sends.map((s) => messageOf.get(s.reference!)),
      events.map((e) => e.message!.id),
      'replies go out in the order of the source messages',
    );
    for (let i = 1; i < sends.length; i++) {
      assert.ok(
        sends[i]!.at >= sends[i - 1]!.answeredAt!,
        `send ${i + 1} started before send ${i} was answered`,
      );
    }
  });

  it('runs 20 conversations in parallel', async () => {
    const base = Date.now();
    fake.answerDelayMs = 400;
    const conversations = Array.from({ length: 20 }, () => uniqueId('c'));
    const handles = await Promise.all(
      conversations.map((conv) =>
        startEvent(
          client,
          config.TEMPORAL_TASK_QUEUE,
          sandboxEvent({ conversationId: conv, sentAt: at(base, 0) }),
        ),
      ),
    );
    await Promise.all(handles.map((h) => h.result()));
    const sends = fake.requests
      .filter((r) => r.method === 'POST' && conversations.includes(r.conversationId ?? ''))
      .sort((a, b) => a.at - b.at);
    assert.equal(sends.length, 20);
    const overlapping = sends.filter((s, i) => i > 0 && s.at < sends[i - 1]!.answeredAt!);
    assert.ok(
      overlapping.length > 0,
      'some send of one conversation started while another conversation was still sending',
    );
  });

  it('does not reply while a person handles the conversation, and does again after hand-back', async () => {
    const conv = uniqueId('c');
    const base = Date.now();
    assert.equal((await run(sandboxEvent({ conversationId: conv, sentAt: at(base, 0) }))).state, 'succeeded');
    assert.equal(
      (await run(sandboxEvent({ conversationId: conv, type: 'handoff', sentAt: at(base, 1) }))).state,
      'succeeded',
    );
    const ignored = await run(sandboxEvent({ conversationId: conv, sentAt: at(base, 2) }));
    assert.equal(ignored.state, 'stale');
    assert.match(ignored.reason ?? '', /a person is handling this conversation/);

    const { pool } = await database();
    const back = await operateConversation(pool, {
      action: 'handback',
      conversationKey: `sandbox:${conv}`,
      operator: 'olga',
      reason: 'resolved by phone',
    });
    assert.deepEqual(back, { ok: true, from: 'human_handling', to: 'bot_handling' });
    assert.equal((await run(sandboxEvent({ conversationId: conv, sentAt: at(base, 3) }))).state, 'succeeded');
    assert.equal(fake.deliveredTo(conv).length, 2);
    const audit = await auditRows(`conversation:sandbox:${conv}`);
    assert.deepEqual(
      audit.map((a) => [a.action, a.actor, a.state_before, a.state_after, a.result]),
      [['conversation:handback', 'olga', 'human_handling', 'bot_handling', 'accepted']],
    );
  });

  it('lets later replies go on while an earlier one of the same conversation is held', async () => {
    const conv = uniqueId('c');
    const base = Date.now();
    fake.next('drop');
    const first = await startEvent(
      client,
      config.TEMPORAL_TASK_QUEUE,
      sandboxEvent({ conversationId: conv, messageId: 'm1', target: 'sandbox-blind', sentAt: at(base, 0) }),
    );
    await waitForState(first, 'held');
    const second = await run(sandboxEvent({ conversationId: conv, messageId: 'm2', sentAt: at(base, 1) }));
    assert.equal(second.state, 'succeeded');
    assert.equal(
      (await first.query(statusQuery)).state,
      'held',
      'the held reply stays flagged for an operator',
    );
    await operatorDecides(first, 'resolve', { action: 'discard', reason: 'answered by m2' });
    assert.equal((await first.result()).state, 'discarded');
  });

  it('reopens a closed conversation only by an operator, on the record', async () => {
    const conv = uniqueId('c');
    assert.equal((await run(sandboxEvent({ conversationId: conv, type: 'close' }))).state, 'succeeded');
    const { pool } = await database();
    const key = `sandbox:${conv}`;
    assert.deepEqual(
      await operateConversation(pool, {
        action: 'reopen',
        conversationKey: key,
        operator: 'olga',
        reason: 'customer wrote again',
      }),
      {
        ok: true,
        from: 'closed',
        to: 'unhandled',
      },
    );
    const again = await operateConversation(pool, {
      action: 'reopen',
      conversationKey: key,
      operator: 'olga',
      reason: 'twice',
    });
    assert.equal(again.ok, false);
    assert.equal((await run(sandboxEvent({ conversationId: conv }))).state, 'succeeded');
    const audit = await auditRows(`conversation:${key}`);
    assert.deepEqual(
      audit.map((a) => [a.action, a.result]),
      [
        ['conversation:reopen', 'accepted'],
        ['conversation:reopen', 'rejected: reopen is not possible from unhandled'],
      ],
    );
  });

  it('never revives a cancelled order with a late confirmation, even one stamped later', async () => {
    const { pool } = await database();
    const { applyTransition } = conversationActivities({ pool, policy: FAST_POLICY } as ActivityDeps);
    const order = `stripe:order_${uniqueId()}`;
    const ask = (to: string, seconds: number, eventId: string) =>
      applyTransition({
        request: {
          conversationKey: order,
          machine: 'order',
          to,
          version: String(toMicros(String(1_700_000_000 + seconds))),
          orderKey: '',
        },
        provider: 'stripe',
        eventId,
        workflowId: `webhook:stripe:${eventId}`,
      });
    assert.deepEqual(await ask('confirmed', 1, 'evt_1'), { applied: true, state: 'confirmed' });
    assert.deepEqual(await ask('cancelled', 3, 'evt_3'), { applied: true, state: 'cancelled' });
    const late = await ask('confirmed', 2, 'evt_2');
    const skewed = await ask('confirmed', 4, 'evt_4');
    assert.equal(late.applied, false);
    assert.equal(skewed.applied, false, 'clock skew does not let a confirmation revive a cancelled order');
    assert.match((late as { reason: string }).reason, /cancelled → confirmed is not allowed/);
    const { rows } = await pool.query(
      `SELECT event_id, current_state FROM rejected_events WHERE conversation_id = $1 ORDER BY id`,
      [order],
    );
    assert.deepEqual(rows, [
      { event_id: 'evt_2', current_state: 'cancelled' },
      { event_id: 'evt_4', current_state: 'cancelled' },
    ]);
    assert.deepEqual(
      await ask('cancelled', 3, 'evt_3'),
      { applied: true, state: 'cancelled' },
      'a retried transition is idempotent',
    );
  });
});
