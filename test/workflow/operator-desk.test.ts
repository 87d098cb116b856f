// Every branch of the event workflow's operator desk (workflows/operator-desk.ts), on the
// time-skipping server with stubbed activities: no PostgreSQL, no target, so each test scripts what
// the send and the resend check report, and asserts what the workflow did about it: its state, the
// results it recorded, the audit rows and alerts it wrote, and whether it sent again.

import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Activities, Alert } from '../../activities';
import type { ResultInput } from '../../activities/effects';
import type { AuditRow } from '../../activities/operations';
import {
  isRefusedPayload,
  type Plan,
  type ResendCheck,
  type SendOutcome,
  type TargetCapabilities,
} from '../../src/model';
import { updateVerdict } from '../../src/operator/decisions';
import { dataConverter } from '../../src/temporal/client';
import type { handleEvent } from '../../workflows';
import {
  approveUpdate,
  type DecisionInput,
  type DecisionName,
  type ReplyState,
  reprocessUpdate,
  resolveSignal,
  resolveUpdate,
  statusQuery,
} from '../../workflows/messages';
import { eventually } from '../support/eventually';
import { TEST_ENCRYPTION_KEY, timeSkipping, workflowBundle } from '../support/servers';
import { FAST_POLICY, sandboxEvent, uniqueId } from '../support/system';
import { waitForState } from '../support/workflows';

const BLIND: TargetCapabilities = { idempotencyKey: false, lookup: false, consistencyDelayMs: 0 };
const UNKNOWN: SendOutcome = {
  result: 'unknown',
  reason: 'connection reset',
  leaseExpiresAt: '',
  attempts: 1,
};
const FAILED: SendOutcome = {
  result: 'failed',
  errorClass: 'permanent',
  error: 'target: not found (404)',
  fix: 'check the destination, then reprocess',
  attempts: 1,
};
const SENT: SendOutcome = { result: 'succeeded', externalId: 'ext-sent', attempts: 2 };

/** What a test scripts, and what the workflow asked of its activities. */
class Script {
  sends: SendOutcome[] = [];
  resendChecks: ResendCheck[] = [];
  sent = 0;
  results: ResultInput[] = [];
  audit: AuditRow[] = [];
  alerts: Alert[] = [];
  outcomes: string[] = [];
  alertsDown = false;
  verified = 0;

  activities(): Partial<Activities> {
    const plan: Plan = {
      effects: [
        {
          integration: 'sandbox',
          businessKey: 'desk-test',
          steps: [{ name: 'reply', target: 'sandbox-blind', destination: {}, content: { kind: 'reply' } }],
        },
      ],
      policy: { ...FAST_POLICY, failedParkMs: 24 * 3_600_000 },
    };
    return {
      // Sealed here means `seal: "as:<operator>"`: the seal itself is checked by the real activity
      // (test/integration/operator-trust.test.ts); these tests are about what the desk does next.
      verifyDecision: async ({ payload }) => {
        const p = payload as Partial<DecisionInput>;
        if (isRefusedPayload(payload)) return { ok: false, reason: payload.replyflowRefusedPayload };
        if (typeof p.seal !== 'string' || !p.seal.startsWith('as:'))
          return {
            ok: false,
            reason: 'unsealed: decide through the codec server, logged in',
            action: p.action,
          };
        this.verified += 1;
        return {
          ok: true,
          operator: p.seal.slice(3),
          requestId: `request-${this.verified}`,
          body: { action: p.action, reason: p.reason, externalId: p.externalId },
        };
      },
      admitEvent: async () => ({ firstTime: true, plan }),
      claimEffect: async (input) => ({
        kind: 'owned',
        effectId: input.effectId,
        status: 'claimed',
        capabilities: BLIND,
      }),
      prepareReply: async () => ({ text: 'the answer' }),
      send: async () => {
        this.sent += 1;
        return this.sends.shift() ?? SENT;
      },
      recordResult: async (input) => {
        this.results.push(input);
        return { recorded: true, status: input.status };
      },
      prepareResend: async () => this.resendChecks.shift() ?? { kind: 'ready' },
      writeAudit: async (row) => {
        this.audit.push(row);
      },
      writeAudits: async (rows) => {
        this.audit.push(...rows);
      },
      alert: async (alert) => {
        if (this.alertsDown) throw ApplicationFailure.nonRetryable('alert webhook answered 503');
        this.alerts.push(alert);
      },
      recordOutcome: async ({ outcome }) => {
        this.outcomes.push(outcome);
      },
    };
  }

