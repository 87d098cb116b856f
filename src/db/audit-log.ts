// Owns: audit_log
// The audit log's one writer and its reader: every operator decision the workflow judged, accepted or
// refused, one row each (append-only: the table refuses UPDATE and DELETE), and the rows replyflow adds
// outside the decision path (role refusals, purges, account and conversation changes). `append` is the
// only INSERT INTO audit_log, so what a row may hold is decided in one place.
import type { Pool } from './pool';

export interface AuditRow {
  actor: string;
  approver?: string;
  action: string;
  workflowId: string;
  businessKey?: string;
  stateBefore?: string;
  stateAfter?: string;
  reason?: string;
  result: string;
  requestId?: string;
}

const COLUMNS = [
  'actor',
  'approver',
  'action',
  'workflow_id',
  'business_key',
  'state_before',
  'state_after',
  'reason',
  'result',
  'request_id',
] as const;

/** A stored row, as operators read it. */
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

export interface AuditFilter {
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

export type AuditLog = ReturnType<typeof createAuditLog>;

export function createAuditLog(pool: Pool) {
  return {
    /** Appends the rows, in order, in one statement. */
    async append(rows: readonly AuditRow[]): Promise<void> {
      if (rows.length === 0) return;
      const values = rows.flatMap((row) => [
        row.actor,
        row.approver ?? null,
        row.action,
        row.workflowId,
        row.businessKey ?? null,
        row.stateBefore ?? null,
        row.stateAfter ?? null,
        row.reason ?? null,
        row.result,
        row.requestId ?? null,
      ]);
      const tuples = rows.map(
        (_, r) => `(${COLUMNS.map((_, c) => `$${r * COLUMNS.length + c + 1}`).join(', ')})`,
      );
      await pool.query(`INSERT INTO audit_log (${COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}`, values);
    },

    /** Oldest first, as decisions happened; the newest `limit` rows when there are more. */
    async list(filter: AuditFilter = {}): Promise<AuditEntry[]> {
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
    },
  };
}
