// The sandbox_messages table's one owner: the demo chat's messages, the person's (as the page showed
// them) and the bot's (as the sandbox target API received them, with their Slack and LINE fields, the
// idempotency key and the lookup reference). The sandbox stores its own text: it is a demo channel,
// and `replyflow purge` drops that text like any other (wordsOlderThan).
import type pg from 'pg';
import type { Pool } from './pool';

interface SandboxMessageRow {
  id: string;
  author: 'user' | 'bot';
  text: string;
  slack: unknown;
  line: unknown;
  eventType: string | null;
  reference: string | null;
  createdAt: Date;
}

interface BotReplyInput {
  conversationId: string;
  text: string;
  slack?: unknown;
  line?: unknown;
  /** Set only where the sandbox honours idempotency keys (`sandbox` mode). */
  idempotencyKey?: string;
  reference: string;
  /** How long the reply stays invisible to lookups (`sandbox-lookup` mode's consistency delay). */
  visibleAfterMs: number;
}

/** What a message's words are: its text, and a reply's blocks and LINE message objects. */
const HAS_WORDS = `(text <> '' OR slack IS NOT NULL OR line IS NOT NULL)`;

export function createSandboxMessages(pool: Pool) {
  return {
    /** The person's message as the page shows it; its id names the event the page sends for it. */
    async addUserMessage(conversationId: string, shown: string, eventType: string): Promise<string> {
      const { rows } = await pool.query<{ id: string }>(
        `INSERT INTO sandbox_messages (conversation_id, author, text, event_type) VALUES ($1, 'user', $2, $3) RETURNING id`,
        [conversationId, shown, eventType],
      );
      return rows[0]!.id;
    },

    async conversation(conversationId: string): Promise<SandboxMessageRow[]> {
      const { rows } = await pool.query<SandboxMessageRow>(
        `SELECT id, author, text, slack, line, event_type AS "eventType", reference, created_at AS "createdAt"
           FROM sandbox_messages
          WHERE conversation_id = $1 ORDER BY id`,
        [conversationId],
      );
      return rows;
    },

    /** The bot reply already stored under this idempotency key, if any. */
    async replyByKey(idempotencyKey: string): Promise<number | undefined> {
      const { rows } = await pool.query<{ id: string }>(
        'SELECT id FROM sandbox_messages WHERE idempotency_key = $1',
        [idempotencyKey],
      );
      return rows[0] ? Number(rows[0].id) : undefined;
    },

    /** Stores a bot reply; a concurrent one with the same key is the same row. @returns its id. */
    async addBotReply(reply: BotReplyInput): Promise<number> {
      const { rows } = await pool.query<{ id: string }>(
        `INSERT INTO sandbox_messages (conversation_id, author, text, slack, line, idempotency_key, reference, visible_at)
         VALUES ($1, 'bot', $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond')
         ON CONFLICT (idempotency_key) DO UPDATE SET idempotency_key = EXCLUDED.idempotency_key
         RETURNING id`,
        [
          reply.conversationId,
          reply.text,
          reply.slack ? JSON.stringify(reply.slack) : null,
          reply.line ? JSON.stringify(reply.line) : null,
          reply.idempotencyKey ?? null,
          reply.reference,
          reply.visibleAfterMs,
        ],
      );
      return Number(rows[0]!.id);
    },

    /** The bot reply a lookup by reference finds, once it is visible. */
    async visibleReply(reference: string): Promise<number | undefined> {
      const { rows } = await pool.query<{ id: string }>(
        `SELECT id FROM sandbox_messages WHERE reference = $1 AND author = 'bot' AND visible_at <= now() ORDER BY id LIMIT 1`,
        [reference],
      );
      return rows[0] ? Number(rows[0].id) : undefined;
    },
  };
}

/**
 * Drops the words of messages older than `cutoff` (counts them only, with `dryRun`), on the purge's
 * transaction. @returns how many messages.
 */
export async function purgeSandboxWords(
  client: pg.ClientBase,
  cutoff: Date,
  dryRun: boolean,
): Promise<number> {
  const where = `created_at < $1 AND ${HAS_WORDS}`;
  const sql = dryRun
    ? `SELECT count(*)::int AS n FROM sandbox_messages WHERE ${where}`
    : `WITH p AS (UPDATE sandbox_messages SET text = '', slack = NULL, line = NULL WHERE ${where} RETURNING 1) SELECT count(*)::int AS n FROM p`;
  const { rows } = await client.query<{ n: number }>(sql, [cutoff]);
  return rows[0]!.n;
}