  auditTrail() {
    return this.audit.map((a) => [a.action, a.actor, a.stateBefore, a.stateAfter, a.result]);
  }
}

describe('operator desk: every decision on held and failed work (time-skipping server, stubbed activities)', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let script: Script;
  let worker: Worker;
  let running: Promise<void>;
  let connection: NativeConnection;
  const taskQueue = uniqueId('q-desk-');

  before(async () => {
    env = await timeSkipping();
    connection = await NativeConnection.connect({ address: env.address });
    worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      // Each activity asks the current test's script when it runs.
      activities: Object.fromEntries(
        Object.keys(new Script().activities()).map((name) => [
          name,
          (...args: unknown[]) =>
            (script.activities()[name as keyof Activities] as (...a: unknown[]) => unknown)(...args),
        ]),
      ),
      dataConverter: dataConverter(TEST_ENCRYPTION_KEY),
    });
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await connection?.close();
  });
  beforeEach(() => {
    script = new Script();
  });

  const start = () => {
    const event = sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' });
    return env.client.workflow.start<typeof handleEvent>('handleEvent', {
      workflowId: event.workflowId,
      taskQueue,
      args: [{ ...event, conversation: undefined }],
    });
  };
  /** A workflow whose first send ended as `outcome`, now waiting in `state`. */
  const waitingIn = async (outcome: SendOutcome, state: ReplyState) => {
    script.sends.push(outcome);
    const handle = await start();
    await waitForState(handle, state);
    return handle;
  };
  const audited = (count: number) => eventually(`${count} audit rows`, () => script.audit.length >= count);
  const UPDATES = { resolve: resolveUpdate, approve: approveUpdate, reprocess: reprocessUpdate };
  /** A decision as `operator`, by update. @returns the verdict. */
  const decideAs = (
    handle: Awaited<ReturnType<typeof start>>,
    operator: string,
    decision: DecisionName,
    body: Omit<DecisionInput, 'workflowId'>,
  ) =>
    updateVerdict(
      handle.executeUpdate(UPDATES[decision], {
        args: [{ ...body, workflowId: handle.workflowId, seal: `as:${operator}` }],
      }),
    );

  describe('held', () => {
    it('mark-sent records the external id as an operator result and succeeds without sending', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      await decideAs(handle, 'alice', 'resolve', {
        action: 'mark-sent',
        reason: 'seen in the chat',
        externalId: 'ext-42',
      });
      const result = await handle.result();
      assert.equal(result.state, 'succeeded');
      assert.deepEqual(result.effects[0]?.externalId, 'ext-42');
      assert.equal(script.sent, 1);
      assert.deepEqual(script.results.at(-1), {
        effectId: result.effects[0]!.effectId,
        status: 'succeeded',
        externalId: 'ext-42',
        manual: true,
      });
      assert.deepEqual(script.auditTrail(), [
        ['mark-sent', 'alice', 'held', 'succeeded', 'accepted: marked sent as ext-42'],
      ]);
      assert.deepEqual(script.outcomes, ['succeeded']);
    });

    it('discard records the discard and ends discarded, saying an operator did it', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      await decideAs(handle, 'carol', 'resolve', {
        action: 'discard',
        reason: 'answered by phone',
      });
      const result = await handle.result();
      assert.equal(result.state, 'discarded');
      assert.equal(result.reason, 'discarded by an operator');
      assert.equal(script.results.at(-1)?.status, 'discarded');
      assert.deepEqual(script.auditTrail(), [['discard', 'carol', 'held', 'discarded', 'accepted']]);
      assert.equal(script.sent, 1);
    });

    it('a resend waits for a different person: self-approval and a second request are refused', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      await decideAs(handle, 'alice', 'resolve', { action: 'resend', reason: 'nothing arrived' });
      const awaiting = await waitForState(handle, 'awaiting_approval');
      assert.deepEqual(awaiting.pendingResend, { operator: 'alice', reason: 'nothing arrived' });
      assert.match(awaiting.recommendedAction ?? '', /different operator approves/);
      await decideAs(handle, 'alice', 'approve', { reason: 'approving my own' });
      await decideAs(handle, 'bob', 'resolve', { action: 'resend', reason: 'me too' });
      await audited(3);
      assert.equal(script.sent, 1, 'nothing sent before a valid approval');
      await decideAs(handle, 'bob', 'approve', { reason: 'checked the chat log' });
      const result = await handle.result();
      assert.equal(result.state, 'succeeded');
      assert.equal(script.sent, 2, 'one resend after the approval');
      assert.deepEqual(script.auditTrail(), [
        ['resend', 'alice', 'held', 'awaiting_approval', 'accepted: awaiting approval'],
        [
          'approve',
          'alice',
          'awaiting_approval',
          'awaiting_approval',
          'rejected: the approver must be a different person from the operator who asked for the resend',
        ],
        [
          'resend',
          'bob',
          'awaiting_approval',
          'awaiting_approval',
          'rejected: a resend already awaits approval',
        ],
        ['approve', 'bob', 'awaiting_approval', 'processing', 'accepted: resend approved'],
      ]);
      assert.equal(script.audit[3]?.approver, 'bob');
    });

    it('an approved resend that finds the reply already sent succeeds without sending', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      script.resendChecks.push({ kind: 'already-sent', externalId: 'ext-found' });
      await decideAs(handle, 'alice', 'resolve', { action: 'resend', reason: 'nothing arrived' });
      await decideAs(handle, 'bob', 'approve', { reason: 'ok' });
      const result = await handle.result();
      assert.equal(result.state, 'succeeded');
      assert.equal(result.effects[0]?.externalId, 'ext-found');
      assert.equal(script.sent, 1);
      assert.deepEqual(script.auditTrail().at(-1), [
        'approve',
        'bob',
        'awaiting_approval',
        'succeeded',
        'accepted: found already sent (ext-found): no resend',
      ]);
    });

    it('an approval the resend check refuses holds the item again, and it can still be decided', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      script.resendChecks.push({ kind: 'wait', detail: 'a send attempt holds the lease' });
      await decideAs(handle, 'alice', 'resolve', { action: 'resend', reason: 'nothing arrived' });
      await decideAs(handle, 'bob', 'approve', { reason: 'ok' });
      await audited(2);
      const view = await waitForState(handle, 'held');
      assert.equal(view.pendingResend, undefined);
      assert.equal(script.sent, 1);
      await decideAs(handle, 'alice', 'resolve', { action: 'discard', reason: 'give up' });
      assert.equal((await handle.result()).state, 'discarded');
      assert.deepEqual(script.auditTrail().slice(1), [
        ['approve', 'bob', 'awaiting_approval', 'held', 'rejected: a send attempt holds the lease'],
        ['discard', 'alice', 'held', 'discarded', 'accepted'],
      ]);
    });

    it('discard while a resend awaits approval is accepted', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      await decideAs(handle, 'alice', 'resolve', { action: 'resend', reason: 'nothing arrived' });
      await decideAs(handle, 'bob', 'resolve', { action: 'discard', reason: 'handled by hand' });
      assert.equal((await handle.result()).state, 'discarded');
      assert.deepEqual(script.auditTrail().at(-1), [
        'discard',
        'bob',
        'awaiting_approval',
        'discarded',
        'accepted',
      ]);
    });

    it('reminds with rising levels while nobody decides, and never resolves on its own', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      await env.sleep('6 hours');
      assert.equal((await handle.query(statusQuery)).state, 'held');
      await decideAs(handle, 'carol', 'resolve', { action: 'discard', reason: 'done' });
      await handle.result();
      const mine = script.alerts.filter((a) => a.workflowId === handle.workflowId);
      // held at once, then 15 min, 1 h, 4 h (the last interval repeats).
      assert.deepEqual(
        mine.map((a) => [a.kind, a.level]),
        [
          ['held', 0],
          ['reminder', 1],
          ['reminder', 2],
          ['reminder', 3],
        ],
      );
      assert.match(mine[0]!.recommendedAction ?? '', /cannot be asked/);
    });

    it('stays held and decidable when every alert fails', async () => {
      script.alertsDown = true;
      const handle = await waitingIn(UNKNOWN, 'held');
      await env.sleep('2 hours');
      await decideAs(handle, 'a', 'resolve', {
        action: 'mark-sent',
        reason: 'seen',
        externalId: 'x',
      });
      assert.equal((await handle.result()).state, 'succeeded');
      assert.equal(script.alerts.length, 0);
    });
  });

  describe('failed', () => {
    it('reprocess sends again through the same protocol', async () => {
      const handle = await waitingIn(FAILED, 'failed');
      const failed = await handle.query(statusQuery);
      assert.equal(failed.lastErrorClass, 'permanent');
      assert.equal(failed.recommendedAction, FAILED.fix);
      await decideAs(handle, 'alice', 'reprocess', { reason: 'destination fixed' });
      assert.equal((await handle.result()).state, 'succeeded');
      assert.equal(script.sent, 2);
      assert.deepEqual(script.auditTrail(), [['reprocess', 'alice', 'failed', 'processing', 'accepted']]);
    });

    it('a reprocess that finds the reply already sent succeeds without sending', async () => {
      const handle = await waitingIn(FAILED, 'failed');
      script.resendChecks.push({ kind: 'already-sent', externalId: 'ext-found' });
      await decideAs(handle, 'alice', 'reprocess', { reason: 'try again' });
      assert.equal((await handle.result()).state, 'succeeded');
      assert.equal(script.sent, 1);
      assert.deepEqual(script.auditTrail(), [
        ['reprocess', 'alice', 'failed', 'succeeded', 'accepted: found already sent (ext-found)'],
      ]);
    });

    it('a reprocess the resend check refuses leaves the work failed', async () => {
      const handle = await waitingIn(FAILED, 'failed');
      script.resendChecks.push({ kind: 'wait', detail: 'check it by hand' });
      await decideAs(handle, 'alice', 'reprocess', { reason: 'try again' });
      await audited(1);
      assert.equal((await handle.query(statusQuery)).state, 'failed');
      await decideAs(handle, 'alice', 'resolve', { action: 'discard', reason: 'give up' });
      assert.equal((await handle.result()).state, 'discarded');
      assert.equal(script.sent, 1);
      assert.deepEqual(script.auditTrail(), [
        ['reprocess', 'alice', 'failed', 'failed', 'rejected: check it by hand'],
        ['discard', 'alice', 'failed', 'discarded', 'accepted'],
      ]);
    });

    it('refuses a resend of failed work: that is what reprocess is for', async () => {
      const handle = await waitingIn(FAILED, 'failed');
      await decideAs(handle, 'alice', 'resolve', { action: 'resend', reason: 'again' });
      await audited(1);
      await decideAs(handle, 'alice', 'resolve', { action: 'discard', reason: 'done' });
      await handle.result();
      assert.deepEqual(script.auditTrail()[0], [
        'resend',
        'alice',
        'failed',
        'failed',
        'rejected: failed work is sent again with reprocess, not resend',
      ]);
    });

    it('fails the workflow once nobody decided within the park time, and records the outcome', async () => {
      const handle = await waitingIn(FAILED, 'failed');
      const err = await handle.result().then(
        () => assert.fail('the workflow should fail'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof WorkflowFailedError);
      assert.ok(err.cause instanceof ApplicationFailure);
      assert.equal(err.cause.type, 'EffectFailed');
      assert.match(err.cause.message, /effect desk-test failed: target: not found \(404\)/);
      assert.deepEqual(script.outcomes, ['failed']);
      assert.equal(script.sent, 1);
    });
  });

  describe('messages that decide nothing', () => {
    it('rejects unverified and invalid decisions, each with its reason, and changes nothing', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      const unsealed = await updateVerdict(
        handle.executeUpdate(resolveUpdate, {
          args: [{ workflowId: handle.workflowId, action: 'discard', reason: 'no seal' }],
        }),
      );
      const verdicts = [
        unsealed,
        await decideAs(handle, 'dave', 'resolve', { action: 'explode' as never, reason: 'x' }),
        await decideAs(handle, 'dave', 'resolve', { action: 'discard', reason: '' }),
        await decideAs(handle, 'dave', 'resolve', { action: 'mark-sent', reason: 'no id' }),
        await decideAs(handle, 'erin', 'approve', { reason: 'nothing pending' }),
        await decideAs(handle, 'erin', 'reprocess', { reason: 'not failed' }),
      ];
      assert.deepEqual(verdicts, [
        'Rejected: unsealed: decide through the codec server, logged in',
        'Rejected: action must be one of mark-sent, resend, discard',
        'Rejected: reason is required (at most 500 characters)',
        'Rejected: mark-sent needs the externalId of the message that was sent',
        'Rejected: no resend awaits approval (state held)',
        'Rejected: only failed work can be reprocessed (state held)',
      ]);
      assert.equal(script.audit[0]?.actor, '(unverified)');
      assert.ok(script.audit.every((a) => a.stateAfter === 'held'));
      assert.equal(script.results.length, 1, 'only the held result: nothing decided');
      await decideAs(handle, 'dave', 'resolve', { action: 'discard', reason: 'cleanup' });
      assert.equal((await handle.result()).state, 'discarded');
    });

    it('judges a sealed decision sent as a signal like an update, and rejects an unsealed one', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      await handle.signal(resolveSignal, {
        workflowId: handle.workflowId,
        action: 'discard',
        reason: 'no seal',
      });
      await audited(1);
      assert.equal((await handle.query(statusQuery)).state, 'held');
      await handle.signal(resolveSignal, {
        workflowId: handle.workflowId,
        action: 'discard',
        reason: 'sealed',
        seal: 'as:carol',
      });
      assert.equal((await handle.result()).state, 'discarded');
      assert.deepEqual(script.auditTrail(), [
        [
          'discard',
          '(unverified)',
          'held',
          'held',
          'rejected: unsealed: decide through the codec server, logged in',
        ],
        ['discard', 'carol', 'held', 'discarded', 'accepted'],
      ]);
    });

    it('answers a decision still queued when another one settled the item', async () => {
      const handle = await waitingIn(UNKNOWN, 'held');
      const verdicts = await Promise.all([
        decideAs(handle, 'alice', 'resolve', { action: 'discard', reason: 'first' }),
        decideAs(handle, 'bob', 'resolve', { action: 'mark-sent', reason: 'second', externalId: 'x' }),
      ]);
      assert.equal(
        (await handle.result()).state,
        verdicts[0].startsWith('Accepted') ? 'discarded' : 'succeeded',
      );
      assert.deepEqual(verdicts.map((v) => v.split(':')[0]).sort(), ['Accepted', 'Rejected']);
      assert.ok(verdicts.some((v) => v.startsWith('Rejected: nothing awaits a decision')));
      assert.equal(script.results.filter((r) => r.status !== 'held').length, 1);
    });
  });
});
