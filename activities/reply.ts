// Plans an event's effects from the routes, and asks for the reply once. The workflow keeps the answer
// (encrypted in history), so retries and approved resends send exactly the same messages.
import { ApplicationFailure } from '@temporalio/activity';
import { chatTransition } from '../src/conversations';
import { RouteMappingError } from '../src/errors';
import { Failure } from '../src/failures';
import type { Plan, PreparedReply, StepPlan } from '../src/model';
import type { InboundEvent } from '../src/providers/types';
import { prepareAnswer } from '../src/responders/answer';
import { PermanentResponderError } from '../src/responders/errors';
import { answersByDefault } from '../src/routes';
import type { ActivityDeps } from './deps';
import { mappingFailure, permanent } from './errors';
import { eventOf } from './run-event';

export function replyActivities({
  responder,
  policy,
  plan,
  targets,
  effects: rows,
  slackReplies,
}: ActivityDeps) {
  return {
    /** Which effects this event asks for, with the delivery policy of this deployment. */
    async planEffects(event: InboundEvent): Promise<Plan> {
      const defaultReply = await answersByDefault(event, slackReplies, rows.answering);
      let effects: Plan['effects'];
      try {
        effects = plan(event, { defaultReply });
      } catch (err) {
        // The same event will always lack the field under these routes: the workflow parks it as
        // failed, naming the route and the field, until the route file is fixed and it is reprocessed.
        if (err instanceof RouteMappingError) throw mappingFailure(err, policy);
        throw err;
      }
      for (const effect of effects) {
        for (const step of effect.steps) {
          if (!targets.has(step.target)) {
            throw ApplicationFailure.nonRetryable(
              `route for ${effect.integration} names target "${step.target}", which is not configured`,
              Failure.UnknownTarget,
            );
          }
        }
      }
      // A message nothing answers (people talking in a channel the bot is in) leaves its conversation
      // alone: it neither hands it to the bot nor is refused as stale while a person handles it.
      const transition = defaultReply || effects.length > 0 ? chatTransition(event) : undefined;
      return { effects, policy, transition, responderIsLocal: responder.local };
    },

    /**
     * Asks the bot's logic once and checks its answer against the step's target: one plain `text`,
     * several `messages`, or `text` null: the responder chose not to reply. `event`: left out by a
     * regular task (a responder service), which reads the run's own (activities/run-event.ts).
     */
    async prepareReply(input: { event?: InboundEvent; step: StepPlan }): Promise<PreparedReply> {
      try {
        return prepareAnswer(await responder.answer(await eventOf(input)), input.step.target);
      } catch (err) {
        if (err instanceof PermanentResponderError) throw permanent(err, Failure.PermanentResponder);
        throw err;
      }
    },
  };
}
