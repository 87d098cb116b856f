// Conversation state and turns: a late or disallowed event is refused by business state (and the
// refusal recorded), and the sends of one conversation take turns through its turns workflow.
import { Context } from '@temporalio/activity';
import { allowedFrom, MACHINES, type TransitionRequest } from '../src/conversations';
import { createConversations } from '../src/db/conversations';
import { conversationWorkflowId, requestTurnSignal } from '../workflows/messages';
import type { ActivityDeps } from './deps';

type TransitionResult = { applied: true; state: string } | { applied: false; state: string; reason: string };

export function conversationActivities({ pool, policy }: ActivityDeps) {
  const conversations = createConversations(pool);
  return {
    /**
     * One conditional UPDATE: the conversation moves to `request.to` only from a state that allows it,
     * and a state change only for an event at least as new as the conversation's version. A refusal
     * is written to rejected_events with what was compared.
     */
    async applyTransition(input: {
      request: TransitionRequest;
      provider: string;
      eventId: string;
      workflowId: string;
    }): Promise<TransitionResult> {
      const { request } = input;
      const eventRef = `${input.provider}:${input.eventId}`;
      const machine = MACHINES[request.machine];
      const from = allowedFrom(request.machine, request.to);
      const move = () =>
        conversations.moveByEvent({
          conversationKey: request.conversationKey,
          to: request.to,
          version: request.version,
          eventRef,
          from,
        });
      // Most events belong to a conversation seen before: one statement. A conversation seen for the
      // first time starts in the machine's initial state (version 0), then moves.
      let moved = await move();
      if (moved === undefined) {
        await conversations.start(request.conversationKey, request.machine, machine.initial);
        moved = await move();
      }
      if (moved !== undefined) return { applied: true, state: moved };

      const current = await conversations.state(request.conversationKey);
      const state = current?.state ?? machine.initial;
      const currentVersion = current?.version;
      const reason = !from.includes(state)
        ? state === 'human_handling'
          ? 'a person is handling this conversation: the bot does not reply'
          : `transition ${state} → ${request.to} is not allowed`
        : `event version ${request.version} is older than the conversation's ${currentVersion} and would move ${state} → ${request.to}`;
      await conversations.recordRejection({
        provider: input.provider,
        eventId: input.eventId,
        workflowId: input.workflowId,
        conversationKey: request.conversationKey,
        comparedVersion: request.version,
        currentState: state,
        currentVersion: currentVersion ?? null,
        reason,
      });
      return { applied: false, state, reason };
    },

    /** Asks the conversation's turns workflow (started if needed) for a turn to send. */
    async requestTurn(input: {
      conversationKey: string;
      workflowId: string;
      requestId: string;
      orderKey: string;
    }): Promise<void> {
      const { client, info } = Context.current();
      await client.workflow.signalWithStart('conversationTurns', {
        workflowId: conversationWorkflowId(input.conversationKey),
        taskQueue: info.taskQueue,
        args: [{ gatherMs: policy.turnGatherMs }],
        signal: requestTurnSignal,
        signalArgs: [{ workflowId: input.workflowId, requestId: input.requestId, orderKey: input.orderKey }],
      });
    },
  };
}
