// Owns: alerts
// The alerts table's one owner: a row per alert delivered to operators (activities/operations.ts
// records it once `notify` returned), so that `replyflow reconcile` can report held work nobody was
// told about.
import type { Pool } from './pool';

/** A delivered alert, as the table keeps it. */
interface AlertRow {
  kind: string;
  level: number;
  workflowId: string;
  businessKey: string;
}

export function createAlerts(pool: Pool) {
  return {
    async record(alert: AlertRow): Promise<void> {
      await pool.query(
        'INSERT INTO alerts (kind, level, workflow_id, business_key) VALUES ($1, $2, $3, $4)',
        [alert.kind, alert.level, alert.workflowId, alert.businessKey],
      );
    },

    /** Held effect rows, unchanged since `settled`, whose workflow has no delivered `held` alert. */
    async heldWithoutAlert(settled: Date): Promise<{ workflowId: string; businessKey: string }[]> {
      const { rows } = await pool.query<{ workflow_id: string; business_key: string }>(
        `SELECT workflow_id, business_key FROM effects
          WHERE status = 'held' AND updated_at < $1
            AND NOT EXISTS (SELECT 1 FROM alerts WHERE alerts.workflow_id = effects.workflow_id AND kind = 'held')`,
        [settled],
      );
      return rows.map((r) => ({ workflowId: r.workflow_id, businessKey: r.business_key }));
    },

    /** Which of these workflows had a `held` alert delivered. */
    async heldAlerted(workflowIds: readonly string[]): Promise<Set<string>> {
      const { rows } = await pool.query<{ workflow_id: string }>(
        `SELECT DISTINCT workflow_id FROM alerts WHERE kind = 'held' AND workflow_id = ANY($1::text[])`,
        [workflowIds],
      );
      return new Set(rows.map((r) => r.workflow_id));
    },
  };
}
