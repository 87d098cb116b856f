// The operator desk of one event workflow: operator messages queue in its inbox; while the effect is
// held or failed it alerts, reminds, and applies each message the judge (workflows/operator.ts)
// accepts; every message, accepted or not, is recorded in the status view and the audit log. A wait
// whose history grows long (a flood of messages nobody can have sealed) goes on in a new run.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  log,
  patched,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { AuditRow } from '../activities/operations';
import { errorMessage, Failure } from '../src/failures';
import type { SendInput } from '../src/model';
import { alerts, records } from './activity-stubs';
import type { AnswerLeft, Decision, DeskSubject, EffectContext, Settled } from './effect-context';
import { ParkExpiredError } from './errors';
import type { DecisionName, OperatorDecision, ReplyState } from './messages';
import { actionOf, judge, type OperatorMessage, unverifiable, type Verdict } from './operator';
import { CHEAP_REFUSALS, RESEND_AS_TASK, REVOKED_TENANT_ENDS_HELD, VERDICT_BEFORE_SEND } from './patches';
import type { RunView } from './run-view';

/**
 * Who ends held work of a revoked tenant, and what it is called, in the status history and the audit
 * log: not an operator's `discard`, which the audit log accepts only with its sealed decision.
 */
export const REVOCATION_ACTOR = 'replyflow';
export const REVOCATION_ACTION = 'installation-revoked';
/** How a refusal's verdict begins; the rest is its reason. */
const REJECTED = 'Rejected: ';
/** How many audit rows one batch writes. */
const AUDIT_BATCH = 100;
/** How much of the operator history a run hands on when it continues as new. */
const HANDED_HISTORY = 50;
/** How long a run that must continue as new waits for running handlers first. */
const HANDLERS_GRACE_MS = 30_000;

/**
 * What a run waiting for a decision hands to the run it continues as new in: the wait goes on where
 * it was (the same reminders, park time, pending resend and body), the effect row says the rest.
 */
export interface Resumed {
  /** The effect the decision is about. */
  effectId: string;
  /** The body prepared for it, so that the responder is not asked again. */
  body?: SendInput['body'];
  /** The answer's later messages not yet sent (each its own effect). */
  answer?: AnswerLeft;
  reminders: number;
  /** When the next reminder is due, or failed work stops waiting (ms since the epoch). */
  nextReminderAt?: number;
  parkedUntil?: number;
  pendingResend?: { operator: string; reason: string };
  /** The latest part of the operator history, for the status query. */
  operatorHistory: OperatorDecision[];
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
  /** Audit rows of refusals judged without an activity, written in batches in the background. */
  private readonly pendingAudits: AuditRow[] = [];
  private writingAudits?: Promise<void>;
  /** Whether a long history makes this run continue as new; undefined until it first got long. */
  private continuing?: boolean;
  /** Tenants this run was told are revoked, not yet checked. */
  private readonly revocationsToCheck: string[] = [];

  /**
   * @param resumed what the run this one continues handed on, if any.
   * @param continueAsNew ends this run, continuing it as new with what it hands on.
   */
  constructor(
    private readonly run: RunView,
    private resumed?: Resumed,
    private readonly continueAsNew?: (resumed: Resumed) => Promise<never>,
  ) {
    if (resumed) this.history.push(...resumed.operatorHistory);
  }

  /** The body the run this one continues had prepared for the effect, if it is this one. */
  resumedBody(effectId: string): SendInput['body'] | undefined {
    return this.resumed?.effectId === effectId ? this.resumed.body : undefined;
  }

  /** The later messages of the answer to `replyKey`'s reply that the run this one continues had left. */
  resumedAnswer(replyKey: string): AnswerLeft | undefined {
    return this.resumed?.answer?.replyKey === replyKey ? this.resumed.answer : undefined;
  }

