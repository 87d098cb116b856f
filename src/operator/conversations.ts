// Operator transitions of a conversation (hand-off to a person, hand back to the bot, close, reopen):
// the only way to make the moves events may not, each one conditional and written to the audit log.
import { MACHINES, type MachineName } from '../conversations';
import type { Pool } from '../db/pool';

export type ConversationAction = 'handoff' | 'handback' | 'close' | 'reopen';

interface ConversationDecision {
  action: ConversationAction;
  /** `<provider>:<conversation id>`, as in the conversations table. */
  conversationKey: string;
  operator: string;
  reason: string;
}

export type ConversationOutcome =
  | { ok: true; from: string; to: string }
  | { ok: false; detail: string; state?: string };

export async function operateConversation(
  pool: Pool,
  decision: ConversationDecision,
): Promise<ConversationOutcome> {
  const { action, conversationKey, operator, reason } = decision;
  if (!operator.trim() || !reason.trim())
    return record(pool, decision, { ok: false, detail: 'operator and reason are required' });
  const row = await pool.query<{ machine: MachineName; state: string }>(
    'SELECT machine, state FROM conversations WHERE id = $1',
    [conversationKey],
  );
  const current = row.rows[0];
  if (!current) return record(pool, decision, { ok: false, detail: `no conversation ${conversationKey}` });
  const moves = (MACHINES[current.machine].operator as Record<string, Record<string, readonly string[]>>)[
    action
  ];
  const to = moves?.[current.state]?.[0];
  if (!to) {
    return record(pool, decision, {
      ok: false,
      detail: `${action} is not possible from ${current.state}`,
      state: current.state,
    });
  }
  const moved = await pool.query(
    `UPDATE conversations SET state = $3, last_event = $4, updated_at = now() WHERE id = $1 AND state = $2`,
    [conversationKey, current.state, to, `operator:${action}`],
  );
  if (moved.rowCount !== 1)
    return record(pool, decision, { ok: false, detail: 'the conversation changed meanwhile; try again' });
  return record(pool, decision, { ok: true, from: current.state, to });
}

async function record(
  pool: Pool,
  d: ConversationDecision,
  outcome: ConversationOutcome,
): Promise<ConversationOutcome> {
  await pool.query(
    `INSERT INTO audit_log (actor, action, workflow_id, business_key, state_before, state_after, reason, result)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      d.operator.trim() || '(missing)',
      `conversation:${d.action}`,
      `conversation:${d.conversationKey}`,
      d.conversationKey,
      outcome.ok ? outcome.from : (outcome.state ?? null),
      outcome.ok ? outcome.to : (outcome.state ?? null),
      d.reason.trim() || null,
      outcome.ok ? 'accepted' : `rejected: ${outcome.detail}`,
    ],
  );
  return outcome;
}
