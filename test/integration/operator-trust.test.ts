// Who may decide, tried as an attacker would, with nothing but access to Temporal: the `temporal`
// CLI against the same dev server, plain JSON, hand-made seals, captured ciphertext. Each attack must
// end with no send, no change of state, and an audit row saying why; the legitimate path (two
// operators, each proven by their seal) must still work. Real dev server, PostgreSQL and HTTP.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure, type WorkflowHandle, WorkflowUpdateFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createOperatorStore } from '../../src/db/operators';
import { Failure } from '../../src/failures';
import { updateVerdict } from '../../src/operator/decisions';
import { type DecisionInput, resolveUpdate, statusQuery } from '../../workflows/messages';
import { eventually } from '../support/eventually';
import { decide, sealFor, type TestOperator, testOperator } from '../support/operators';
import { database } from '../support/servers';
import { sandboxEvent, uniqueId, workerSuite } from '../support/system';
import { temporalCli } from '../support/temporal-cli';
import { auditRows, effectRows, heldItem as heldSandboxItem } from '../support/workflows';

const UPDATE_COMPLETED =
  temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage
    .UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;

describe('operator decisions an attacker cannot make (dev server, PostgreSQL, the temporal CLI)', function () {
  this.timeout(180_000);
  const suite = workerSuite();
  let alice: TestOperator;
  let bob: TestOperator;
  /** Holds every role, approve included: the two-person rule must still stop her. */
  let dana: TestOperator;

  before(async () => {
    [alice, bob, dana] = await Promise.all([
      testOperator(['resend', 'mark-sent', 'discard', 'reprocess']),
      testOperator(['approve']),
      testOperator(['resend', 'mark-sent', 'discard', 'reprocess', 'approve']),
    ]);
  });

  /** A held workflow whose reply the blind target committed and whose answer was lost. */
  const heldItem = () => heldSandboxItem(suite);

  /** Nothing was sent again, the row and the workflow still say `state`. */
  async function unchanged(item: Awaited<ReturnType<typeof heldItem>>, state = 'held') {
    assert.equal(suite.fake.sendsFor(item.effectId).length, 1, 'no second request to the target');
    const [row] = await effectRows(`chat:sandbox:${item.conversationId}:m1:answer`);
    assert.equal(row.status, 'held');
    assert.equal((await item.handle.query(statusQuery)).state, state);
  }

  const rejections = async (handle: WorkflowHandle) =>
    (await auditRows(handle.workflowId)).filter((a) => String(a.result).startsWith('rejected'));

  /** Ends a test's item so that it leaves nothing running. */
  const discard = async (handle: WorkflowHandle) => {
    await decide(handle, alice, 'resolve', { action: 'discard', reason: 'test over' });
    await handle.result();
  };

  it('refuses plain-JSON signals and updates sent with the temporal CLI, under any name, and audits them', async () => {
    const item = await heldItem();
    const id = item.handle.workflowId;
    await temporalCli([
      'workflow',
      'signal',
      '--workflow-id',
      id,
      '--name',
      'resolve',
      '--input',
      JSON.stringify({ action: 'resend', operator: alice.account.name, reason: 'x' }),
    ]);
    await temporalCli([
      'workflow',
      'signal',
      '--workflow-id',
      id,
      '--name',
      'approve',
      '--input',
      JSON.stringify({ approver: bob.account.name, reason: 'y' }),
    ]);
    const update = await temporalCli([
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      id,
      '--name',
      'resolve',
      '--input',
      JSON.stringify({ workflowId: id, action: 'mark-sent', reason: 'z', externalId: 'made-up' }),
    ]);
    // The verdict comes back encrypted, which the attacker's CLI cannot read; the audit log can.
    assert.doesNotMatch(update.out, /Accepted/);
    const rows = await eventually('three audited refusals', async () => {
      const r = await rejections(item.handle);
      return r.length >= 3 && r;
    });
    assert.deepEqual(
      rows.map((r) => [r.actor, r.action, r.result]),
      [
        // A refused payload is not even read: what it asked for stays unknown.
        ['(unverified)', '(missing)', 'rejected: plaintext: not encrypted by a known key'],
        ['(unverified)', 'approve', 'rejected: plaintext: not encrypted by a known key'],
        ['(unverified)', '(missing)', 'rejected: plaintext: not encrypted by a known key'],
      ],
    );
    await unchanged(item);
    await discard(item.handle);
  });

  it('fails a plaintext handleEvent start before anything is recorded or sent', async () => {
    const conversationId = uniqueId('c');
    const event = sandboxEvent({ conversationId, messageId: 'm1' });
    const started = await temporalCli([
      'workflow',
      'start',
      '--type',
      'handleEvent',
      '--task-queue',
      suite.config.TEMPORAL_TASK_QUEUE,
      '--workflow-id',
      event.workflowId,
      '--input',
      JSON.stringify(event),
    ]);
    assert.ok(started.ok, started.out);
    const handle = suite.temporal.client.workflow.getHandle(event.workflowId);
    const closed = await eventually('the plaintext start closes', async () => {
      const { status } = await handle.describe();
      return status.name !== 'RUNNING' && status.name;
    });
    assert.equal(closed, 'FAILED');
    await assert.rejects(handle.result(), (err: Error) => {
      assert.match(String((err.cause as Error | undefined)?.message), /^event input refused: plaintext/);
      return true;
    });
    const { pool } = await database();
    const ledger = await pool.query('SELECT 1 FROM events WHERE event_id = $1', [event.eventId]);
    assert.equal(ledger.rowCount, 0, 'not even in the ledger');
    assert.equal((await effectRows(`chat:sandbox:${conversationId}`)).length, 0);
    assert.equal(suite.fake.deliveredTo(conversationId).length, 0, 'no bot reply');
  });

  it('lets no operator approve their own resend, whatever the body says', async () => {
    const item = await heldItem();
    assert.equal(
      await decide(item.handle, dana, 'resolve', { action: 'resend', reason: 'nothing arrived' }),
      'Accepted: awaiting approval',
    );
    const selfApproval = sealFor(
      dana.account,
      {
        workflowId: item.handle.workflowId,
        reason: 'looks fine',
        ...({ approver: bob.account.name } as object),
      } as DecisionInput,
      { hold: (await item.handle.query(statusQuery)).hold },
    );
    // A refusal is a failed Update (what the Web UI shows as failed), its reason the message.
    await assert.rejects(
      item.handle.executeUpdate('approve', { args: [selfApproval] }),
      (err: unknown) =>
        err instanceof WorkflowUpdateFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === Failure.DecisionRejected &&
        err.cause.message ===
          'the approver must be a different person from the operator who asked for the resend',
    );
    await unchanged(item, 'awaiting_approval');
    assert.equal(
      await decide(item.handle, bob, 'approve', { reason: 'checked the conversation' }),
      'Accepted: resend approved',
    );
    assert.equal((await item.handle.result()).state, 'succeeded');
    const audit = await auditRows(item.handle.workflowId);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.approver, String(a.result).split(':')[0]]),
      [
        [dana.account.name, 'resend', null, 'accepted'],
        [dana.account.name, 'approve', dana.account.name, 'rejected'],
        [bob.account.name, 'approve', bob.account.name, 'accepted'],
      ],
    );
  });

  it('refuses a captured sealed decision on another workflow, and a second time on its own', async () => {
    const first = await heldItem();
    const second = await heldItem();
    assert.equal(
      await decide(first.handle, alice, 'resolve', { action: 'resend', reason: 'nothing arrived' }),
      'Accepted: awaiting approval',
    );
    // What anyone with access to Temporal can read: the ciphertext of the accepted update.
    const history = await first.handle.fetchHistory();
    const captured = history.events
      ?.map(
        (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0],
      )
      .find((p) => p);
    assert.ok(captured, 'the sealed decision is in the history');
    /** Sends the captured ciphertext as-is, as a new update, to `handle`'s workflow. @returns the verdict. */
    const replay = async (handle: WorkflowHandle) => {
      const response = await suite.temporal.connection.workflowService.updateWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: handle.workflowId },
        waitPolicy: { lifecycleStage: UPDATE_COMPLETED },
        request: {
          meta: { updateId: randomUUID() },
          input: { name: 'resolve', args: { payloads: [captured] } },
        },
      });
      // A refusal is a failed update; its message is the reason.
      const { failure } = response.outcome!;
      if (failure) return `Rejected: ${failure.message}`;
      const converter = suite.temporal.client.options.loadedDataConverter;
      const [decoded] = await converter.payloadCodecs[0]!.decode([response.outcome!.success!.payloads![0]!]);
      return converter.payloadConverter.fromPayload<string>(decoded!);
    };
    assert.equal(
      await replay(second.handle),
      `Rejected: sealed for another workflow (${first.handle.workflowId})`,
    );
    assert.equal(await replay(first.handle), 'Rejected: replayed: this sealed decision was used before');
    await unchanged(second);
    assert.equal((await first.handle.query(statusQuery)).state, 'awaiting_approval');
    assert.equal((await rejections(second.handle)).length, 1);
    assert.equal((await rejections(first.handle)).length, 1);
    await discard(first.handle);
    await discard(second.handle);
  });

  it('refuses forged, expired, revoked and unpermitted decisions, each with its reason', async () => {
    const item = await heldItem();
    const workflowId = item.handle.workflowId;
    const discardBody = { workflowId, action: 'discard' as const, reason: 'tidy up' };
    const send = (input: DecisionInput) =>
      updateVerdict(item.handle.executeUpdate(resolveUpdate, { args: [input] }));
    const store = createOperatorStore((await database()).adminPool);

    const forged = await send(
      sealFor(alice.account, discardBody, { key: Buffer.alloc(32, 9).toString('base64') }),
    );
    const unsealed = await send(discardBody);
    const changed = await send({
      ...sealFor(alice.account, discardBody),
      action: 'mark-sent',
      externalId: 'x',
    });
    const expired = await send(sealFor(alice.account, discardBody, { issuedAt: Date.now() - 11 * 60_000 }));
    const misbound = await send(sealFor(alice.account, discardBody, { sealedFor: 'webhook:sandbox:other' }));
    const noRole = await send(sealFor(bob.account, discardBody));
    const rotated = await testOperator(['discard']);
    await store.rotate(rotated.account.name, { by: 'test' });
    const afterRotation = await send(sealFor(rotated.account, discardBody));
    const disabled = await testOperator(['discard']);
    await store.disable(disabled.account.name, { by: 'test' });
    const afterDisable = await send(sealFor(disabled.account, discardBody));

    assert.match(expired, /^Rejected: expired: sealed 66\d s ago, decisions live 600 s$/);
    assert.deepEqual(
      [forged, unsealed, changed, misbound, noRole, afterRotation, afterDisable],
      [
        'Rejected: forged: the seal does not verify',
        'Rejected: unsealed: decide through the codec server, logged in',
        'Rejected: forged: the decision was changed after it was sealed',
        'Rejected: sealed for another workflow (webhook:sandbox:other)',
        `Rejected: not permitted: ${bob.account.name} does not have the discard role`,
        `Rejected: revoked: ${rotated.account.name}'s token was rotated after this decision was sealed`,
        `Rejected: revoked: operator ${disabled.account.name} is disabled`,
      ],
    );
    assert.equal((await rejections(item.handle)).length, 8);
    await unchanged(item);
    await discard(item.handle);
  });
});
