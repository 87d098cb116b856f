// The operator CLI on held and failed work, against the real dev server, PostgreSQL, a receiver whose
// codec server seals the CLI's decisions, and a worker on this suite's own queue whose sandbox target
// is a fake: finding work, reading it, deciding it (one workflow or a selection) as real operator
// accounts, and refusals by the workflow and by the codec server, each asserted on rows, sends,
// verdicts and workflow state.
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { createOperatorStore } from '../../src/db/operators';
import { openSeal } from '../../src/decision-seal';
import type { DecisionOutcome } from '../../src/operator/decisions';
import type { Inspection } from '../../src/operator/inspect';
import type { SelectionItem } from '../../src/operator/selection';
import type { WorkItem } from '../../src/operator/workflows';
import { payloadCodec } from '../../src/temporal/client';
import { statusQuery } from '../../workflows/messages';
import { eventually } from '../support/eventually';
import {
  decide,
  operatorDecides,
  staffOperators,
  type TestOperator,
  testOperator,
} from '../support/operators';
import { database, TEST_ENCRYPTION_KEY } from '../support/servers';
import { sandboxEvent, uniqueId, workerSuite } from '../support/system';
import { auditRows, effectRows, startEvent, waitForState } from '../support/workflows';
import { cli, cliJson, cliProcess } from './harness';

