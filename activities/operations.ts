// What operators see: alerts for held and failed work, and the append-only audit log.
import type { ActivityDeps, Alert } from './deps';

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

export function operationsActivities({ pool, notify }: ActivityDeps) {
  return {
    async alert(alert: Alert): Promise<void> {
      await notify(alert);
      // Recorded once delivered: `replyflow reconcile` reports held work without a delivered alert.
      await pool.query(
        'INSERT INTO alerts (kind, level, workflow_id, business_key) VALUES ($1, $2, $3, $4)',
        [alert.kind, alert.level, alert.workflowId, alert.businessKey],
      );
    },

    async writeAudit(row: AuditRow): Promise<void> {
      await pool.query(
        `INSERT INTO audit_log (actor, approver, action, workflow_id, business_key, state_before, state_after, reason, result, request_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
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
        ],
      );
    },
  };
}