  /**
   * A decision, by update or signal: its seal is verified (and its single use recorded) by an
   * activity, which also checks the operator's current roles; then it is judged while something
   * awaits a decision. Anything else is rejected at once and audited.
   * @param delivery what delivered it: the update's id, or this run's count of decision signals.
   * @returns the verdict, `Accepted: …` or `Rejected: …`.
   */
  async decide(signal: DecisionName, payload: unknown, delivery: string): Promise<string> {
    const refusal = unverifiable(payload);
    if (refusal !== undefined && patched(CHEAP_REFUSALS)) {
      const raw = (payload ?? {}) as { action?: unknown };
      const message: OperatorMessage = {
        signal,
        payload: { action: typeof raw.action === 'string' ? raw.action.slice(0, 40) : undefined },
        actor: '(unverified)',
      };
      const state = this.run.state;
      return this.record({ message, arrivedIn: state }, 'rejected', refusal, state, state, 'batched');
    }
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
        payload: { action: verified.action, reason: verified.operatorReason },
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

  /**
   * A verdict as the decision's Update answers it: accepted, the verdict; rejected, a failed Update
   * whose message is the reason (the Web UI shows a failed update, not "Update successful").
   * @throws ApplicationFailure of type DecisionRejected for a rejection.
   */
  static updateAnswer(verdict: string): string {
    if (!verdict.startsWith(REJECTED)) return verdict;
    const refusal = ApplicationFailure.create({
      type: Failure.DecisionRejected,
      message: verdict.slice(REJECTED.length),
      nonRetryable: true,
    });
    // The Web UI prints a failure's stack under its message: the worker's file paths say nothing to
    // an operator.
    refusal.stack = '';
    throw refusal;
  }

  /** Told that `tenant`'s installation was revoked: checked while the run waits for a decision. */
  noticeRevocation(tenant: unknown): void {
    if (typeof tenant === 'string' && tenant.length <= 200 && !this.revocationsToCheck.includes(tenant))
      this.revocationsToCheck.push(tenant);
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
   * @throws ParkExpiredError when failed work was left alone that long.
   */
  async awaitDecision(waitingIn: Waiting, ctx: DeskSubject): Promise<Decision> {
    const resumed = this.resumed?.effectId === ctx.effectId ? this.resumed : undefined;
    this.resumed = undefined;
    if (resumed?.pendingResend) {
      this.resendRequestedBy = resumed.pendingResend.operator;
      this.run.setState('awaiting_approval', {
        pendingResend: resumed.pendingResend,
        recommendedAction: 'a different operator approves the resend (the approve update)',
      });
    }
    // The run this one continues alerted already.
    if (!resumed) await this.alert(waitingIn, ctx.businessKey, 0);
    let reminders = resumed?.reminders ?? 0;
    const parkedUntil = resumed?.parkedUntil ?? Date.now() + ctx.policy.failedParkMs;
    // A resumed wait keeps the reminder it was waiting for.
    let resumedTimeout =
      resumed?.nextReminderAt === undefined ? undefined : resumed.nextReminderAt - Date.now();
    const { reminderScheduleMs } = ctx.policy;
    for (;;) {
      const timeout =
        this.run.state === 'failed'
          ? parkedUntil - Date.now()
          : (resumedTimeout ?? reminderScheduleMs[Math.min(reminders, reminderScheduleMs.length - 1)]!);
      resumedTimeout = undefined;
      const dueAt = Date.now() + timeout;
      const woken = () => this.inbox.length > 0 || this.mayContinue() || this.revocationsToCheck.length > 0;
      if (!(await condition(woken, Math.max(timeout, 1)))) {
        if (this.run.state === 'failed') {
          this.run.explain('nobody reprocessed or discarded it in time');
          throw new ParkExpiredError(
            `effect ${ctx.businessKey} failed: ${this.run.details.lastError ?? 'unknown error'}`,
          );
        }
        reminders += 1;
        await this.alert('reminder', ctx.businessKey, reminders);
        continue;
      }
      if (this.revocationsToCheck.length > 0) {
        const ended = await this.endIfRevoked(ctx);
        if (ended) return ended;
      }
      if (this.inbox.length === 0) {
        // Woken by a long history with nothing to judge: go on in a new run, or wait on as before.
        if (this.mayContinue() && this.continueAllowed())
          await this.continueAsNewNow(ctx, { reminders, parkedUntil, nextReminderAt: dueAt });
        resumedTimeout = dueAt - Date.now();
        continue;
      }
      const decision = await this.judgeNext(ctx);
      if (decision?.kind === 'send-again') {
        // Since VERDICT_BEFORE_SEND the verdict leaves before the send: a local send holds the task
        // open while it runs, and the Update's verdict leaves the worker only with the task. A 1 ms
        // timer ended the task, which the server fired a second or so late; since RESEND_AS_TASK the
        // send is a regular activity task, whose scheduling ends the task. Runs that recorded the
        // timer's patch keep their timer.
        if (patched(RESEND_AS_TASK)) return { kind: 'send-again', asTask: true };
        if (patched(VERDICT_BEFORE_SEND)) await sleep(1);
      }
      if (decision) return decision;
    }
  }

  /**
   * When Temporal finds this run's history long (it suggests continuing as new: thousands of events,
   * what a flood of messages can cause), and no decision is waiting to be judged, the wait goes on in
   * a new run, so that no flood reaches the history limit that would end a held item. Handlers still
   * running get a grace period to finish; the new run finds the effect row as this one left it.
   */
  private mayContinue(): boolean {
    return (
      this.continueAsNew !== undefined &&
      this.continuing !== false &&
      this.inbox.length === 0 &&
      workflowInfo().continueAsNewSuggested
    );
  }

  /** Whether this run continues as new (asked once: runs started before this never do). */
  private continueAllowed(): boolean {
    this.continuing ??= patched(CHEAP_REFUSALS);
    return this.continuing;
  }

  /** Ends this run, handing the wait on to a new one, once handlers finished or the grace is over. */
  private async continueAsNewNow(
    ctx: DeskSubject,
    wait: Pick<Resumed, 'reminders' | 'parkedUntil' | 'nextReminderAt'>,
  ): Promise<void> {
    await condition(() => allHandlersFinished() || this.inbox.length > 0, HANDLERS_GRACE_MS);
    if (this.inbox.length > 0) return;
    await this.auditsWritten();
    await this.continueAsNew!({
      effectId: ctx.effectId,
      body: 'kind' in ctx ? undefined : ctx.body,
      ...('kind' in ctx || !ctx.answer?.rest.length ? {} : { answer: ctx.answer }),
      ...wait,
      pendingResend: this.run.state === 'awaiting_approval' ? this.run.details.pendingResend : undefined,
      operatorHistory: this.history.slice(-HANDED_HISTORY),
    });
  }

  /**
   * Held work whose destination belongs to a tenant this run was told is revoked ends, discarded,
   * once the store says the tenant is still revoked: nothing can be sent with its credential, so no
   * decision is left to make. Whether the held reply reached the target stays unknown, and the
   * record says so. Failed work is left as it is (nothing was sent; a reinstall and a reprocess send
   * it), and so is a revocation lifted meanwhile. @returns the end, or undefined to wait on.
   */
  private async endIfRevoked(ctx: DeskSubject): Promise<Settled | undefined> {
    const told = this.revocationsToCheck.splice(0);
    const tenant = 'kind' in ctx ? undefined : ctx.step.destination.tenant;
    const before = this.run.state;
    if (!tenant || !told.includes(tenant) || before === 'failed') return undefined;
    if (!patched(REVOKED_TENANT_ENDS_HELD)) return undefined;
    const revocation = await records.tenantRevocation({ tenant });
    if (!revocation) return undefined;
    const discarded = await records.recordResult({
      effectId: ctx.effectId,
      status: 'discarded',
    });
    // The row moved on (an attempt, or a decision in a run a reset replaced): the next decision finds it.
    if (!discarded.recorded && discarded.status !== 'discarded') return undefined;
    this.run.resendDropped();
    this.resendRequestedBy = undefined;
    this.run.setState('discarded', { recommendedAction: undefined });
    const reason = `${tenant}'s installation was revoked (${revocation.reason ?? 'revoked'}, ${revocation.revokedAt}): nothing can be sent with it. Whether the held message reached the target is unknown.`;
    const detail = 'discarded by itself';
    this.history.push({
      at: new Date().toISOString(),
      signal: 'resolve',
      action: REVOCATION_ACTION,
      actor: REVOCATION_ACTOR,
      reason,
      result: 'accepted',
      detail,
      stateBefore: before,
      stateAfter: 'discarded',
    });
    await records.writeAudit({
      actor: REVOCATION_ACTOR,
      action: REVOCATION_ACTION,
      workflowId: workflowInfo().workflowId,
      businessKey: this.run.details.businessKey,
      stateBefore: before,
      stateAfter: 'discarded',
      reason,
      result: detail,
    });
    this.run.explain(`discarded: ${tenant}'s installation was revoked`);
    return { kind: 'done', state: 'discarded' };
  }

  /** Resolves once every batched audit row is written. */
  async auditsWritten(): Promise<void> {
    while (this.writingAudits) await this.writingAudits;
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
  private async judgeNext(ctx: DeskSubject): Promise<Decision | undefined> {
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
    if ('kind' in ctx) return this.decidePlan(entry, verdict.action, before);
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
        this.run.explain('discarded by an operator');
        return { kind: 'done', state: 'discarded' };
      }
      case 'request-resend': {
        this.resendRequestedBy = message.actor;
        this.run.setState('awaiting_approval', {
          recommendedAction: 'a different operator approves the resend (the approve update)',
          pendingResend: {
            operator: this.resendRequestedBy,
            reason: String((message.payload as { reason?: unknown }).reason),
          },
        });
        await this.record(entry, 'accepted', 'awaiting approval', before, 'awaiting_approval');
        return undefined;
      }
      case 'approve-resend':
      case 'reprocess':
        return this.sendAgain(entry, verdict.action === 'approve-resend', ctx, before);
    }
  }

  /**
   * A decision about a failed plan: nothing was claimed or sent, so there is no row to re-read. A
   * reprocess plans the event again with the worker's routes; a discard ends it.
   */
  private async decidePlan(
    entry: Entry,
    action: Exclude<Verdict, { ok: false }>['action'],
    before: ReplyState,
  ): Promise<Decision | undefined> {
    if (action === 'discard') {
      this.run.setState('discarded', { recommendedAction: undefined });
      await this.record(entry, 'accepted', undefined, before, 'discarded');
      this.run.explain('discarded by an operator');
      return { kind: 'done', state: 'discarded' };
    }
    if (action === 'reprocess') {
      this.run.setState('processing');
      await this.record(entry, 'accepted', undefined, before, 'processing');
      return { kind: 'send-again' };
    }
    const detail = 'nothing was planned, so nothing was sent: reprocess once the route is fixed, or discard';
    await this.record(entry, 'rejected', detail, before, before);
    return undefined;
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
      this.run.resendDropped();
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
    this.run.countAttempts(row.attempts);
    this.run.resendDropped();
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
    audit: 'now' | 'batched' = 'now',
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
    const row: AuditRow = {
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
    };
    if (audit === 'now') await records.writeAudit(row);
    else this.queueAudit(row);
    const verdict = result === 'accepted' ? `Accepted: ${detail ?? action}` : `${REJECTED}${detail}`;
    entry.answer?.(verdict);
    return verdict;
  }

  /** Queues an audit row for the background writer, starting it when it is idle. */
  private queueAudit(row: AuditRow): void {
    this.pendingAudits.push(row);
    this.writingAudits ??= (async () => {
      while (this.pendingAudits.length > 0)
        await records.writeAudits(this.pendingAudits.splice(0, AUDIT_BATCH));
      this.writingAudits = undefined;
    })();
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
