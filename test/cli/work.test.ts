// The operator CLI on held and failed work, against the real dev server, PostgreSQL and a worker on
// this suite's own queue whose sandbox target is a fake: finding work, reading it, deciding it (one
// workflow or a selection), and refusals by role, each asserted on rows, sends and workflow state.
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import type { DecisionOutcome } from '../../src/operator/decisions';
import type { Inspection } from '../../src/operator/inspect';
import type { SelectionItem } from '../../src/operator/selection';
import type { WorkItem } from '../../src/operator/workflows';
import { resolveSignal, statusQuery } from '../../workflows/messages';
import { eventually } from '../helpers/eventually';
import { sandboxEvent, uniqueId, workerSuite } from '../helpers/system';
import { auditRows, effectRows, startEvent, waitForState } from '../helpers/workflows';
import { cli, cliJson, cliProcess } from './harness';

describe('operator CLI: held and failed work (dev server, PostgreSQL, a worker, a fake target)', function () {
  this.timeout(180_000);
  const suite = workerSuite();

  const queue = () => suite.config.TEMPORAL_TASK_QUEUE;
  const PRIVATE_TEXT = 'my card number is 4242 and my address is secret street';

  /** A held workflow: the blind target commits the reply and the response is lost. */
  async function held(): Promise<{ handle: WorkflowHandle; conversationId: string }> {
    const conversationId = uniqueId('c');
    suite.fake.next('accept-then-drop');
    const event = sandboxEvent({
      conversationId,
      messageId: 'm1',
      target: 'sandbox-blind',
      text: PRIVATE_TEXT,
    });
    const handle = await startEvent(suite.temporal.client, queue(), event);
    await waitForState(handle, 'held');
    return { handle, conversationId };
  }

  /** A failed workflow: the target answers 404, a permanent error. */
  async function failed(): Promise<{ handle: WorkflowHandle; conversationId: string }> {
    const conversationId = uniqueId('c');
    suite.fake.next({ status: 404 });
    const handle = await startEvent(
      suite.temporal.client,
      queue(),
      sandboxEvent({ conversationId, messageId: 'm1' }),
    );
    await waitForState(handle, 'failed');
    return { handle, conversationId };
  }

  const keyOf = (conversationId: string) => `chat:sandbox:${conversationId}:m1:answer`;

  /** Ends a test's leftover work, so that later selections on this queue do not see it. */
  async function discard(...handles: WorkflowHandle[]) {
    for (const handle of handles) {
      await handle.signal(resolveSignal, { action: 'discard', operator: 'test', reason: 'clean up' });
      await handle.result();
    }
  }

  /** Waits until visibility lists the workflow, then returns its row. */
  const listed = (kind: 'held' | 'failed', workflowId: string) =>
    eventually(
      `visibility lists ${workflowId} in \`replyflow ${kind}\``,
      async () => (await cliJson<WorkItem[]>([kind])).find((w) => w.workflowId === workflowId),
      { intervalMs: 200 },
    );

  it('lists held and failed work with integration, business key, step, attempts, error class and action', async () => {
    const h = await held();
    const f = await failed();
    const heldRow = await listed('held', h.handle.workflowId);
    assert.equal(heldRow.state, 'held');
    assert.equal(heldRow.integration, 'sandbox');
    assert.equal(heldRow.businessKey, keyOf(h.conversationId));
    assert.equal(heldRow.failedStep, 'reply');
    assert.equal(heldRow.lastErrorClass, 'unknown');
    assert.match(heldRow.recommendedAction ?? '', /mark-sent/);
    const failedRow = await listed('failed', f.handle.workflowId);
    assert.equal(failedRow.lastErrorClass, 'permanent');
    assert.equal(failedRow.attempts, 1);

    const table = await cli(['held']);
    assert.equal(table.code, 0);
    const header = table.stdout.split('\n')[0]!;
    for (const column of [
      'WORKFLOW ID',
      'INTEGRATION',
      'BUSINESS KEY',
      'FAILED STEP',
      'ATTEMPTS',
      'AGE',
      'RECOMMENDED ACTION',
    ])
      assert.ok(header.includes(column), `the table has ${column}`);
    assert.ok(table.stdout.includes(h.handle.workflowId));
    assert.ok(
      !(await cli(['held', '--integration', 'no-such-integration'])).stdout.includes(h.handle.workflowId),
    );
    assert.ok(!table.stdout.includes(f.handle.workflowId), 'failed work is not in the held list');

    await discard(h.handle, f.handle);
  });

  it('shows the status, effect rows and audit rows of one workflow, never its message text', async () => {
    const { handle, conversationId } = await held();
    await handle.signal(resolveSignal, { action: 'resend', operator: 'alice', reason: 'nothing arrived' });
    await waitForState(handle, 'awaiting_approval');
    const shown = await cliJson<Inspection>(['show', handle.workflowId]);
    assert.equal(shown.workflow.status.state, 'awaiting_approval');
    assert.equal(shown.workflow.status.businessKey, keyOf(conversationId));
    assert.deepEqual(
      shown.effects.map((e) => [e.businessKey, e.status, e.workflowId]),
      [[keyOf(conversationId), 'held', handle.workflowId]],
    );
    assert.deepEqual(
      shown.audit.map((a) => [a.actor, a.action, a.stateBefore, a.stateAfter, a.result]),
      [['alice', 'resend', 'held', 'awaiting_approval', 'accepted: awaiting approval']],
    );

    const text = await cli(['show', handle.workflowId]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /awaiting_approval/);
    assert.match(text.stdout, /asked by alice: nothing arrived/);
    const reply = suite.fake.deliveredTo(conversationId)[0]!.text;
    for (const output of [text.stdout, JSON.stringify(shown)]) {
      assert.ok(!output.includes(PRIVATE_TEXT), 'the incoming message text is never printed');
      assert.ok(!output.includes(reply), 'the reply text is never printed');
    }
    await discard(handle);
  });

  it('marks a held item sent through the real executable: no send, the workflow completes, one audit row', async () => {
    const { handle, conversationId } = await held();
    const [effect] = await effectRows(keyOf(conversationId));
    const sendsBefore = suite.fake.sendsFor(effect.id).length;
    const result = await cliProcess(
      [
        'resolve',
        handle.workflowId,
        '--action',
        'mark-sent',
        '--external-id',
        'ext-77',
        '--reason',
        'seen in the chat',
      ],
      { REPLYFLOW_OPERATOR: 'alice' },
    );
    assert.equal(result.code, 0, result.stderr);
    const requestId = /requestId ([0-9a-f-]{36})/.exec(result.stdout)?.[1];
    assert.ok(requestId, 'the requestId is printed');
    assert.match(result.stdout, /Accepted: marked sent as ext-77 \(state held → succeeded\)/);
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(suite.fake.sendsFor(effect.id).length, sendsBefore, 'mark-sent sends nothing');
    const [after] = await effectRows(keyOf(conversationId));
    assert.deepEqual([after.status, after.external_id], ['succeeded', 'ext-77']);
    const audit = await auditRows(handle.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.state_before, a.state_after, a.request_id]),
      [['alice', 'mark-sent', 'held', 'succeeded', requestId]],
    );
  });

  it('refuses what a role does not allow, audits the refusal, and changes nothing', async () => {
    const { handle } = await held();
    const byBob = await cli(
      ['resolve', handle.workflowId, '--action', 'mark-sent', '--external-id', 'x', '--reason', 'r'],
      {
        env: { REPLYFLOW_OPERATOR: 'bob' },
      },
    );
    assert.equal(byBob.code, 3);
    assert.match(byBob.stderr, /bob may not mark-sent/);
    // Without any role configuration everyone may view, and nobody may act.
    const byDefault = await cli(
      ['resolve', handle.workflowId, '--action', 'discard', '--reason', 'r', '--operator', 'erin'],
      {
        env: { REPLYFLOW_ROLES: undefined },
      },
    );
    assert.equal(byDefault.code, 3);
    assert.match(byDefault.stderr, /everyone may view, nobody may act/);
    assert.equal((await cli(['show', handle.workflowId], { env: { REPLYFLOW_ROLES: undefined } })).code, 0);

    const audit = await auditRows(handle.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.result, a.reason]),
      [
        ['bob', 'mark-sent', 'rejected: not permitted', 'r'],
        ['erin', 'discard', 'rejected: not permitted', 'r'],
      ],
    );
    const status = await handle.query(statusQuery);
    assert.equal(status.state, 'held');
    assert.deepEqual(status.operatorHistory, [], 'no signal reached the workflow');
    await discard(handle);
  });

  it('resends only after another person approves, and reports the workflow verdict on self-approval', async () => {
    const { handle, conversationId } = await held();
    const [effect] = await effectRows(keyOf(conversationId));
    const resend = await cliJson<DecisionOutcome>([
      'resolve',
      handle.workflowId,
      '--action',
      'resend',
      '--reason',
      'customer saw nothing',
      '--operator',
      'dave',
    ]);
    assert.deepEqual([resend.decision?.result, resend.state], ['accepted', 'awaiting_approval']);
    const self = await cli(['approve', handle.workflowId, '--reason', 'my own', '--operator', 'dave']);
    assert.equal(self.code, 1);
    assert.match(self.stdout, /Rejected: the approver must be a different person/);
    assert.equal(suite.fake.sendsFor(effect.id).length, 1, 'nothing is resent without approval');

    const approved = await cli([
      'approve',
      handle.workflowId,
      '--reason',
      'checked the log',
      '--operator',
      'bob',
    ]);
    assert.equal(approved.code, 0, approved.stderr);
    assert.match(approved.stdout, /Accepted: resend approved/);
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(suite.fake.sendsFor(effect.id).length, 2, 'exactly one resend');
    const audit = await auditRows(handle.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.result.split(':')[0]]),
      [
        ['dave', 'resend', 'accepted'],
        ['dave', 'approve', 'rejected'],
        ['bob', 'approve', 'accepted'],
      ],
    );
  });

  it('answers bad input with one clear line, exit 2, and no change', async () => {
    const { handle } = await held();
    const unknown = await cli([
      'resolve',
      'webhook:sandbox:nope',
      '--action',
      'discard',
      '--reason',
      'r',
      '--operator',
      'alice',
    ]);
    assert.deepEqual(
      [unknown.code, unknown.stderr.trim()],
      [2, 'replyflow: no workflow webhook:sandbox:nope'],
    );
    const noReason = await cli(['resolve', handle.workflowId, '--action', 'discard', '--operator', 'alice']);
    assert.equal(noReason.code, 2);
    assert.match(noReason.stderr, /required option '--reason <text>'/);
    const blankReason = await cli([
      'resolve',
      handle.workflowId,
      '--action',
      'discard',
      '--reason',
      ' ',
      '--operator',
      'alice',
    ]);
    assert.deepEqual(
      [blankReason.code, blankReason.stderr.trim()],
      [2, 'replyflow: a reason is required (--reason "…")'],
    );
    const notFailed = await cli(['reprocess', handle.workflowId, '--reason', 'r', '--operator', 'alice']);
    assert.equal(notFailed.code, 2);
    assert.match(notFailed.stderr, /is not failed \(state held\)/);
    const nobody = await cli(['resolve', handle.workflowId, '--action', 'discard', '--reason', 'r']);
    assert.equal(nobody.code, 2);
    assert.match(nobody.stderr, /--operator <name> or REPLYFLOW_OPERATOR/);

    await handle.signal(resolveSignal, { action: 'discard', operator: 'alice', reason: 'done' });
    assert.equal((await handle.result()).state, 'discarded');
    const closed = await cli([
      'resolve',
      handle.workflowId,
      '--action',
      'discard',
      '--reason',
      'again',
      '--operator',
      'alice',
    ]);
    assert.equal(closed.code, 2);
    assert.match(closed.stderr, /is closed \(completed, state discarded\): nothing awaits a decision/);
    assert.equal((await auditRows(handle.workflowId)).length, 1, 'only the discard itself is on the record');
  });

  it('reprocesses one failed workflow and reports the verdict with its requestId', async () => {
    const { handle, conversationId } = await failed();
    const result = await cli([
      'reprocess',
      handle.workflowId,
      '--reason',
      'target fixed',
      '--operator',
      'alice',
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Sent reprocess to .* \(requestId [0-9a-f-]{36}\)/);
    assert.match(result.stdout, /Accepted \(state failed → (processing|succeeded)\)/);
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(suite.fake.deliveredTo(conversationId).length, 1);
  });

  it('plans a selection with --dry-run and changes nothing', async () => {
    const items = [await failed(), await failed()];
    const ids = items.map((i) => i.handle.workflowId);
    const query = `ReplyState = "failed" AND TaskQueue = "${queue()}"`;
    await Promise.all(ids.map((id) => listed('failed', id)));
    const rowsBefore = await Promise.all(items.map((i) => effectRows(keyOf(i.conversationId))));

    const dry = await cliJson<{ plan: SelectionItem[]; results: unknown[] }>([
      'reprocess',
      '--query',
      query,
      '--dry-run',
      '--reason',
      'target fixed',
      '--operator',
      'alice',
    ]);
    assert.deepEqual(
      dry.plan.filter((p) => ids.includes(p.workflowId)).map((p) => [p.verdict, p.state, p.effectStatus]),
      [
        ['reprocess', 'failed', 'failed'],
        ['reprocess', 'failed', 'failed'],
      ],
    );
    const text = await cli([
      'reprocess',
      '--query',
      query,
      '--dry-run',
      '--reason',
      'target fixed',
      '--operator',
      'bob',
    ]);
    assert.equal(text.code, 0, 'a dry run needs only the view role');
    assert.match(text.stdout, /Dry run: \d+ would be reprocessed, \d+ skipped\. Nothing was changed\./);

    const declined = await cli([
      'reprocess',
      '--query',
      query,
      '--reason',
      'target fixed',
      '--operator',
      'alice',
    ]);
    assert.equal(declined.code, 1);
    assert.match(declined.stderr, /not confirmed/);

    assert.deepEqual(await Promise.all(items.map((i) => effectRows(keyOf(i.conversationId)))), rowsBefore);
    for (const { handle } of items) {
      const status = await handle.query(statusQuery);
      assert.equal(status.state, 'failed');
      assert.deepEqual(status.operatorHistory, []);
      assert.deepEqual(await auditRows(handle.workflowId), []);
    }
    for (const { handle } of items) await discard(handle);
  });

  it('selects by integration and arrival time, and answers a filter Temporal cannot parse as bad input', async () => {
    const item = await failed();
    await listed('failed', item.handle.workflowId);
    const select = (...flags: string[]) =>
      cliJson<{ plan: SelectionItem[] }>([
        'reprocess',
        ...flags,
        '--dry-run',
        '--reason',
        'r',
        '--operator',
        'alice',
      ]);
    const planned = async (...flags: string[]) =>
      (await select(...flags)).plan.some((p) => p.workflowId === item.handle.workflowId);
    assert.equal(await planned('--integration', 'sandbox', '--since', '10m'), true);
    assert.equal(await planned('--integration', 'slack'), false);
    assert.equal(await planned('--since', new Date(Date.now() + 60_000).toISOString()), false);
    assert.equal(await planned(item.handle.workflowId), true, 'one id with --dry-run is a selection of one');
    const since = await cliJson<WorkItem[]>(['failed', '--since', '10m', '--integration', 'sandbox']);
    assert.ok(since.some((w) => w.workflowId === item.handle.workflowId));

    const broken = await cli([
      'reprocess',
      '--query',
      'ReplyState = = "failed"',
      '--dry-run',
      '--reason',
      'r',
    ]);
    assert.equal(broken.code, 2);
    assert.match(broken.stderr, /^replyflow: Temporal refused the query/);
    const both = await cli([
      'reprocess',
      item.handle.workflowId,
      '--integration',
      'sandbox',
      '--reason',
      'r',
    ]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /one workflow id or a selection/);
    await discard(item.handle);
  });

  it('re-checks each selected item before acting and skips the ones that changed since the plan', async () => {
    const items = [await failed(), await failed(), await failed()];
    const [changed, ...unchanged] = items;
    await Promise.all(items.map((i) => listed('failed', i.handle.workflowId)));
    const query = `ReplyState = "failed" AND TaskQueue = "${queue()}"`;
    let asked = '';
    const result = await cli(
      ['reprocess', '--query', query, '--reason', 'target fixed', '--operator', 'alice'],
      {
        // Between the plan and the run, another operator discards one item.
        confirm: async (question) => {
          asked = question;
          await changed!.handle.signal(resolveSignal, {
            action: 'discard',
            operator: 'olga',
            reason: 'handled by phone',
          });
          await waitForState(changed!.handle, 'discarded');
          return true;
        },
      },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(asked, /Reprocess 3 failed item\(s\) as alice\?/);
    assert.match(result.stdout, new RegExp(`skipped ${changed!.handle.workflowId}: changed since the plan`));
    assert.match(result.stdout, /Reprocessed 2, skipped 1, rejected 0, undecided 0\./);
    for (const { handle } of unchanged) assert.equal((await handle.result()).state, 'succeeded');
    assert.equal((await changed!.handle.result()).state, 'discarded');
    const audit = await auditRows(changed!.handle.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action]),
      [['olga', 'discard']],
      'the skipped item got no reprocess',
    );
    assert.equal(suite.fake.deliveredTo(changed!.conversationId).length, 0);
  });

  it('refuses a selection reprocess to an operator without the reprocess role, on the record', async () => {
    const query = `ReplyState = "failed" AND TaskQueue = "${queue()}"`;
    const result = await cli([
      'reprocess',
      '--query',
      query,
      '--reason',
      'bulk',
      '--operator',
      'bob',
      '--yes',
    ]);
    assert.equal(result.code, 3);
    const audit = await auditRows(`selection: ${query}`);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.result]),
      [['bob', 'reprocess', 'rejected: not permitted']],
    );
  });
});
