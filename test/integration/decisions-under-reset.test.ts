// One approval, one resend, whatever Temporal's own operations do to the workflow: `temporal workflow
// reset` to every point of a held item's life (before the hold, while held, after the resend request,
// after the approval, after the resend), with the default reapply, with `--reapply-exclude All`, and
// as a batch reset by query; terminate, cancel, and a new run of the same id. Each case counts the
// requests the blind target received (it cannot be asked, so a second request would be a second
// reply to a person), checks that no request id was accepted twice in the audit log, and that the
// item can still be decided, with exactly one more request for one more approval. Real dev server,
// PostgreSQL, the real `temporal` CLI.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { openSeal } from '../../src/decision-seal';
import { updateVerdict } from '../../src/operator/decisions';
import type { ReceiverHandle } from '../../src/receiver';
import { payloadCodec } from '../../src/temporal/client';
import { approveUpdate, resolveUpdate, statusQuery } from '../../workflows/messages';
import { eventually } from '../support/eventually';
import { decide, type TestOperator, twoOperators } from '../support/operators';
import { startTestReceiver } from '../support/receiver';
import { devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { sandboxEvent, workerSuite } from '../support/system';
import { temporalCli } from '../support/temporal-cli';
import { auditRows, effectRows, heldItem, startEvent } from '../support/workflows';

const { EventType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

describe('decisions under reset, terminate and cancel (dev server, PostgreSQL, the temporal CLI)', function () {
  this.timeout(240_000);
  const suite = workerSuite();
  let ana: TestOperator;
  let ben: TestOperator;

  before(async () => {
    ({ asker: ana, approver: ben } = await twoOperators());
  });

  /** `temporal …` as anyone with access to Temporal runs it; these operations must succeed. */
  const temporalOk = async (args: string[]) => {
    const { ok, out } = await temporalCli(args);
    assert.ok(ok, out);
  };

  const events = async (handle: WorkflowHandle) => (await handle.fetchHistory()).events ?? [];
  const lastTaskCompleted = (history: HistoryEvent[]) =>
    Number(
      [...history].reverse().find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        ?.eventId ?? 0,
    );

  /**
   * A held item's whole life, with the reset point of each moment: held (the blind target committed
   * the reply and the answer was lost), ana asks for a resend, ben approves, the resend is committed
   * and its answer lost too, so the item is held again after two requests to the target.
   */
  async function heldTwice() {
    const { handle, conversationId, effectId } = await heldItem(suite, 2);
    const points: Record<string, number> = {};
    const history = await events(handle);
    points['before the hold'] = Number(
      history.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)!.eventId,
    );
    points['while held'] = lastTaskCompleted(history);
    assert.equal(
      await decide(handle, ana, 'resolve', { action: 'resend', reason: 'nothing arrived' }),
      'Accepted: awaiting approval',
    );
    points['after the resend request'] = lastTaskCompleted(await events(handle));
    assert.equal(await decide(handle, ben, 'approve', { reason: 'checked' }), 'Accepted: resend approved');
    await eventually('held again after the resend', () => handle.query(statusQuery), {
      until: (s) => s.state === 'held' && s.attempts === 2,
      describe: (s) => `${s.state} after ${s.attempts}`,
    });
    const after = await events(handle);
    // The task that judged ben's approval and asked for the resend check.
    const check = after.findIndex(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'prepareResend',
    );
    points['after the approval'] = lastTaskCompleted(after.slice(0, check));
    points['after the resend'] = lastTaskCompleted(after);
    assert.equal(suite.fake.sendsFor(effectId).length, 2);
    return { handle, conversationId, effectId, points };
  }

  /** `temporal workflow reset` of the item to one of its points, as a routine operation. */
  const resetTo = (item: Awaited<ReturnType<typeof heldTwice>>, point: string, extra: string[]) =>
    temporalOk([
      'workflow',
      'reset',
      '--workflow-id',
      item.handle.workflowId,
      '--event-id',
      String(item.points[point]),
      '--reason',
      'routine reset',
      ...extra,
    ]);

  /** Waits for the run a reset started to settle where a decision awaits (or it closed). */
  async function newRun(handle: WorkflowHandle, oldRunId: string) {
    return eventually(
      'the reset run settles',
      async () => {
        const description = await handle.describe();
        if (description.runId === oldRunId) return undefined;
        if (description.status.name !== 'RUNNING') return { description, state: description.status.name };
        const status = await handle.query(statusQuery);
        return ['held', 'awaiting_approval', 'failed'].includes(status.state)
          ? { description, state: status.state }
          : undefined;
      },
      { timeoutMs: 60_000 },
    );
  }

  /** No sealed decision was accepted twice: each request id has at most one accepted audit row. */
  async function acceptedOnce(workflowId: string) {
    const accepted = (await auditRows(workflowId)).filter((a) => String(a.result).startsWith('accepted'));
    const ids = accepted.map((a) => a.request_id as string);
    assert.deepEqual(
      ids.filter((id, i) => ids.indexOf(id) !== i),
      [],
      'a request id accepted twice',
    );
  }

  /**
   * The legitimate path still works after the operation: ana asks, ben approves (again, when the
   * first approval finds the effect moved on), and exactly one more request reaches the target.
   */
  async function decidedOnceMore(item: Awaited<ReturnType<typeof heldTwice>>) {
    const handle = suite.temporal.client.workflow.getHandle(item.handle.workflowId);
    for (let round = 0; round < 3; round++) {
      const { state } = await handle.query(statusQuery);
      if (state === 'held')
        assert.equal(
          await decide(handle, ana, 'resolve', { action: 'resend', reason: 'after the reset' }),
          'Accepted: awaiting approval',
        );
      const verdict = await decide(handle, ben, 'approve', { reason: 'after the reset' });
      if (verdict === 'Accepted: resend approved') break;
      // Refused for the hold it answered, or because the run, still judging a decision the reset
      // brought back into it (found replayed, the effect moved on), went back to held meanwhile.
      assert.match(
        verdict,
        /^Rejected: (this decision answered hold .* the effect has moved on|no resend awaits approval \(state held\))/,
      );
    }
    assert.equal((await handle.result()).state, 'succeeded');
    assert.equal(suite.fake.sendsFor(item.effectId).length, 3, 'one more approval, one more request');
    await acceptedOnce(handle.workflowId);
  }

  for (const point of [
    'before the hold',
    'while held',
    'after the resend request',
    'after the approval',
    'after the resend',
  ]) {
    for (const reapply of ['default reapply', '--reapply-exclude All']) {
      it(`a reset to ${point} (${reapply}) sends nothing on its own, and one approval is one resend`, async () => {
        const item = await heldTwice();
        const { runId } = await item.handle.describe();
        await resetTo(item, point, reapply === 'default reapply' ? [] : ['--reapply-exclude', 'All']);
        const settled = await newRun(item.handle, runId);
        assert.ok(['held', 'awaiting_approval'].includes(settled.state), settled.state);
        assert.equal(suite.fake.sendsFor(item.effectId).length, 2, 'the reset sent nothing');
        const [row] = await effectRows(`chat:sandbox:${item.conversationId}:m1:answer`);
        assert.equal(row.status, 'held');
        await acceptedOnce(item.handle.workflowId);
        await decidedOnceMore(item);
      });
    }
  }

  it('a batch reset by query (to the first workflow task) sends nothing on its own, and one approval is one resend', async () => {
    const item = await heldTwice();
    const { runId } = await item.handle.describe();
    await temporalOk([
      'workflow',
      'reset',
      '--query',
      `WorkflowId = "${item.handle.workflowId}"`,
      '--type',
      'FirstWorkflowTask',
      '--reason',
      'bad deploy',
      '--yes',
    ]);
    await newRun(item.handle, runId);
    assert.equal(suite.fake.sendsFor(item.effectId).length, 2);
    await acceptedOnce(item.handle.workflowId);
    await decidedOnceMore(item);
  });

  it('refuses ben’s captured approval replayed by hand into the run a reset started', async () => {
    const item = await heldTwice();
    const history = await events(item.handle);
    const approvals = history
      .map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest)
      .filter((r) => r?.input?.name === 'approve');
    const captured = approvals[0]!.input!.args!.payloads![0]!;
    const { runId } = await item.handle.describe();
    await resetTo(item, 'after the resend request', ['--reapply-exclude', 'All']);
    await newRun(item.handle, runId);
    const response = await suite.temporal.connection.workflowService.updateWorkflowExecution({
      namespace: 'default',
      workflowExecution: { workflowId: item.handle.workflowId },
      waitPolicy: {
        lifecycleStage:
          temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage
            .UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED,
      },
      request: {
        meta: { updateId: randomUUID() },
        input: { name: 'approve', args: { payloads: [captured] } },
      },
    });
    // Refused: a failed update, the reason its message.
    assert.equal(response.outcome?.failure?.message, 'replayed: this sealed decision was used before');
    assert.equal(suite.fake.sendsFor(item.effectId).length, 2);
    await acceptedOnce(item.handle.workflowId);
    await decidedOnceMore(item);
  });

  describe('the codec server binds what an operator types to what the workflow awaits now', () => {
    let receiver: ReceiverHandle;
    before(async () => {
      receiver = await startTestReceiver({
        config: suite.config,
        temporalAddress: (await devServer()).address,
      });
    });
    after(() => receiver?.stop());

    /** `body` through /codec/encode as `operator` (what the Web UI does): the sealed payload and its claims. */
    async function sealedByCodec(operator: TestOperator, body: Record<string, string>) {
      const encoding = Buffer.from('json/plain').toString('base64');
      const response = await fetch(`${receiver.url}/codec/encode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${operator.token}` },
        body: JSON.stringify({
          payloads: [{ metadata: { encoding }, data: Buffer.from(JSON.stringify(body)).toString('base64') }],
        }),
      });
      assert.equal(response.status, 200, await response.clone().text());
      const { payloads } = (await response.json()) as {
        payloads: { metadata: Record<string, string>; data: string }[];
      };
      const proto = temporal.api.common.v1.Payloads.fromObject({ payloads }).payloads;
      const [plain] = await payloadCodec(TEST_ENCRYPTION_KEY).decode(proto);
      const sealed = JSON.parse(Buffer.from(plain!.data!).toString()) as Record<string, unknown>;
      const opened = openSeal(sealed, payloadCodec(TEST_ENCRYPTION_KEY).keys);
      assert.ok(opened.ok);
      return { sealed, claims: opened.claims };
    }

    it('seals a resend request and its approval for the hold and decision the status shows', async () => {
      const item = await heldTwice();
      const { hold } = await item.handle.query(statusQuery);
      assert.equal(hold, `${item.effectId}:2`);
      const asked = await sealedByCodec(ana, {
        workflowId: item.handle.workflowId,
        action: 'resend',
        reason: 'typed in the Web UI',
      });
      assert.deepEqual([asked.claims.decision, asked.claims.hold], ['resolve', hold]);
      assert.equal(
        await updateVerdict(item.handle.executeUpdate(resolveUpdate, { args: [asked.sealed as never] })),
        'Accepted: awaiting approval',
      );
      const approval = await sealedByCodec(ben, { workflowId: item.handle.workflowId, reason: 'ok' });
      assert.deepEqual([approval.claims.decision, approval.claims.hold], ['approve', hold]);
      // The same approval delivered as another decision is refused.
      assert.equal(
        await updateVerdict(item.handle.executeUpdate(resolveUpdate, { args: [approval.sealed as never] })),
        'Rejected: sealed for approve, delivered as resolve',
      );
      const again = await sealedByCodec(ben, { workflowId: item.handle.workflowId, reason: 'ok' });
      assert.equal(
        await updateVerdict(item.handle.executeUpdate(approveUpdate, { args: [again.sealed as never] })),
        'Accepted: resend approved',
      );
      assert.equal((await item.handle.result()).state, 'succeeded');
      assert.equal(suite.fake.sendsFor(item.effectId).length, 3);
    });
  });

  for (const operation of ['terminate', 'cancel'] as const) {
    it(`after ${operation} and a new run of the same id, nothing is sent and the effect stays held`, async () => {
      const item = await heldTwice();
      await temporalOk([
        'workflow',
        operation,
        '--workflow-id',
        item.handle.workflowId,
        ...(operation === 'terminate' ? ['--reason', 'tidy up'] : []),
      ]);
      await eventually('the workflow closes', async () => {
        const { status } = await item.handle.describe();
        return status.name !== 'RUNNING';
      });
      // The receiver's redelivery of the same event starts a new run (a new chain) of the same id.
      const again = await startEvent(
        suite.temporal.client,
        suite.config.TEMPORAL_TASK_QUEUE,
        sandboxEvent({
          conversationId: item.conversationId,
          messageId: 'm1',
          target: 'sandbox-blind',
          eventId: item.handle.workflowId.replace('webhook:sandbox:', ''),
        }),
      );
      assert.equal((await again.result()).state, 'duplicate');
      assert.equal(suite.fake.sendsFor(item.effectId).length, 2, 'nothing sent again');
      const [row] = await effectRows(`chat:sandbox:${item.conversationId}:m1:answer`);
      assert.equal(row.status, 'held', 'still held for people (replyflow reconcile lists it)');
      await acceptedOnce(item.handle.workflowId);
    });
  }
});
