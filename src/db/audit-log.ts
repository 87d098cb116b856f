// The audit log's writer for the decision path: every operator decision the workflow judged, accepted
// or refused, one row each (append-only: the table refuses UPDATE and DELETE). Rows come one at a
// time from a decision, or in batches from the refusals a workflow judges without an activity.
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
  };
}
