// An event's admission in one step: the ledger, the plan, and the business-state transition, which the
// event workflow used to ask for one at a time. One local activity instead of three saves the worker
// two round trips per event; each part stays idempotent, so a retry of the whole is harmless.
import type { Plan } from '../src/model';
import type { InboundEvent } from '../src/providers/types';
import type { conversationActivities } from './conversation';
import type { ledgerActivities } from './ledger';
import type { replyActivities } from './reply';

export type Admission =
  | { firstTime: false }
  /** `refusal`: the business state refused the event (late or disallowed); it was recorded. */
  | { firstTime: true; plan: Plan; refusal?: string };

export function admitActivities(parts: {
  ledger: ReturnType<typeof ledgerActivities>;
  reply: ReturnType<typeof replyActivities>;
  conversation: ReturnType<typeof conversationActivities>;
}) {
  return {
    async admitEvent(input: { event: InboundEvent; workflowId: string }): Promise<Admission> {
      const { event, workflowId } = input;
      const ledger = await parts.ledger.recordEvent(event);
      if (!ledger.firstTime) return { firstTime: false };
      const plan = await parts.reply.planEffects(event);
      if (!plan.transition) return { firstTime: true, plan };
      const moved = await parts.conversation.applyTransition({
        request: plan.transition,
        provider: event.provider,
        eventId: event.eventId,
        workflowId,
      });
      return moved.applied ? { firstTime: true, plan } : { firstTime: true, plan, refusal: moved.reason };
    },
  };
}
