// Everything an operator needs to decide on one event workflow, without its message text: the
// workflow's own `status`, its effect rows, and every audit row about it.
import type { Client } from '@temporalio/client';
import type { Pool } from '../db/pool';
import { type AuditEntry, listAudit } from './audit';
import { type WorkflowStatus, workflowStatus } from './workflows';

/** An effect row as operators see it; `last_error` is a classified summary, never message text. */
interface EffectView {
  id: string;
  target: string;
  businessKey: string;
  step: string;
  status: string;
  attempts: number;
  lastErrorClass: string | null;
  lastError: string | null;
  externalId: string | null;
  workflowId: string;
  leaseExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

export interface Inspection {
  workflow: WorkflowStatus;
  effects: EffectView[];
  audit: AuditEntry[];
}

/** The effect rows a workflow owns, and the row of its business key when another workflow owns it. */
export async function effectsOf(pool: Pool, workflowId: string, businessKey?: string): Promise<EffectView[]> {
  const { rows } = await pool.query(
    `SELECT id, target, business_key, step, status, attempts, last_error_class, last_error, external_id,
            workflow_id, lease_expires_at, created_at, updated_at, completed_at
       FROM effects
      WHERE workflow_id = $1 OR ($2::text IS NOT NULL AND business_key = $2)
      ORDER BY created_at, step_index`,
    [workflowId, businessKey ?? null],
  );
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return rows.map((r) => ({
    id: r.id,
    target: r.target,
    businessKey: r.business_key,
    step: r.step,
    status: r.status,
    attempts: r.attempts,
    lastErrorClass: r.last_error_class,
    lastError: r.last_error,
    externalId: r.external_id,
    workflowId: r.workflow_id,
    leaseExpiresAt: iso(r.lease_expires_at),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    completedAt: iso(r.completed_at),
  }));
}

export async function inspectWorkflow(client: Client, pool: Pool, workflowId: string): Promise<Inspection> {
  const workflow = await workflowStatus(client, workflowId);
  const [effects, audit] = await Promise.all([
    effectsOf(pool, workflowId, workflow.status.businessKey),
    listAudit(pool, { workflowId }),
  ]);
  return { workflow, effects, audit };
}
