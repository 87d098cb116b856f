// Operator transitions of a conversation (hand-off to a person, hand back to the bot, close, reopen):
// the only way to make the moves events may not, each one conditional and written to the audit log.
import { MACHINES } from '../conversations';
import { createAuditLog } from '../db/audit-log';
import { createConversations } from '../db/conversations';
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
  const conversations = createConversations(pool);
  const current = await conversations.machineState(conversationKey);
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
  if (!(await conversations.moveByOperator(conversationKey, current.state, to, action)))
    return record(pool, decision, { ok: false, detail: 'the conversation changed meanwhile; try again' });
  return record(pool, decision, { ok: true, from: current.state, to });
}

async function record(
  pool: Pool,
  d: ConversationDecision,
  outcome: ConversationOutcome,
): Promise<ConversationOutcome> {
  await createAuditLog(pool).append([
    {
      actor: d.operator.trim() || '(missing)',
      action: `conversation:${d.action}`,
      workflowId: `conversation:${d.conversationKey}`,
      businessKey: d.conversationKey,
      stateBefore: outcome.ok ? outcome.from : outcome.state,
      stateAfter: outcome.ok ? outcome.to : outcome.state,
      reason: d.reason.trim() || undefined,
      result: outcome.ok ? 'accepted' : `rejected: ${outcome.detail}`,
    },
  ]);
  return outcome;
}
