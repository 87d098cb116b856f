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
export type RunDetails = Omit<StatusView, 'state' | 'operatorHistory'>;

export class RunView {
  state: ReplyState = 'received';
  readonly details: RunDetails = { attempts: 0 };
  /** The effects settled so far, for the workflow's result. */
  readonly effects: EventResult['effects'] = [];

  /** Moves to `next`, merges `extra` into the details, and shows both in the search attributes. */
  setState(next: ReplyState, extra: Partial<RunDetails> = {}): void {
    this.state = next;
    Object.assign(this.details, extra);
    const { attempts, recommendedAction, lastErrorClass, step } = this.details;
    upsertSearchAttributes([
      { key: ReplyStateKey, value: next },
      { key: Attempts, value: attempts },
      ...(recommendedAction ? [{ key: RecommendedAction, value: recommendedAction }] : []),
      ...(lastErrorClass ? [{ key: LastErrorClass, value: lastErrorClass }] : []),
      ...(step && (next === 'held' || next === 'failed') ? [{ key: FailedStep, value: step }] : []),
    ]);
  }

  /** The effect now being worked on, shown by its business key (never its content). */
  showEffect(effect: EffectPlan): void {
    this.details.businessKey = effect.businessKey;
    upsertSearchAttributes([
      { key: BusinessKey, value: effect.businessKey },
      { key: Integration, value: effect.integration },
      ...(effect.conversationId ? [{ key: ConversationId, value: effect.conversationId }] : []),
    ]);
  }

  settled(effect: EventResult['effects'][number]): void {
    this.effects.push(effect);
  }

  result(state: ReplyState, reason: string | undefined): EventResult {
    return { state, reason, effects: this.effects };
  }
}
