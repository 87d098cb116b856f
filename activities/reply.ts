// Writes the reply once. The workflow keeps the answer (encrypted in history), so retries and
// approved resends send exactly the same text.
import { ApplicationFailure } from '@temporalio/activity';
import { chatTransition } from '../src/conversations';
import type { Plan, StepPlan } from '../src/model';
import type { InboundEvent } from '../src/providers/types';
import { PermanentResponderError } from '../src/responders/types';
import type { ActivityDeps } from './deps';

export function replyActivities({ responder, policy, plan, targets }: ActivityDeps) {
  return {
    /** Which effects this event asks for, with the delivery policy of this deployment. */
    async planEffects(event: InboundEvent): Promise<Plan> {
      const effects = plan(event);
      for (const effect of effects) {
        for (const step of effect.steps) {
          if (!targets.has(step.target)) {
            throw ApplicationFailure.nonRetryable(
              `route for ${effect.integration} names target "${step.target}", which is not configured`,
              'UnknownTargetError',
            );
          }
        }
      }
      return { effects, policy, transition: chatTransition(event) };
    },

    async prepareReply(input: { event: InboundEvent; step: StepPlan }): Promise<{ text: string }> {
      try {
        return { text: await responder.answer(input.event) };
      } catch (err) {
        if (err instanceof PermanentResponderError)
          throw ApplicationFailure.nonRetryable(err.message, 'PermanentResponderError');
        throw err;
      }
    },
  };
}
