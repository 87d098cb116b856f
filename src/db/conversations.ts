// Owns: conversations, rejected_events
// The conversations table's one owner, with rejected_events (the refusals it records): each
// conversation's business state and version, moved by events only from a state that allows the move
// (activities/conversation.ts), and by operators through their own conditional moves
// (src/operator/conversations.ts). A refused event is recorded with what was compared.
import type { MachineName } from '../conversations';
import type { Pool } from './pool';

/** A conversation's state and the version it was last moved at (bigint, kept as text). */
interface ConversationState {
  state: string;
  version: string;
}

/** An event's refused move, as rejected_events keeps it. */
interface Rejection {
  provider: string;
  eventId: string;
  workflowId: string;
  conversationKey: string;
  comparedVersion: string;
  currentState: string;
  currentVersion: string | null;
  reason: string;
}

export function createConversations(pool: Pool) {
  return {
    /**
     * One conditional UPDATE: the conversation moves to `to` only from a state in `from`, and a state
     * change only for an event at least as new as its version (or the same event again).
     * @returns the state it now has, or undefined when it did not move (or does not exist).
     */
    async moveByEvent(move: {
      conversationKey: string;
      to: string;
      /** A bigint in microseconds, as text (src/conversations.ts). */
      version: string;
      eventRef: string;
      from: readonly string[];
    }): Promise<string | undefined> {
      const { rows } = await pool.query<{ state: string }>(
        `UPDATE conversations SET state = $2, version = GREATEST(version, $3), last_event = $4, updated_at = now()
          WHERE id = $1
            AND (last_event = $4 OR (state = ANY($5::text[]) AND (state = $2 OR version <= $3)))
          RETURNING state`,
        [move.conversationKey, move.to, move.version, move.eventRef, move.from],
      );
      return rows[0]?.state;
    },

    /** A conversation seen for the first time starts in its machine's initial state, at version 0. */
    async start(conversationKey: string, machine: MachineName, initial: string): Promise<void> {
      await pool.query(
        `INSERT INTO conversations (id, machine, state, version) VALUES ($1, $2, $3, 0) ON CONFLICT (id) DO NOTHING`,
        [conversationKey, machine, initial],
      );
    },

    async state(conversationKey: string): Promise<ConversationState | undefined> {
      const { rows } = await pool.query<ConversationState>(
        'SELECT state, version::text FROM conversations WHERE id = $1',
        [conversationKey],
      );
      return rows[0];
    },

    async machineState(
      conversationKey: string,
    ): Promise<{ machine: MachineName; state: string } | undefined> {
      const { rows } = await pool.query<{ machine: MachineName; state: string }>(
        'SELECT machine, state FROM conversations WHERE id = $1',
        [conversationKey],
      );
      return rows[0];
    },

    /**
     * An operator's move, only if the conversation is still in `from`.
     * @returns whether it moved.
     */
    async moveByOperator(
      conversationKey: string,
      from: string,
      to: string,
      action: string,
    ): Promise<boolean> {
      const moved = await pool.query(
        `UPDATE conversations SET state = $3, last_event = $4, updated_at = now() WHERE id = $1 AND state = $2`,
        [conversationKey, from, to, `operator:${action}`],
      );
      return moved.rowCount === 1;
    },

    async recordRejection(r: Rejection): Promise<void> {
      await pool.query(
        `INSERT INTO rejected_events (provider, event_id, workflow_id, conversation_id, compared_version, current_state, current_version, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          r.provider,
          r.eventId,
          r.workflowId,
          r.conversationKey,
          r.comparedVersion,
          r.currentState,
          r.currentVersion,
          r.reason,
        ],
      );
    },
  };
}
