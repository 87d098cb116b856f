// The operator desk of one event workflow: operator messages queue in its inbox; while the effect is
// held or failed it alerts, reminds, and applies each message the judge (workflows/operator.ts)
// accepts; every message, accepted or not, is recorded in the status view and the audit log.
import { condition, log, workflowInfo } from '@temporalio/workflow';
import { errorMessage } from '../src/failures';
import { alerts, records } from './activity-stubs';
import type { Decision, EffectContext, Settled } from './effect-context';
import type { OperatorDecision, ReplyState } from './messages';
import { actorOf, judge, type OperatorMessage, requestIdOf } from './operator';
import type { RunView } from './run-view';

/** Failed work nobody reprocessed or discarded within the policy's park time. */
export class ParkExpired extends Error {
  override name = 'ParkExpired';
}

type Waiting = 'held' | 'failed';

export class OperatorDesk {
  /** Every message judged so far, for the status query. */
  readonly history: OperatorDecision[] = [];
  private readonly inbox: { message: OperatorMessage; arrivedIn: ReplyState }[] = [];
  private readonly seenRequestIds = new Set<string>();
  /** Who asked for the resend that awaits approval. */
  private resendRequestedBy?: string;

  constructor(private readonly run: RunView) {}

  /** A signal handler's whole job: queue the message with the state it arrived in. */
  receive(message: OperatorMessage): void {
    this.inbox.push({ message, arrivedIn: this.run.state });
  }

  /**
   * Held or failed: alert, then wait for an operator, reminding while nobody decides; never resolve
   * on its own. Failed work waits for the policy's park time.
   * @throws ParkExpired when failed work was left alone that long.
   */
  async awaitDecision(waitingIn: Waiting, ctx: EffectContext): Promise<Decision> {
    await this.alert(waitingIn, ctx.businessKey, 0);
    let reminders = 0;
    const parkedUntil = Date.now() + ctx.policy.failedParkMs;
    const { reminderScheduleMs } = ctx.policy;
    for (;;) {
      const timeout =
        this.run.state === 'failed'
          ? parkedUntil - Date.now()
          : reminderScheduleMs[Math.min(reminders, reminderScheduleMs.length - 1)]!;
      if (!(await condition(() => this.inbox.length > 0, Math.max(timeout, 1)))) {
        if (this.run.state === 'failed') {
          this.run.details.reason = 'nobody reprocessed or discarded it in time';
          throw new ParkExpired(
            `effect ${ctx.businessKey} failed: ${this.run.details.lastError ?? 'unknown error'}`,
          );
        }
        reminders += 1;
        await this.alert('reminder', ctx.businessKey, reminders);
        continue;
      }
      const decision = await this.judgeNext(ctx);
      if (decision) return decision;
    }
  }

  /** Messages that arrive while nothing awaits a decision change nothing, and are recorded so. */
  async rejectStray(): Promise<void> {
    while (this.inbox.length > 0) {
      const { message, arrivedIn } = this.inbox.shift()!;
      const requestId = requestIdOf(message);
      const detail =
        requestId && this.seenRequestIds.has(requestId)
          ? `repeated requestId ${requestId}`
          : `nothing awaits a decision in state ${arrivedIn}`;
      await this.record(message, 'rejected', detail, this.run.state, this.run.state);
    }
  }

  /** Judges and applies the oldest message. @returns the decision, or undefined to keep waiting. */
  private async judgeNext(ctx: EffectContext): Promise<Decision | undefined> {
    const { message, arrivedIn } = this.inbox.shift()!;
    const before = this.run.state;
    const verdict =
      arrivedIn === 'held' || arrivedIn === 'awaiting_approval' || arrivedIn === 'failed'
        ? judge(message, {
            state: before,
            seenRequestIds: this.seenRequestIds,
            resendRequestedBy: this.resendRequestedBy,
          })
        : { ok: false as const, detail: `nothing awaits a decision in state ${arrivedIn}` };
    if (!verdict.ok) {
      await this.record(message, 'rejected', verdict.detail, before, before);
      return undefined;
    }
    switch (verdict.action) {
      case 'mark-sent': {
        await records.recordResult({
          effectId: ctx.effectId,
          status: 'succeeded',
          externalId: verdict.externalId,
          manual: true,
        });
        this.run.setState('succeeded', { recommendedAction: undefined });
        await this.record(message, 'accepted', `marked sent as ${verdict.externalId}`, before, 'succeeded');
        return { kind: 'done', state: 'succeeded', externalId: verdict.externalId };
      }
      case 'discard': {
        await records.recordResult({ effectId: ctx.effectId, status: 'discarded', manual: true });
        this.run.setState('discarded', { recommendedAction: undefined });
        await this.record(message, 'accepted', undefined, before, 'discarded');
        this.run.details.reason = 'discarded by an operator';
        return { kind: 'done', state: 'discarded' };
      }
      case 'request-resend': {
        this.resendRequestedBy = actorOf(message);
        this.run.setState('awaiting_approval', {
          recommendedAction: 'a different person approves the resend (approve signal)',
        });
        this.run.details.pendingResend = {
          operator: this.resendRequestedBy,
          reason: String((message.payload as { reason?: unknown }).reason),
        };
        await this.record(message, 'accepted', 'awaiting approval', before, 'awaiting_approval');
        return undefined;
      }
      case 'approve-resend':
      case 'reprocess':
        return this.sendAgain(message, verdict.action === 'approve-resend', ctx, before);
    }
  }

