// Starting event workflows directly (bypassing the receiver) and reading what they left behind.
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { InboundEvent } from '../../src/providers/types';
import type { handleEvent } from '../../workflows';
import { type ReplyState, type StatusView, statusQuery } from '../../workflows/messages';
import { database } from './servers';

export async function startEvent(
  client: Client,
  taskQueue: string,
  event: InboundEvent,
): Promise<WorkflowHandle<typeof handleEvent>> {
  return client.workflow.start<typeof handleEvent>('handleEvent', {
    workflowId: event.workflowId,
    taskQueue,
    args: [event],
  });
}

/**
 * Waits until the workflow's status query reports `state` (or it closed). Polls the query, which is
 * an observation of the workflow, not a sleep standing in for one.
 */
export async function waitForState(
  handle: WorkflowHandle,
  state: ReplyState,
  timeoutMs = 30_000,
): Promise<StatusView> {
  const deadline = Date.now() + timeoutMs;
  let last: StatusView | undefined;
  while (Date.now() < deadline) {
    last = await handle.query(statusQuery).catch(() => last);
    if (last?.state === state) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`workflow ${handle.workflowId} did not reach ${state} (last: ${last?.state})`);
}

export async function effectRows(businessKeyPrefix: string) {
  const { pool } = await database();
  const { rows } = await pool.query(
    `SELECT id, target, business_key, status, attempts, external_id, workflow_id, last_error_class, next_attempt_at
       FROM effects WHERE business_key LIKE $1 || '%' ORDER BY created_at`,
    [businessKeyPrefix],
  );
  return rows;
}

export async function auditRows(workflowId: string) {
  const { pool } = await database();
  const { rows } = await pool.query('SELECT * FROM audit_log WHERE workflow_id = $1 ORDER BY id', [
    workflowId,
  ]);
  return rows;
}
