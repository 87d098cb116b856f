// Reading the append-only audit log for operators, and writing the rows replyflow adds itself, outside
// the decision path: a refusal of something an operator's role does not allow, a purge.
import type { Pool } from '../db/pool';

export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  approver: string | null;
  action: string;
  target: string;
  businessKey: string | null;
  stateBefore: string | null;
  stateAfter: string | null;
  reason: string | null;
  result: string;
  requestId: string | null;
}

interface AuditFilter {
  workflowId?: string;
  actor?: string;
  since?: Date;
  until?: Date;
  /** @default 1000 */
  limit?: number;
  /**
   * Only rows about workflows whose event came through one of these tenants (an operator limited to
   * them); rows about accounts, conversations or maintenance are left out too. Absent: every row.
   */
  tenants?: string[];
}

/** Oldest first, as decisions happened; the newest `limit` rows when there are more. */
export async function listAudit(pool: Pool, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  const { rows } = await pool.query(
    `SELECT * FROM (
       SELECT id, at, actor, approver, action, workflow_id, business_key, state_before, state_after,
              reason, result, request_id
         FROM audit_log
        WHERE ($1::text IS NULL OR workflow_id = $1)
          AND ($2::text IS NULL OR actor = $2)
          AND ($3::timestamptz IS NULL OR at >= $3)
          AND ($4::timestamptz IS NULL OR at < $4)
          AND ($6::text[] IS NULL OR workflow_id IN (SELECT workflow_id FROM events WHERE tenant = ANY($6)))
        ORDER BY id DESC
        LIMIT $5) newest
     ORDER BY id`,
    [
      filter.workflowId ?? null,
      filter.actor ?? null,
      filter.since ?? null,
      filter.until ?? null,
      filter.limit ?? 1000,
      filter.tenants ?? null,
    ],
  );
  return rows.map((r) => ({
    id: Number(r.id),
    at: (r.at as Date).toISOString(),
    actor: r.actor,
    approver: r.approver,
    action: r.action,
    target: r.workflow_id,
    businessKey: r.business_key,
    stateBefore: r.state_before,
    stateAfter: r.state_after,
    reason: r.reason,
    result: r.result,
    requestId: r.request_id,
  }));
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
  await pool.query(
    `INSERT INTO audit_log (actor, action, workflow_id, reason, result) VALUES ($1, $2, $3, $4, $5)`,
    [entry.actor, entry.action, entry.target, entry.reason?.slice(0, 500) ?? null, entry.result],
  );
}
