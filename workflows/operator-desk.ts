// The operator desk of one event workflow: operator messages queue in its inbox; while the effect is
// held or failed it alerts, reminds, and applies each message the judge (workflows/operator.ts)
// accepts; every message, accepted or not, is recorded in the status view and the audit log.
import { condition, log, workflowInfo } from '@temporalio/workflow';
import { errorMessage } from '../src/failures';
import { alerts, records } from './activity-stubs';
import type { Decision, EffectContext, Settled } from './effect-context';
import type { DecisionName, OperatorDecision, ReplyState } from './messages';
import { actionOf, judge, type OperatorMessage } from './operator';
import type { RunView } from './run-view';

/** Failed work nobody reprocessed or discarded within the policy's park time. */
export class ParkExpired extends Error {
  override name = 'ParkExpired';
}

type Waiting = 'held' | 'failed';

/** A message waiting to be judged, and how to answer its sender (an update waits for the verdict). */
interface Entry {
  message: OperatorMessage;
  arrivedIn: ReplyState;
  answer?: (verdict: string) => void;
}

const DECIDABLE: readonly ReplyState[] = ['held', 'awaiting_approval', 'failed'];

export class OperatorDesk {
  /** Every message judged so far, for the status query. */
  readonly history: OperatorDecision[] = [];
  private readonly inbox: Entry[] = [];
  private readonly seenRequestIds = new Set<string>();
  /** Who asked for the resend that awaits approval. */
  private resendRequestedBy?: string;
  private signalsReceived = 0;

  constructor(private readonly run: RunView) {}

  /**
   * A decision, by update or signal: its seal is verified (and its single use recorded) by an
   * activity, which also checks the operator's current roles; then it is judged while something
   * awaits a decision. Anything else is rejected at once and audited.
   * @param delivery what delivered it: the update's id, or this run's count of decision signals.
   * @returns the verdict, `Accepted: …` or `Rejected: …`.
   */
  async decide(signal: DecisionName, payload: unknown, delivery: string): Promise<string> {
    const verified = await records.verifyDecision({
      decision: signal,
      payload,
      workflowId: workflowInfo().workflowId,
      delivery,
    });
    const state = this.run.state;
    if (!verified.ok) {
      // Who a verified seal names is on the record even when the decision is refused (expired, no
      // role); a seal that does not verify names nobody.
      const unverified: OperatorMessage = {
        signal,
        payload: { action: verified.action },
        actor: verified.operator ?? '(unverified)',
      };
      return this.record(
        { message: unverified, arrivedIn: state },
        'rejected',
        verified.reason,
        state,
        state,
      );
    }
    const message: OperatorMessage = {
      signal,
      payload: verified.body,
      actor: verified.operator,
      requestId: verified.requestId,
      hold: verified.hold,
    };
    if (!DECIDABLE.includes(state)) {
      const detail = `nothing awaits a decision in state ${state}`;
      return this.record({ message, arrivedIn: state }, 'rejected', detail, state, state);
    }
    return new Promise((answer) => this.inbox.push({ message, arrivedIn: state, answer }));
  }

  /** The delivery name of the next decision signal: deterministic, and different for each one. */
  nextSignalDelivery(): string {
    this.signalsReceived += 1;
    return `signal:${this.signalsReceived}`;
  }

