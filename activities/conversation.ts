// Conversation state and turns: a late or disallowed event is refused by business state (and the
// refusal recorded), and the sends of one conversation take turns through its turns workflow.
import { Context } from '@temporalio/activity';
import { allowedFrom, MACHINES, type TransitionRequest } from '../src/conversations';
import { conversationWorkflowId, requestTurnSignal } from '../workflows/messages';
import type { ActivityDeps } from './deps';

type TransitionResult = { applied: true; state: string } | { applied: false; state: string; reason: string };

export function conversationActivities({ pool, policy }: ActivityDeps) {
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
        pool.query<{ state: string }>(
          `UPDATE conversations SET state = $2, version = GREATEST(version, $3), last_event = $4, updated_at = now()
            WHERE id = $1
              AND (last_event = $4 OR (state = ANY($5::text[]) AND (state = $2 OR version <= $3)))
            RETURNING state`,
          [request.conversationKey, request.to, request.version, eventRef, from],
        );
      // Most events belong to a conversation seen before: one statement. A conversation seen for the
      // first time starts in the machine's initial state (version 0), then moves.
      let { rows } = await move();
      if (!rows[0]) {
        await pool.query(
          `INSERT INTO conversations (id, machine, state, version) VALUES ($1, $2, $3, 0) ON CONFLICT (id) DO NOTHING`,
          [request.conversationKey, request.machine, machine.initial],
        );
        ({ rows } = await move());
      }
      if (rows[0]) return { applied: true, state: rows[0].state };

      const current = await pool.query<{ state: string; version: string }>(
        'SELECT state, version::text FROM conversations WHERE id = $1',
        [request.conversationKey],
      );
      const state = current.rows[0]?.state ?? machine.initial;
      const currentVersion = current.rows[0]?.version;
      const reason = !from.includes(state)
        ? state === 'human_handling'
          ? 'a person is handling this conversation: the bot does not reply'
          : `transition ${state} → ${request.to} is not allowed`
        : `event version ${request.version} is older than the conversation's ${currentVersion} and would move ${state} → ${request.to}`;
      await pool.query(
        `INSERT INTO rejected_events (provider, event_id, workflow_id, conversation_id, compared_version, current_state, current_version, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          input.provider,
          input.eventId,
          input.workflowId,
          request.conversationKey,
          request.version,
          state,
          currentVersion ?? null,
          reason,
        ],
      );
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
