// What operators see: alerts for held and failed work, and the append-only audit log.
import { type AuditRow, createAuditLog } from '../src/db/audit-log';
import type { ActivityDeps, Alert } from './deps';

export type { AuditRow } from '../src/db/audit-log';

export function operationsActivities({ pool, notify, metrics }: ActivityDeps) {
  const auditLog = createAuditLog(pool);
  return {
    async alert(alert: Alert): Promise<void> {
      try {
        await notify(alert);
      } catch (err) {
        metrics.alerted(alert.kind, false);
        throw err;
      }
      metrics.alerted(alert.kind, true);
      // Recorded once delivered: `replyflow reconcile` reports held work without a delivered alert.
      await pool.query(
        'INSERT INTO alerts (kind, level, workflow_id, business_key) VALUES ($1, $2, $3, $4)',
        [alert.kind, alert.level, alert.workflowId, alert.businessKey],
      );
    },

    async writeAudit(row: AuditRow): Promise<void> {
      await auditLog.append([row]);
    },

    /** Many rows at once: the refusals a workflow judged without an activity, written in one task. */
    async writeAudits(rows: AuditRow[]): Promise<void> {
      await auditLog.append(rows);
    },
  };
}
