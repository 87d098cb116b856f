// What an event workflow shows of itself: its state and the details operators need (the `status`
// query), the search attributes the Web UI filters on, and the effects it settled (its result).
import { upsertSearchAttributes } from '@temporalio/workflow';
import type { EffectPlan } from '../src/model';
import type { ReplyState, StatusView } from './messages';
import {
  Attempts,
  BusinessKey,
  ConversationId,
  FailedStep,
  Integration,
  LastErrorClass,
  RecommendedAction,
  ReplyState as ReplyStateKey,
} from './search-attributes';

export interface EventResult {
  state: ReplyState;
  reason?: string;
  effects: { businessKey: string; effectId?: string; externalId?: string; ownerWorkflowId?: string }[];
}

/** The status view without what the run and the operator desk add when asked. */
type RunDetails = Omit<StatusView, 'state' | 'operatorHistory'>;

type Shown = { key: (typeof SHOWN_KEYS)[number]; value: string | number };
const SHOWN_KEYS = [
  ReplyStateKey,
  Attempts,
  RecommendedAction,
  LastErrorClass,
  FailedStep,
  BusinessKey,
  Integration,
  ConversationId,
] as const;

export class RunView {
  private current: ReplyState = 'received';
  private readonly shownDetails: RunDetails = { attempts: 0 };
  /** The effects settled so far, for the workflow's result. */
  readonly effects: EventResult['effects'] = [];
  private effect?: EffectPlan;
  /** While a failed plan waits (no effect was planned): the hold decisions answer, and its integration. */
  private failedPlan?: { hold: string; integration: string };
  /** What the search attributes say now, by name: kept when only changes are upserted. */
  private readonly shown?: Map<string, string | number>;

  /**
   * @param startedWith the search attributes the run started with, when only changes are to be
   * upserted, all together at the next state change (one upsert per workflow task at most). Without
   * it (runs started before), every call upserts as it always did.
   */
  constructor(startedWith?: Record<string, string | number | undefined>) {
    if (startedWith)
      this.shown = new Map(
        Object.entries(startedWith).filter((e): e is [string, string | number] => e[1] !== undefined),
      );
  }

  /** Where the run stands, as the status query says: changed only by this class's methods. */
  get state(): ReplyState {
    return this.current;
  }

  /** What the status query shows besides the state: read-only outside, changed by the methods below. */
  get details(): Readonly<RunDetails> {
    return this.shownDetails;
  }

  /** Moves to `next`, merges `extra` into the details, and shows both in the search attributes. */
  setState(next: ReplyState, extra: Partial<RunDetails> = {}): void {
    this.current = next;
    Object.assign(this.shownDetails, extra);
    const { attempts, recommendedAction, lastErrorClass, step } = this.shownDetails;
    const attributes: Shown[] = [
      { key: ReplyStateKey, value: next },
      { key: Attempts, value: attempts },
      ...(recommendedAction ? [{ key: RecommendedAction, value: recommendedAction }] : []),
      ...(lastErrorClass ? [{ key: LastErrorClass, value: lastErrorClass }] : []),
      ...(step && (next === 'held' || next === 'failed') ? [{ key: FailedStep, value: step }] : []),
    ];
    if (!this.shown) {
      upsertSearchAttributes(attributes as never);
      return;
    }
    const changed = [...attributes, ...this.effectAttributes()].filter(
      (a) => this.shown!.get(a.key.name) !== a.value,
    );
    for (const a of changed) this.shown.set(a.key.name, a.value);
    if (changed.length > 0) upsertSearchAttributes(changed as never);
  }

  /**
   * What a decision answers now, while one awaits it: the effect and its send attempts so far. A
   * decision sealed for another hold (an earlier one, in a run a reset replaced) counts for nothing.
   */
  hold(): string | undefined {
    const decidable = this.state === 'held' || this.state === 'awaiting_approval' || this.state === 'failed';
    if (!decidable) return undefined;
    if (this.failedPlan) return this.failedPlan.hold;
    const { effectId, attempts } = this.shownDetails;
    return effectId ? `${effectId}:${attempts}` : undefined;
  }

  /**
   * Planning failed (a route could not map the event): failed with nothing planned, decisions bound
   * to `hold` (the planning attempt), the route's integration shown for filtering.
   */
  planFailed(hold: string, integration: string, extra: Partial<RunDetails>): void {
    this.failedPlan = { hold, integration };
    this.setState('failed', extra);
  }

  /** Planned after a failed plan was reprocessed: what the failure showed is over. */
  planned(): void {
    if (!this.failedPlan) return;
    this.failedPlan = undefined;
    Object.assign(this.shownDetails, {
      lastError: undefined,
      lastErrorClass: undefined,
      recommendedAction: undefined,
    });
  }

  /** The effect now being worked on, shown by its business key (never its content). */
  showEffect(effect: EffectPlan): void {
    this.shownDetails.businessKey = effect.businessKey;
    this.effect = effect;
    // Shown with the next state change, when only changes are upserted.
    if (!this.shown) upsertSearchAttributes(this.effectAttributes() as never);
  }

  private effectAttributes(): Shown[] {
    const effect = this.effect;
    if (!effect) return this.failedPlan ? [{ key: Integration, value: this.failedPlan.integration }] : [];
    return [
      { key: BusinessKey, value: effect.businessKey },
      { key: Integration, value: effect.integration },
      ...(effect.conversationId ? [{ key: ConversationId, value: effect.conversationId }] : []),
    ];
  }

  settled(effect: EventResult['effects'][number]): void {
    this.effects.push(effect);
  }

  /**
   * The step now being worked on, and, once claimed, its effect row. Shown in the status query; the
   * search attributes show the step with the next state change that shows it.
   */
  atStep(step: string, effectId?: string): void {
    this.shownDetails.step = step;
    if (effectId !== undefined) this.shownDetails.effectId = effectId;
  }

  /** The effect row's count of send attempts, when the row said (decisions are bound to it: hold()). */
  countAttempts(attempts: number | undefined): void {
    if (attempts !== undefined) this.shownDetails.attempts = attempts;
  }

  /** Why the run ends as it will (the status query's reason and the outcome's). */
  explain(reason: string): void {
    this.shownDetails.reason = reason;
  }

  /** The business key is another workflow's: settled as that owner's, and said so. */
  ownedElsewhere(businessKey: string, owner: { ownerWorkflowId: string; ownerStatus: string }): void {
    this.settled({ businessKey, ownerWorkflowId: owner.ownerWorkflowId });
    this.shownDetails.ownerWorkflowId = owner.ownerWorkflowId;
    this.explain(`business key owned by ${owner.ownerWorkflowId} (${owner.ownerStatus})`);
  }

  /**
   * A send is under way, in the status query only: runs with one-task sends show it in the search
   * attributes with how the send ends (one upsert, not two, on the happy path).
   */
  sendingUnshown(): void {
    this.current = 'processing';
  }

  /**
   * A send succeeded: the error and the advice an earlier attempt showed are over. `shown`: in the
   * search attributes now (runs before one-task sends), else with the final state.
   */
  sendSucceeded(shown: boolean): void {
    const over = { lastErrorClass: undefined, recommendedAction: undefined };
    if (shown) this.setState('processing', over);
    else Object.assign(this.shownDetails, over);
  }

  /** No resend awaits approval any more (approved, or the hold it asked about is gone). */
  resendDropped(): void {
    this.shownDetails.pendingResend = undefined;
  }

  result(state: ReplyState, reason: string | undefined): EventResult {
    return { state, reason, effects: this.effects };
  }
}
