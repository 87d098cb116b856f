// Everything an operator needs to decide on one event workflow, without its message text: the
// workflow's own `status`, its effect rows, and every audit row about it.
import type { Client } from '@temporalio/client';
import { createEffectsRepository, type EffectView } from '../db/effects';
import type { Pool } from '../db/pool';
import { type AuditEntry, listAudit } from './audit';
import { type WorkflowStatus, workflowStatus } from './workflows';

export interface Inspection {
  workflow: WorkflowStatus;
  effects: EffectView[];
  audit: AuditEntry[];
}

/** The effect rows a workflow owns, and the row of its business key when another workflow owns it. */
export async function effectsOf(pool: Pool, workflowId: string, businessKey?: string): Promise<EffectView[]> {
  return createEffectsRepository(pool).viewsOf(workflowId, businessKey);
}

export async function inspectWorkflow(client: Client, pool: Pool, workflowId: string): Promise<Inspection> {
  const workflow = await workflowStatus(client, workflowId);
  const [effects, audit] = await Promise.all([
    effectsOf(pool, workflowId, workflow.status.businessKey),
    listAudit(pool, { workflowId }),
  ]);
  return { workflow, effects, audit };
}
