// What operators see: alerts for held and failed work, and the append-only audit log.
import { createAlerts } from '../src/db/alerts';
import { type AuditRow, createAuditLog } from '../src/db/audit-log';
import type { ActivityDeps, Alert } from './deps';

export type { AuditRow } from '../src/db/audit-log';

export function operationsActivities({ pool, notify, metrics }: ActivityDeps) {
  const auditLog = createAuditLog(pool);
  const alerts = createAlerts(pool);
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
      await alerts.record(alert);
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