  /**
   * An approved resend or a reprocess. Either first re-reads the row and looks the result up again:
   * found → succeeded without sending; an attempt may still be live or unjudged → refused (an
   * approval is spent and the item is held again; failed work stays failed); else the row is back in
   * retry_wait and the same send protocol runs with the same key and text.
   */
  private async sendAgain(
    message: OperatorMessage,
    approval: boolean,
    ctx: EffectContext,
    before: ReplyState,
  ): Promise<Decision | undefined> {
    const check = await records.prepareResend({ effectId: ctx.effectId, step: ctx.step });
    if (approval) {
      this.run.details.pendingResend = undefined;
      this.resendRequestedBy = undefined;
    }
    if (check.kind === 'already-sent') {
      this.run.setState('succeeded', { recommendedAction: undefined });
      const detail = `found already sent (${check.externalId})${approval ? ': no resend' : ''}`;
      await this.record(message, 'accepted', detail, before, 'succeeded');
      return { kind: 'done', state: 'succeeded', externalId: check.externalId } satisfies Settled;
    }
    if (check.kind === 'wait') {
      if (approval) this.run.setState('held');
      await this.record(message, 'rejected', check.detail, before, this.run.state);
      return undefined;
    }
    this.run.setState('processing');
    await this.record(message, 'accepted', approval ? 'resend approved' : undefined, before, 'processing');
    return { kind: 'send-again' };
  }

  /** Records a message's verdict in the status view and the append-only audit log. */
  private async record(
    message: OperatorMessage,
    result: 'accepted' | 'rejected',
    detail: string | undefined,
    before: ReplyState,
    after: ReplyState,
  ): Promise<void> {
    const requestId = requestIdOf(message);
    if (requestId) this.seenRequestIds.add(requestId);
    const p = message.payload as unknown as Record<string, unknown>;
    const action = message.signal === 'resolve' ? String(p?.action ?? '(missing)') : message.signal;
    const decision: OperatorDecision = {
      at: new Date().toISOString(),
      signal: message.signal,
      action,
      actor: actorOf(message),
      reason: typeof p?.reason === 'string' ? p.reason.slice(0, 500) : undefined,
      requestId,
      result,
      detail,
      stateBefore: before,
      stateAfter: after,
    };
    this.history.push(decision);
    await records.writeAudit({
      actor: decision.actor,
      approver: message.signal === 'approve' ? decision.actor : undefined,
      action,
      workflowId: workflowInfo().workflowId,
      businessKey: this.run.details.businessKey,
      stateBefore: before,
      stateAfter: after,
      reason: decision.reason,
      result: result === 'accepted' ? (detail ? `accepted: ${detail}` : 'accepted') : `rejected: ${detail}`,
      requestId,
    });
  }

  /**
   * Tells operators (log, alert webhook). An alert channel that stays down must not fail the
   * workflow: the item stays held or failed, visible by its search attributes, and the next reminder
   * tries again; `replyflow reconcile` lists held work without a delivered alert.
   */
  private async alert(kind: Waiting | 'reminder', businessKey: string, level: number): Promise<void> {
    const { step, recommendedAction, lastErrorClass } = this.run.details;
    try {
      await alerts.alert({
        kind,
        workflowId: workflowInfo().workflowId,
        businessKey,
        step,
        recommendedAction,
        errorClass: lastErrorClass,
        level,
      });
    } catch (err) {
      log.warn('alert not delivered', { kind, level, error: errorMessage(err) });
    }
  }
}