describe('operator CLI: held and failed work (dev server, PostgreSQL, codec server, a worker, a fake target)', function () {
  this.timeout(180_000);
  const suite = workerSuite();
  /** May decide everything but approve. */
  let desk: TestOperator;
  /** May only view. */
  let viewer: TestOperator;

  before(async () => {
    [desk, viewer] = await Promise.all([
      testOperator(['resend', 'mark-sent', 'discard', 'reprocess']),
      testOperator(['view']),
    ]);
  });

  const queue = () => suite.config.TEMPORAL_TASK_QUEUE;
  const PRIVATE_TEXT = 'my card number is 4242 and my address is secret street';
  const UPDATE_LINE = /^\S+ \S+ as \S+ \(update [0-9a-f-]{36}\)$/;

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
      assert.match(
        await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'clean up' }),
        /^Accepted/,
      );
      await handle.result();
    }
  }

  /** Waits until visibility lists the workflow, then returns its row. */
  const listed = (kind: 'held' | 'failed', workflowId: string) =>
    eventually(
      `visibility lists ${workflowId} in \`replyflow ${kind}\``,
      async () =>
        (await cliJson<WorkItem[]>([kind], { as: viewer })).find((w) => w.workflowId === workflowId),
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

    const table = await cli(['held'], { as: viewer });
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
      !(await cli(['held', '--integration', 'no-such-integration'], { as: viewer })).stdout.includes(
        h.handle.workflowId,
      ),
    );
    assert.ok(!table.stdout.includes(f.handle.workflowId), 'failed work is not in the held list');

    await discard(h.handle, f.handle);
  });

  it('shows the status, effect rows and audit rows of one workflow, never its message text', async () => {
    const { handle, conversationId } = await held();
    assert.equal(
      await decide(handle, desk, 'resolve', { action: 'resend', reason: 'nothing arrived' }),
      'Accepted: awaiting approval',
    );
    const shown = await cliJson<Inspection>(['show', handle.workflowId], { as: viewer });
    assert.equal(shown.workflow.status.state, 'awaiting_approval');
    assert.equal(shown.workflow.status.businessKey, keyOf(conversationId));
    assert.deepEqual(
      shown.effects.map((e) => [e.businessKey, e.status, e.workflowId]),
      [[keyOf(conversationId), 'held', handle.workflowId]],
    );
    assert.deepEqual(
      shown.audit.map((a) => [a.actor, a.action, a.stateBefore, a.stateAfter, a.result]),
      [[desk.account.name, 'resend', 'held', 'awaiting_approval', 'accepted: awaiting approval']],
    );

    const text = await cli(['show', handle.workflowId], { as: viewer });
    assert.equal(text.code, 0);
    assert.match(text.stdout, /awaiting_approval/);
    assert.ok(text.stdout.includes(`asked by ${desk.account.name}: nothing arrived`));
    const reply = suite.fake.deliveredTo(conversationId)[0]!.text;
    for (const output of [text.stdout, JSON.stringify(shown)]) {
      assert.ok(!output.includes(PRIVATE_TEXT), 'the incoming message text is never printed');
      assert.ok(!output.includes(reply), 'the reply text is never printed');
    }
    await discard(handle);
  });

  it('marks a held item sent through the real executable, sealed for its operator by the codec server', async () => {
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
      { as: desk },
    );
    assert.equal(result.code, 0, result.stderr);
    const [first, verdict] = result.stdout.trimEnd().split('\n');
    assert.match(first!, UPDATE_LINE);
    assert.ok(first!.startsWith(`mark-sent ${handle.workflowId} as ${desk.account.name} `));
    assert.equal(verdict, 'Accepted: marked sent as ext-77');
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(suite.fake.sendsFor(effect.id).length, sendsBefore, 'mark-sent sends nothing');
    const [after] = await effectRows(keyOf(conversationId));
    assert.deepEqual([after.status, after.external_id], ['succeeded', 'ext-77']);
    const audit = await auditRows(handle.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.state_before, a.state_after]),
      [[desk.account.name, 'mark-sent', 'held', 'succeeded']],
    );

    // What reached Temporal is ciphertext, and inside it a seal naming the operator behind the token.
    const history = await handle.fetchHistory();
    const accepted = history.events!.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes)!;
    const [payload] =
      accepted.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.args!.payloads!;
    assert.equal(Buffer.from(payload!.metadata!.encoding!).toString(), 'binary/encrypted');
    const codec = payloadCodec(TEST_ENCRYPTION_KEY);
    const [plain] = await codec.decode([payload!]);
    const opened = openSeal(JSON.parse(Buffer.from(plain!.data!).toString()), codec.keys);
    assert.ok(opened.ok, 'the decision carries a seal the worker accepts');
    assert.equal(opened.claims.operator, desk.account.name);
    assert.equal(opened.claims.workflowId, handle.workflowId);
    assert.equal(audit[0].request_id, opened.claims.requestId);
  });

  it('resends only after a second operator approves: the first one approving is rejected by the workflow', async () => {
    const { handle, conversationId } = await held();
    const [effect] = await effectRows(keyOf(conversationId));
    // Both may approve: the refusal below is the two-person rule, not a missing role.
    const [lead, second] = await Promise.all([
      testOperator(['resend', 'approve']),
      testOperator(['approve']),
    ]);
    const resend = await cliJson<DecisionOutcome & { operator: string }>(
      ['resolve', handle.workflowId, '--action', 'resend', '--reason', 'customer saw nothing'],
      { as: lead },
    );
    assert.deepEqual([resend.operator, resend.verdict], [lead.account.name, 'Accepted: awaiting approval']);

    const self = await cli(['approve', handle.workflowId, '--reason', 'my own'], { as: lead });
    assert.equal(self.code, 3);
    assert.equal(
      self.stdout.trimEnd().split('\n')[1],
      'Rejected: the approver must be a different person from the operator who asked for the resend',
    );
    assert.equal((await handle.query(statusQuery)).state, 'awaiting_approval');
    assert.equal(suite.fake.sendsFor(effect.id).length, 1, 'nothing is resent without approval');

    // The verdict does not wait for the resend it starts: the target takes 3 s to answer it, and the
    // approver hears within 2 s (the send's workflow task used to hold the verdict until it ended).
    suite.fake.next({ delayMs: 3_000 });
    const approved = await cli(
      ['approve', handle.workflowId, '--reason', 'checked the log', '--wait', '2s'],
      {
        as: second,
      },
    );
    assert.equal(approved.code, 0, approved.stdout);
    assert.equal(approved.stdout.trimEnd().split('\n')[1], 'Accepted: resend approved');
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(suite.fake.sendsFor(effect.id).length, 2, 'exactly one resend');
    const audit = await auditRows(handle.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.result.split(':')[0]]),
      [
        [lead.account.name, 'resend', 'accepted'],
        [lead.account.name, 'approve', 'rejected'],
        [second.account.name, 'approve', 'accepted'],
      ],
    );
  });

  it('has the workflow refuse a decision the operator may not take: exit 3, on the record, nothing changed', async () => {
    const { handle, conversationId } = await held();
    const rowsBefore = await effectRows(keyOf(conversationId));
    const result = await cli(
      [
        'resolve',
        handle.workflowId,
        '--action',
        'mark-sent',
        '--external-id',
        'x',
        '--reason',
        'seen it there',
      ],
      { as: viewer },
    );
    assert.equal(result.code, 3);
    assert.equal(
      result.stdout.trimEnd().split('\n')[1],
      `Rejected: not permitted: ${viewer.account.name} does not have the mark-sent role`,
    );
    const audit = await auditRows(handle.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.action, a.result, a.reason]),
      [
        [
          'mark-sent',
          `rejected: not permitted: ${viewer.account.name} does not have the mark-sent role`,
          'seen it there',
        ],
      ],
    );
    assert.equal((await handle.query(statusQuery)).state, 'held');
    assert.deepEqual(await effectRows(keyOf(conversationId)), rowsBefore);
    await discard(handle);
  });

  it('refuses a disabled or rotated token, for reading and for deciding: exit 3, nothing changed', async () => {
    const { handle, conversationId } = await held();
    const rowsBefore = await effectRows(keyOf(conversationId));
    const store = createOperatorStore((await database()).adminPool);
    const [gone, rotated] = await Promise.all([testOperator(['discard']), testOperator(['discard'])]);
    await store.disable(gone.account.name, { by: 'test' });
    const { token: fresh } = await store.rotate(rotated.account.name, { by: 'test' });

    const discardIt = ['resolve', handle.workflowId, '--action', 'discard', '--reason', 'r'];
    for (const stale of [gone, rotated]) {
      const decided = await cli(discardIt, { as: stale });
      assert.equal(decided.code, 3, decided.stderr);
      const refused =
        /^replyflow: replyflow at \S+ refused the operator token \(unknown, disabled or rotated\)/;
      assert.match(decided.stderr, refused);
      const shown = await cli(['show', handle.workflowId], { as: stale });
      assert.equal(shown.code, 3);
      assert.match(shown.stderr, refused);
      for (const output of [decided, shown])
        assert.ok(!`${output.stdout}${output.stderr}`.includes(stale.token));
    }
    const status = await handle.query(statusQuery);
    assert.equal(status.state, 'held');
    assert.deepEqual(status.operatorHistory, [], 'no decision reached the workflow');
    assert.deepEqual(await auditRows(handle.workflowId), []);
    assert.deepEqual(await effectRows(keyOf(conversationId)), rowsBefore);

    const withNewToken = await cli(discardIt, { as: { ...rotated, token: fresh } });
    assert.equal(withNewToken.code, 0, withNewToken.stderr);
    assert.equal((await handle.result()).state, 'discarded');
  });

  it('answers bad input with one clear line, exit 2, and no change', async () => {
    const { handle } = await held();
    const unknown = await cli(['resolve', 'webhook:sandbox:nope', '--action', 'discard', '--reason', 'r'], {
      as: desk,
    });
    assert.deepEqual(
      [unknown.code, unknown.stderr.trim()],
      [2, 'replyflow: no workflow webhook:sandbox:nope'],
    );
    const noReason = await cli(['resolve', handle.workflowId, '--action', 'discard'], { as: desk });
    assert.equal(noReason.code, 2);
    assert.match(noReason.stderr, /required option '--reason <text>'/);
    const blankReason = await cli(['resolve', handle.workflowId, '--action', 'discard', '--reason', ' '], {
      as: desk,
    });
    assert.deepEqual(
      [blankReason.code, blankReason.stderr.trim()],
      [2, 'replyflow: a reason is required (--reason "…")'],
    );
    const notFailed = await cli(['reprocess', handle.workflowId, '--reason', 'r'], { as: desk });
    assert.equal(notFailed.code, 2);
    assert.match(notFailed.stderr, /is not failed \(state held\)/);
    const externalId = await cli(
      ['resolve', handle.workflowId, '--action', 'discard', '--external-id', 'x', '--reason', 'r'],
      { as: desk },
    );
    assert.deepEqual(
      [externalId.code, externalId.stderr.trim()],
      [2, 'replyflow: --external-id goes only with --action mark-sent'],
    );
    const nobody = await cli(['resolve', handle.workflowId, '--action', 'discard', '--reason', 'r']);
    assert.equal(nobody.code, 2);
    assert.match(nobody.stderr, /^replyflow: no operator token: run `replyflow login`/);
    const operatorFlag = await cli(
      ['resolve', handle.workflowId, '--action', 'discard', '--reason', 'r', '--operator', 'bob'],
      { as: desk },
    );
    assert.equal(operatorFlag.code, 2, 'who decides is never typed');
    assert.match(operatorFlag.stderr, /unknown option '--operator'/);
    assert.deepEqual((await handle.query(statusQuery)).operatorHistory, [], 'nothing reached the workflow');

    await discard(handle);
    const closed = await cli(['resolve', handle.workflowId, '--action', 'discard', '--reason', 'again'], {
      as: desk,
    });
    assert.equal(closed.code, 2);
    assert.match(closed.stderr, /is closed \(completed, state discarded\): nothing awaits a decision/);
    assert.equal((await auditRows(handle.workflowId)).length, 1, 'only the discard itself is on the record');
  });

  it('reprocesses one failed workflow and prints the verdict, then with --follow how the send ended', async () => {
    const { handle, conversationId } = await failed();
    const result = await cli(['reprocess', handle.workflowId, '--reason', 'target fixed', '--follow'], {
      as: desk,
    });
    assert.equal(result.code, 0, result.stderr);
    const [first, verdict, then] = result.stdout.trimEnd().split('\n');
    assert.match(first!, UPDATE_LINE);
    assert.equal(verdict, 'Accepted: reprocess');
    const [effect] = await effectRows(keyOf(conversationId));
    assert.equal(then, `Then: sent (${effect!.external_id}).`);
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(suite.fake.deliveredTo(conversationId).length, 1);
  });

  it('plans a selection with --dry-run and changes nothing', async () => {
    const items = [await failed(), await failed()];
    const ids = items.map((i) => i.handle.workflowId);
    const query = `ReplyState = "failed" AND TaskQueue = "${queue()}"`;
    await Promise.all(ids.map((id) => listed('failed', id)));
    const rowsBefore = await Promise.all(items.map((i) => effectRows(keyOf(i.conversationId))));

    const dry = await cliJson<{ plan: SelectionItem[]; results: unknown[] }>(
      ['reprocess', '--query', query, '--dry-run', '--reason', 'target fixed'],
      { as: desk },
    );
    assert.deepEqual(
      dry.plan.filter((p) => ids.includes(p.workflowId)).map((p) => [p.verdict, p.state, p.effectStatus]),
      [
        ['reprocess', 'failed', 'failed'],
        ['reprocess', 'failed', 'failed'],
      ],
    );
    const text = await cli(['reprocess', '--query', query, '--dry-run', '--reason', 'target fixed'], {
      as: viewer,
    });
    assert.equal(text.code, 0, 'a dry run needs only the view role');
    assert.match(text.stdout, /Dry run: \d+ would be reprocessed, \d+ skipped\. Nothing was changed\./);

    const declined = await cli(['reprocess', '--query', query, '--reason', 'target fixed'], { as: desk });
    assert.equal(declined.code, 1);
    assert.match(declined.stderr, /not confirmed/);

    assert.deepEqual(await Promise.all(items.map((i) => effectRows(keyOf(i.conversationId)))), rowsBefore);
    for (const { handle } of items) {
      const status = await handle.query(statusQuery);
      assert.equal(status.state, 'failed');
      assert.deepEqual(status.operatorHistory, []);
      assert.deepEqual(await auditRows(handle.workflowId), []);
    }
    await discard(...items.map((i) => i.handle));
  });

  it('selects by integration and arrival time, and answers a filter Temporal cannot parse as bad input', async () => {
    const item = await failed();
    await listed('failed', item.handle.workflowId);
    const select = (...flags: string[]) =>
      cliJson<{ plan: SelectionItem[] }>(['reprocess', ...flags, '--dry-run', '--reason', 'r'], { as: desk });
    const planned = async (...flags: string[]) =>
      (await select(...flags)).plan.some((p) => p.workflowId === item.handle.workflowId);
    assert.equal(await planned('--integration', 'sandbox', '--since', '10m'), true);
    assert.equal(await planned('--integration', 'slack'), false);
    assert.equal(await planned('--since', new Date(Date.now() + 60_000).toISOString()), false);
    assert.equal(await planned(item.handle.workflowId), true, 'one id with --dry-run is a selection of one');
    const since = await cliJson<WorkItem[]>(['failed', '--since', '10m', '--integration', 'sandbox'], {
      as: desk,
    });
    assert.ok(since.some((w) => w.workflowId === item.handle.workflowId));

    const broken = await cli(
      ['reprocess', '--query', 'ReplyState = = "failed"', '--dry-run', '--reason', 'r'],
      {
        as: desk,
      },
    );
    assert.equal(broken.code, 2);
    assert.match(broken.stderr, /^replyflow: Temporal refused the query/);
    const both = await cli(
      ['reprocess', item.handle.workflowId, '--integration', 'sandbox', '--reason', 'r'],
      {
        as: desk,
      },
    );
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
    const result = await cli(['reprocess', '--query', query, '--reason', 'target fixed'], {
      as: desk,
      // Between the plan and the run, another operator discards one item.
      confirm: async (question) => {
        asked = question;
        await operatorDecides(changed!.handle, 'resolve', { action: 'discard', reason: 'handled by phone' });
        await waitForState(changed!.handle, 'discarded');
        return true;
      },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(asked, `Reprocess 3 failed item(s) as ${desk.account.name}?`);
    assert.match(result.stdout, new RegExp(`skipped ${changed!.handle.workflowId}: changed since the plan`));
    assert.match(result.stdout, /Reprocessed 2, skipped 1, rejected 0, undecided 0\./);
    for (const { handle } of unchanged) assert.equal((await handle.result()).state, 'succeeded');
    assert.equal((await changed!.handle.result()).state, 'discarded');
    const audit = await auditRows(changed!.handle.workflowId);
    const { asker } = await staffOperators();
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action]),
      [[asker.account.name, 'discard']],
      'the skipped item got no reprocess',
    );
    assert.equal(suite.fake.deliveredTo(changed!.conversationId).length, 0);
  });

  it('has each workflow of a selection refuse an operator without the reprocess role, on the record', async () => {
    const items = [await failed(), await failed()];
    const ids = items.map((i) => i.handle.workflowId);
    await Promise.all(ids.map((id) => listed('failed', id)));
    const query = ids.map((id) => `WorkflowId = "${id}"`).join(' OR ');
    const result = await cli(['reprocess', '--query', query, '--reason', 'bulk', '--yes'], { as: viewer });
    assert.equal(result.code, 3);
    assert.match(result.stdout, /Reprocessed 0, skipped 0, rejected 2, undecided 0\./);
    for (const { handle, conversationId } of items) {
      assert.deepEqual(
        (await auditRows(handle.workflowId)).map((a) => [a.action, a.result]),
        [['reprocess', `rejected: not permitted: ${viewer.account.name} does not have the reprocess role`]],
      );
      assert.equal((await handle.query(statusQuery)).state, 'failed');
      assert.equal(suite.fake.deliveredTo(conversationId).length, 0);
    }
    await discard(...items.map((i) => i.handle));
  });
});
