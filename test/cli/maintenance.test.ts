// The operator CLI on the system as a whole: reconcile finds planted inconsistencies (and only within
// the retention), patches counts the open runs on each patch's paths, audit filters the log, conversation moves are role-checked and audited, and purge (the
// admin's) keeps what dedupe needs. Real dev server, PostgreSQL, a codec server and a worker on this suite's
// own queue; each command runs as an operator account with the roles it needs (or lacks).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { AuditEntry } from '../../src/operator/audit';
import type { PatchReport } from '../../src/operator/patches';
import type { PurgeReport } from '../../src/operator/purge';
import type { ReconcileReport } from '../../src/operator/reconcile';
import { PATCHES } from '../../workflows/patches';
import { eventually } from '../support/eventually';
import { operatorDecides, type TestOperator, testOperator } from '../support/operators';
import { database } from '../support/servers';
import { sandboxEvent, uniqueId, workerSuite } from '../support/system';
import { auditRows, heldItem, startEvent, waitForState } from '../support/workflows';
import { adminEnv, cli, cliJson } from './harness';

describe('operator CLI: reconcile, audit, conversation, purge (dev server, PostgreSQL, a worker)', function () {
  this.timeout(180_000);
  const suite = workerSuite();
  /** Moves conversations. */
  let alice: TestOperator;
  /** Only approves. */
  let bob: TestOperator;

  before(async () => {
    [alice, bob] = await Promise.all([testOperator(['conversation']), testOperator(['approve'])]);
  });

  const pool = async () => (await database()).pool;

  async function plantEvent(options: { ageMs: number; payloadRef?: string; outcome?: string }) {
    const eventId = uniqueId('evt_');
    const workflowId = `webhook:sandbox:${eventId}`;
    await (await pool()).query(
      `INSERT INTO events (provider, event_id, workflow_id, run_id, event_type, received_at, payload_ref, outcome)
       VALUES ('sandbox', $1, $2, 'planted', 'message', now() - $3 * interval '1 millisecond', $4, $5)`,
      [eventId, workflowId, options.ageMs, options.payloadRef ?? null, options.outcome ?? null],
    );
    return { eventId, workflowId };
  }

  async function plantEffect(status: 'sending' | 'held', ageMs: number) {
    const id = randomUUID();
    const workflowId = `webhook:sandbox:${uniqueId('evt_')}`;
    await (await pool()).query(
      `INSERT INTO effects (id, target, business_key, integration, status, workflow_id, lease_expires_at, updated_at)
       VALUES ($1, 'sandbox', $2, 'sandbox', $3, $4, now() - $5 * interval '1 millisecond', now() - $5 * interval '1 millisecond')`,
      [id, `planted:${id}`, status, workflowId, ageMs],
    );
    return { id, workflowId };
  }

  const HOUR = 3_600_000;
  const DAY = 24 * HOUR;

  it('reconcile finds each planted inconsistency, within the retention only, and exits 1', async () => {
    const lost = await plantEvent({ ageMs: 60_000 });
    const beyondRetention = await plantEvent({ ageMs: 8 * DAY });
    const stuck = await plantEffect('sending', HOUR);
    const leased = await plantEffect('sending', -HOUR);
    const unalerted = await plantEffect('held', HOUR);
    const alerted = await plantEffect('held', HOUR);
    await (await pool()).query(`INSERT INTO alerts (kind, level, workflow_id) VALUES ('held', 0, $1)`, [
      alerted.workflowId,
    ]);
    // A workflow that closed without writing its outcome to the ledger.
    const event = sandboxEvent({ conversationId: uniqueId('c') });
    await (await startEvent(suite.temporal.client, suite.config.TEMPORAL_TASK_QUEUE, event)).result();
    await (await pool()).query('UPDATE events SET outcome = NULL WHERE event_id = $1', [event.eventId]);

    const result = await cli(['reconcile', '--json'], { as: bob });
    assert.equal(result.code, 1, result.stderr);
    const report = JSON.parse(result.stdout) as ReconcileReport;
    assert.equal(report.consistent, false);
    assert.equal(report.retentionMs, 7 * DAY);
    const missing = report.ackedWithoutWorkflow.map((e) => e.workflowId);
    assert.ok(missing.includes(lost.workflowId), 'an acknowledged event with no workflow');
    assert.ok(
      !missing.includes(beyondRetention.workflowId),
      'older than the retention: its workflow may be gone',
    );
    const leases = report.expiredLeases.map((e) => e.effectId);
    assert.ok(leases.includes(stuck.id), 'a send stuck past its lease');
    assert.ok(!leases.includes(leased.id), 'a send within its lease');
    const unalertedIds = report.heldWithoutAlert.map((h) => h.workflowId);
    assert.ok(unalertedIds.includes(unalerted.workflowId), 'held with no alert');
    assert.ok(!unalertedIds.includes(alerted.workflowId), 'held and alerted');
    const unwatched = report.unwatchedHolds.map((h) => h.effectId);
    assert.ok(unwatched.includes(alerted.id), 'held, and no workflow waits on it');
    const noOutcome = report.noOutcome.find((e) => e.eventId === event.eventId);
    assert.match(noOutcome?.why ?? '', /workflow completed without an outcome/);

    const text = await cli(['reconcile'], { as: bob });
    assert.equal(text.code, 1);
    assert.match(text.stdout, /acknowledged events without a workflow: \d+/);
    assert.ok(text.stdout.includes(lost.workflowId));
    assert.ok(text.stdout.includes(stuck.id));
    assert.match(text.stdout, /Something is off/);

    // Repair what was planted so that the rest of the run sees a consistent ledger.
    const db = await pool();
    await db.query(`UPDATE events SET outcome = 'succeeded' WHERE event_id = ANY($1::text[])`, [
      [lost.eventId, beyondRetention.eventId, event.eventId],
    ]);
    await db.query(`UPDATE effects SET status = 'discarded' WHERE id = ANY($1::uuid[])`, [
      [stuck.id, leased.id, unalerted.id, alerted.id],
    ]);
  });

  it('patches counts, per patch, the open runs that recorded it and those that may need its old path', async () => {
    const { handle } = await heldItem(suite);
    const queue = suite.config.TEMPORAL_TASK_QUEUE;
    // What visibility says of each open event run on the queue: the patches it recorded, when it started.
    const openRuns = async () => {
      const runs: { patches: string[]; startedAt: number }[] = [];
      for await (const info of suite.temporal.client.workflow.list({
        query: `WorkflowType="handleEvent" AND ExecutionStatus="Running" AND TaskQueue="${queue}"`,
      }))
        runs.push({
          patches: (info.searchAttributes.TemporalChangeVersion as string[] | undefined) ?? [],
          startedAt: info.startTime.getTime(),
        });
      return runs;
    };
    const runs = await eventually('the held run shows the patches it recorded', async () => {
      const found = await openRuns();
      return found.some((run) => run.patches.length > 0) ? found : undefined;
    });
    const report = await cliJson<PatchReport>(['patches', '--task-queue', queue], { as: bob });
    assert.equal(report.taskQueue, queue);
    assert.equal(report.openRuns, runs.length);
    assert.deepEqual(
      report.patches.map((p) => p.id),
      PATCHES.map((p) => p.id),
    );
    for (const patch of report.patches) {
      const before = runs.filter((run) => run.startedAt < Date.parse(patch.cutoff));
      assert.deepEqual(
        [patch.recorded, patch.startedBefore, patch.mayNeedOldPath],
        [
          runs.filter((run) => run.patches.includes(patch.id)).length,
          before.length,
          before.filter((run) => !run.patches.includes(patch.id)).length,
        ],
        patch.id,
      );
    }
    assert.ok(
      report.patches.some((p) => p.recorded > 0),
      'the held run recorded patches',
    );
    const text = await cli(['patches', '--task-queue', queue], { as: bob });
    assert.equal(text.code, 0, text.stderr);
    for (const patch of PATCHES) assert.match(text.stdout, new RegExp(`^${patch.id} `, 'm'));
    await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'clean up' });
    await handle.result();
  });

  it('records the delivered alert of held work, which reconcile looks for', async () => {
    suite.fake.next('accept-then-drop');
    const handle = await startEvent(
      suite.temporal.client,
      suite.config.TEMPORAL_TASK_QUEUE,
      sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' }),
    );
    await waitForState(handle, 'held');
    // The alert follows the held state in the workflow: watch the table for it.
    const rows = await eventually('the held alert row is written', async () => {
      const found = await (await pool()).query('SELECT kind, level FROM alerts WHERE workflow_id = $1', [
        handle.workflowId,
      ]);
      return found.rows.length > 0 ? found.rows : undefined;
    });
    assert.deepEqual(rows, [{ kind: 'held', level: 0 }]);
    await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'clean up' });
    await handle.result();
  });

  it('moves a conversation by hand with the conversation role, and refuses and records it without', async () => {
    const key = `sandbox:${uniqueId('c')}`;
    await (await pool()).query(
      `INSERT INTO conversations (id, machine, state, version) VALUES ($1, 'chat', 'bot_handling', 1)`,
      [key],
    );
    const handoff = await cli(['conversation', 'handoff', key, '--reason', 'asked for a person'], {
      as: alice,
    });
    assert.equal(handoff.code, 0, handoff.stderr);
    assert.equal(handoff.stdout.trim(), `handoff ${key}: bot_handling → human_handling.`);
    const refused = await cli(['conversation', 'handback', key, '--reason', 'bot again'], { as: bob });
    assert.equal(refused.code, 3);
    assert.equal(
      refused.stderr.trim(),
      `replyflow: ${bob.account.name} may not conversation (no conversation role); the refusal is in the audit log`,
    );
    const impossible = await cli(['conversation', 'reopen', key, '--reason', 'why not'], { as: alice });
    assert.equal(impossible.code, 1);
    assert.match(impossible.stdout, /Rejected: reopen is not possible from human_handling/);
    const { rows } = await (await pool()).query('SELECT state FROM conversations WHERE id = $1', [key]);
    assert.equal(rows[0].state, 'human_handling');
    assert.deepEqual(
      (await auditRows(`conversation:${key}`)).map((a) => [a.actor, a.action, a.result]),
      [
        [alice.account.name, 'conversation:handoff', 'accepted'],
        [bob.account.name, 'conversation:handback', 'rejected: not permitted'],
        [alice.account.name, 'conversation:reopen', 'rejected: reopen is not possible from human_handling'],
      ],
    );
  });

  it('lists audit rows filtered by workflow, actor and time', async () => {
    const key = `sandbox:${uniqueId('c')}`;
    const target = `conversation:${key}`;
    await (await pool()).query(
      `INSERT INTO conversations (id, machine, state, version) VALUES ($1, 'chat', 'closed', 1)`,
      [key],
    );
    await cli(['conversation', 'reopen', key, '--reason', 'wrote again'], { as: alice });
    await cli(['conversation', 'close', key, '--reason', 'done'], { as: bob });

    const all = await cliJson<AuditEntry[]>(['audit', '--workflow', target], { as: bob });
    assert.deepEqual(
      all.map((a) => [a.actor, a.action, a.target, a.stateBefore, a.stateAfter, a.reason]),
      [
        [alice.account.name, 'conversation:reopen', target, 'closed', 'unhandled', 'wrote again'],
        [bob.account.name, 'conversation:close', target, null, null, 'done'],
      ],
    );
    const byBob = await cliJson<AuditEntry[]>(['audit', '--workflow', target, '--actor', bob.account.name], {
      as: alice,
    });
    assert.deepEqual(
      byBob.map((a) => a.result),
      ['rejected: not permitted'],
    );
    const audit = (...flags: string[]) =>
      cliJson<AuditEntry[]>(['audit', '--workflow', target, ...flags], { as: bob });
    assert.equal((await audit('--since', '1h')).length, 2);
    assert.equal((await audit('--until', '1h')).length, 0);
    const text = await cli(['audit', '--workflow', target], { as: bob });
    assert.equal(text.code, 0);
    assert.match(text.stdout, /closed → unhandled/);
    const bad = await cli(['audit', '--since', 'yesterday-ish'], { as: bob });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--since expects a duration/);
  });

  it('purge refuses a window shorter than 3 days, counts with --dry-run, and keeps ids and outcomes', async () => {
    const db = await pool();
    const old = await plantEvent({ ageMs: 5 * DAY, payloadRef: 'ciphertext:old', outcome: 'succeeded' });
    const recent = await plantEvent({
      ageMs: 2 * DAY,
      payloadRef: 'ciphertext:recent',
      outcome: 'succeeded',
    });
    const conversationId = uniqueId('c');
    await db.query(
      `INSERT INTO sandbox_messages (conversation_id, author, text, created_at) VALUES ($1, 'user', 'private words', now() - interval '5 days')`,
      [conversationId],
    );
    const payloads = async () =>
      (
        await db.query(
          'SELECT event_id, payload_ref, outcome FROM events WHERE event_id = ANY($1::text[]) ORDER BY received_at',
          [[old.eventId, recent.eventId]],
        )
      ).rows.map((r) => [r.event_id, r.payload_ref, r.outcome]);
    const before = await payloads();

    const asAdmin = { env: await adminEnv() };
    const tooShort = await cli(['purge', '--older-than', '1d'], asAdmin);
    assert.equal(tooShort.code, 2);
    assert.match(tooShort.stderr, /refusing a purge window shorter than 3d/);
    const dry = await cliJson<PurgeReport>(['purge', '--older-than', '4d', '--dry-run'], asAdmin);
    assert.equal(dry.dryRun, true);
    assert.ok(dry.events >= 1 && dry.sandboxMessages >= 1);
    // An operator, whatever their roles, holds no admin credential.
    const notTheAdmin = await cli(['purge', '--older-than', '4d'], { as: alice });
    assert.equal(notTheAdmin.code, 2);
    assert.match(notTheAdmin.stderr, /needs the admin credential: set REPLYFLOW_ADMIN_DATABASE_URL/);
    assert.deepEqual(await payloads(), before, 'nothing changed so far');

    const purged = await cli(['purge', '--older-than', '4d', '--reason', 'monthly retention'], asAdmin);
    assert.equal(purged.code, 0, purged.stderr);
    assert.match(purged.stdout, /Purged the payloads of \d+ events/);
    assert.deepEqual(await payloads(), [
      [old.eventId, null, 'succeeded'],
      [recent.eventId, 'ciphertext:recent', 'succeeded'],
    ]);
    const sandbox = await db.query('SELECT text FROM sandbox_messages WHERE conversation_id = $1', [
      conversationId,
    ]);
    assert.equal(sandbox.rows[0].text, '');
    const audit = await auditRows('ledger');
    assert.deepEqual(
      audit.slice(-1).map((a) => [a.actor, a.action, a.result.split(':')[0], a.reason]),
      [[`admin:${os.userInfo().username}`, 'purge', 'accepted', 'monthly retention']],
    );
  });
});
