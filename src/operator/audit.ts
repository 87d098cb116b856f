// Reading the append-only audit log for operators, and writing the rows replyflow adds itself, outside
// the decision path: a refusal of something an operator's role does not allow, a purge.
import { type AuditEntry, type AuditFilter, createAuditLog } from '../db/audit-log';
import type { Pool } from '../db/pool';

export type { AuditEntry } from '../db/audit-log';

/** Oldest first, as decisions happened; the newest `limit` rows when there are more. */
export async function listAudit(pool: Pool, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  return createAuditLog(pool).list(filter);
}

interface CliAction {
  actor: string;
  action: string;
  /** A workflow id, `conversation:<key>`, or what else the command touches (e.g. `ledger`). */
  target: string;
  reason?: string;
  result: string;
}

export const NOT_PERMITTED = 'rejected: not permitted';

/** Writes a row for what the operator API or the admin's CLI decides itself: a refusal by role, or a purge. */
export async function recordAction(pool: Pool, entry: CliAction): Promise<void> {
  await createAuditLog(pool).append([
    {
      actor: entry.actor,
      action: entry.action,
      workflowId: entry.target,
      reason: entry.reason?.slice(0, 500),
      result: entry.result,
    },
  ]);
}