  /**
   * A signal as runs started before sealed decisions queued it, unverified: only the histories
   * recorded then take this path when they replay.
   */
  receiveUnsealed(message: OperatorMessage): void {
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
      const entry = this.inbox.shift()!;
      const { requestId } = entry.message;
      const detail =
        requestId && this.seenRequestIds.has(requestId)
          ? `repeated requestId ${requestId}`
          : `nothing awaits a decision in state ${entry.arrivedIn}`;
      await this.record(entry, 'rejected', detail, this.run.state, this.run.state);
    }
  }

  /** Judges and applies the oldest message. @returns the decision, or undefined to keep waiting. */
  private async judgeNext(ctx: EffectContext): Promise<Decision | undefined> {
    const entry = this.inbox.shift()!;
    const { message, arrivedIn } = entry;
    const before = this.run.state;
    const verdict = DECIDABLE.includes(arrivedIn)
      ? judge(message, {
          state: before,
          hold: this.run.hold(),
          seenRequestIds: this.seenRequestIds,
          resendRequestedBy: this.resendRequestedBy,
        })
      : { ok: false as const, detail: `nothing awaits a decision in state ${arrivedIn}` };
    if (!verdict.ok) {
      await this.record(entry, 'rejected', verdict.detail, before, before);
      return undefined;
    }
    switch (verdict.action) {
      case 'mark-sent': {
        const marked = await records.recordResult({
          effectId: ctx.effectId,
          status: 'succeeded',
          externalId: verdict.externalId,
          manual: true,
        });
        if (!marked.recorded && marked.status === 'discarded') return this.moved(entry, before, marked);
        this.run.setState('succeeded', { recommendedAction: undefined });
        await this.record(entry, 'accepted', `marked sent as ${verdict.externalId}`, before, 'succeeded');
        return { kind: 'done', state: 'succeeded', externalId: verdict.externalId };
      }
      case 'discard': {
        const discarded = await records.recordResult({
          effectId: ctx.effectId,
          status: 'discarded',
          manual: true,
        });
        if (!discarded.recorded && discarded.status !== 'discarded')
          return this.moved(entry, before, discarded);
        this.run.setState('discarded', { recommendedAction: undefined });
        await this.record(entry, 'accepted', undefined, before, 'discarded');
        this.run.details.reason = 'discarded by an operator';
        return { kind: 'done', state: 'discarded' };
      }
      case 'request-resend': {
        this.resendRequestedBy = message.actor;
        this.run.setState('awaiting_approval', {
          recommendedAction: 'a different operator approves the resend (the approve update)',
        });
        this.run.details.pendingResend = {
          operator: this.resendRequestedBy,
          reason: String((message.payload as { reason?: unknown }).reason),
        };
        await this.record(entry, 'accepted', 'awaiting approval', before, 'awaiting_approval');
        return undefined;
      }
      case 'approve-resend':
      case 'reprocess':
        return this.sendAgain(entry, verdict.action === 'approve-resend', ctx, before);
    }
  }

  /**
   * An approved resend or a reprocess. Either first re-reads the row and looks the result up again:
   * found → succeeded without sending; an attempt may still be live or unjudged → refused (an
   * approval is spent and the item is held again; failed work stays failed); else the row is back in
   * retry_wait and the same send protocol runs with the same key and text.
   */
  private async sendAgain(
    entry: Entry,
    approval: boolean,
    ctx: EffectContext,
    before: ReplyState,
  ): Promise<Decision | undefined> {
    const check = await records.prepareResend({
      effectId: ctx.effectId,
      step: ctx.step,
      holdAttempts: this.run.details.attempts,
    });
    if (approval) {
      this.run.details.pendingResend = undefined;
      this.resendRequestedBy = undefined;
    }
    if (check.kind === 'moved') return this.moved(entry, before, check);
    if (check.kind === 'already-sent') {
      this.run.setState('succeeded', { recommendedAction: undefined });
      const detail = `found already sent (${check.externalId})${approval ? ': no resend' : ''}`;
      await this.record(entry, 'accepted', detail, before, 'succeeded');
      return { kind: 'done', state: 'succeeded', externalId: check.externalId } satisfies Settled;
    }
    if (check.kind === 'wait') {
      if (approval) this.run.setState('held');
      await this.record(entry, 'rejected', check.detail, before, this.run.state);
      return undefined;
    }
    this.run.setState('processing');
    await this.record(entry, 'accepted', approval ? 'resend approved' : undefined, before, 'processing');
    return { kind: 'send-again' };
  }

  /**
   * The effect row is no longer where this run's hold says (a run a reset replaced acted on it, or
   * an attempt is under way): the decision changes nothing, is recorded as refused, and the run
   * takes the row's word for where the effect stands, so that the next decision answers that.
   * @returns the end, when the row has one; else undefined: wait for a decision about the new hold.
   */
  private async moved(
    entry: Entry,
    before: ReplyState,
    row: { status: string; attempts?: number },
  ): Promise<Decision | undefined> {
    const answered = this.run.hold();
    if (row.attempts !== undefined) this.run.details.attempts = row.attempts;
    this.run.details.pendingResend = undefined;
    this.resendRequestedBy = undefined;
    const since = `this decision answered hold ${answered}, but the effect has moved on (${row.status} after ${this.run.details.attempts} attempt(s))`;
    if (row.status === 'succeeded' || row.status === 'discarded') {
      const state = row.status;
      this.run.setState(state, { recommendedAction: undefined });
      await this.record(entry, 'rejected', `${since}: nothing left to decide`, before, state);
      return { kind: 'done', state };
    }
    if (row.status === 'held' || row.status === 'failed') {
      this.run.setState(row.status, {
        recommendedAction:
          row.status === 'held'
            ? 'check the target, then mark-sent (with its id) or resend (needs approval)'
            : 'see the last error; reprocess when fixed',
      });
      await this.record(entry, 'rejected', `${since}: decide again`, before, row.status);
      return undefined;
    }
    // An attempt is under way, or its outcome not judged yet: look again once it settled.
    if (before === 'awaiting_approval') this.run.setState('held');
    await this.record(entry, 'rejected', `${since}: look at it again later`, before, this.run.state);
    return undefined;
  }

  /**
   * Records a message's verdict in the status view and the append-only audit log, and answers its
   * sender. @returns the verdict as the sender sees it.
   */
  private async record(
    entry: Entry,
    result: 'accepted' | 'rejected',
    detail: string | undefined,
    before: ReplyState,
    after: ReplyState,
  ): Promise<string> {
    const { message } = entry;
    const { requestId } = message;
    if (requestId) this.seenRequestIds.add(requestId);
    const p = message.payload as Record<string, unknown> | undefined;
    const action = actionOf(message);
    const decision: OperatorDecision = {
      at: new Date().toISOString(),
      signal: message.signal,
      action,
      actor: message.actor,
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
    const verdict = result === 'accepted' ? `Accepted: ${detail ?? action}` : `Rejected: ${detail}`;
    entry.answer?.(verdict);
    return verdict;
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
