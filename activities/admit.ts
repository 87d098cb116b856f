// An event's admission in one step: the ledger, the plan, the business-state transition, and the claim
// of its first step with the built-in responder's answer, which the event workflow used to ask for one
// at a time. One local activity instead of five saves the worker four round trips (and the workflow
// four activations) per event; each part stays idempotent, so a retry of the whole is harmless.
import { type ClaimResult, claimInput, type Plan, type PreparedReply } from '../src/model';
import type { InboundEvent } from '../src/providers/types';
import type { conversationActivities } from './conversation';
import type { effectActivities } from './effects';
import type { ledgerActivities } from './ledger';
import type { replyActivities } from './reply';
import { eventOf } from './run-event';

/**
 * The first step of the first effect, claimed, and the answer when the built-in responder wrote it
 * (`text`, or `messages`; `text` null and no messages: it chose not to reply).
 */
export interface FirstStep extends Partial<PreparedReply> {
  claim: ClaimResult;
}

export type Admission =
  | { firstTime: false }
  /** `refusal`: the business state refused the event (late or disallowed); it was recorded. */
  | { firstTime: true; plan: Plan; refusal?: string; first?: FirstStep };

export function admitActivities(parts: {
  ledger: ReturnType<typeof ledgerActivities>;
  reply: ReturnType<typeof replyActivities>;
  conversation: ReturnType<typeof conversationActivities>;
  effects: ReturnType<typeof effectActivities>;
}) {
  /** Claims the first step, and answers it when the responder is the in-process FAQ. */
  async function firstStep(event: InboundEvent, workflowId: string, plan: Plan, effectId: string) {
    const effect = plan.effects[0]!;
    const claim = await parts.effects.claimEffect(
      claimInput({
        effectId,
        workflowId,
        correlationId: event.correlationId,
        plan,
        effect,
        stepIndex: 0,
        ordered: true,
      }),
    );
    const step = effect.steps[0]!;
    if (
      claim.kind !== 'owned' ||
      claim.status !== 'claimed' ||
      step.content.kind !== 'reply' ||
      !plan.responderIsLocal
    )
      return { claim };
    // A responder that fails here is asked again by the workflow, which knows what to do about it.
    const answer = await parts.reply.prepareReply({ event, step }).catch(() => undefined);
    return { claim, text: answer?.text, ...(answer?.messages ? { messages: answer.messages } : {}) };
  }

  return {
    /**
     * `firstEffectId`: the id to claim the first step under (the workflow's, so a retry claims the
     * same). `firstRunId`: the first run of the workflow's chain, so that a run a reset started
     * carries on with the event where the run it replaced left it: the business state is not moved
     * (nor judged) twice for one event, and an existing effect row is the claim.
     */
    async admitEvent(input: {
      /** Left out by a regular task (a reprocess): the run's own (activities/run-event.ts). */
      event?: InboundEvent;
      workflowId: string;
      firstEffectId?: string;
      firstRunId?: string;
    }): Promise<Admission> {
      const { workflowId } = input;
      const event = await eventOf(input);
      const ledger = await parts.ledger.recordEvent(event, input.firstRunId);
      if (!ledger.firstTime) return { firstTime: false };
      const plan = await parts.reply.planEffects(event);
      if (ledger.rerun?.outcome === 'stale')
        return { firstTime: true, plan, refusal: ledger.rerun.reason ?? 'refused by the business state' };
      if (plan.transition && !ledger.rerun) {
        const moved = await parts.conversation.applyTransition({
          request: plan.transition,
          provider: event.provider,
          eventId: event.eventId,
          workflowId,
        });
        if (!moved.applied) return { firstTime: true, plan, refusal: moved.reason };
      }
      if (!input.firstEffectId || plan.effects.length === 0) return { firstTime: true, plan };
      return { firstTime: true, plan, first: await firstStep(event, workflowId, plan, input.firstEffectId) };
    },
  };
}
