// What every part of the event workflow needs to know about the effect step in hand, passed as one.
import type { DeliveryPolicy, EffectPlan, SendInput, StepPlan, TargetCapabilities } from '../src/model';

/**
 * The later messages of an answer, each an effect of its own, sent in order once the first is sent:
 * `rest` shrinks as each succeeds, so that a run that continues as new hands on what is left.
 */
export interface AnswerLeft {
  /** The business key of the reply step whose answer these are. */
  replyKey: string;
  rest: EffectPlan[];
}

export interface EffectContext {
  /** The claimed row in `effects`: its id is also the idempotency key and the lookup reference. */
  effectId: string;
  step: StepPlan;
  /** The step's own business key (the effect's, plus `#<step>` when the effect has several steps). */
  businessKey: string;
  policy: DeliveryPolicy;
  capabilities: TargetCapabilities;
  /** What every attempt sends, once prepared (a run that continues as new hands it on). */
  body?: SendInput['body'];
  /** The answer's messages still to send after this one (or including it, when it is one of them). */
  answer?: AnswerLeft;
}

/**
 * Failed work that never reached an effect: planning the event failed (a route could not map it), so
 * no effect row exists and nothing was sent. `effectId` is not a row's: it is the hold decisions are
 * bound to, `plan:<planning attempt>`, so that a decision counts for one failed plan only.
 */
interface PlanContext {
  kind: 'plan';
  effectId: string;
  /** What alerts name for it: `event:<provider>:<event id>` (no business key was planned). */
  businessKey: string;
  policy: DeliveryPolicy;
}

/** What the operator desk waits on: an effect step, or a failed plan. */
export type DeskSubject = EffectContext | PlanContext;

/** How a held or failed item ended, or that an operator sent it on its way again. */
export type Settled = { kind: 'done'; state: 'succeeded' | 'discarded'; externalId?: string };
/**
 * `asTask`: the next send (or responder, or plan) runs as a regular activity task, not a local
 * activity, so the workflow task that accepted the decision ends at once and its verdict leaves
 * (workflows/operator-desk.ts, RESEND_AS_TASK).
 */
export type Decision = Settled | { kind: 'send-again'; asTask?: true };
