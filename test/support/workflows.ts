// Starting event workflows directly (bypassing the receiver) and reading what they left behind.
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { InboundEvent } from '../../src/providers/types';
import type { handleEvent } from '../../workflows';
import { type ReplyState, type StatusView, statusQuery } from '../../workflows/messages';
import { eventually } from './eventually';
import { database } from './servers';
import { sandboxEvent, uniqueId, type WorkerSuite } from './system';

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

/** Waits until the workflow's status query reports `state`. */
export function waitForState(
  handle: WorkflowHandle,
  state: ReplyState,
  timeoutMs = 30_000,
): Promise<StatusView> {
  return eventually(`${handle.workflowId} reaches ${state}`, () => handle.query(statusQuery), {
    until: (view) => view.state === state,
    describe: (view) => view.state,
    timeoutMs,
  });
}

/**
 * The workflow's result, within `timeoutMs`: past it, an error that names the step (`what`) and the
 * state the run's status query reports, instead of a test that waits out mocha's timeout saying
 * nothing about where it stood.
 */
export async function resultWithin<T = unknown>(
  handle: WorkflowHandle,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      handle.query(statusQuery).then(
        (view) =>
          reject(
            new Error(
              `${what}: ${handle.workflowId} has no result after ${timeoutMs} ms (state ${view.state})`,
            ),
          ),
        (err: Error) =>
          reject(
            new Error(
              `${what}: ${handle.workflowId} has no result after ${timeoutMs} ms (its status: ${err.message})`,
            ),
          ),
      );
    }, timeoutMs);
  });
  try {
    return (await Promise.race([handle.result(), late])) as T;
  } finally {
    clearTimeout(timer);
  }
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

/**
 * A held item on the suite's blind sandbox target: each of `drops` sends is committed and its answer
 * lost (the first makes it held; the next ones are what a resend will meet).
 */
export async function heldItem(suite: WorkerSuite, drops = 1) {
  const conversationId = uniqueId('c');
  suite.fake.next(...Array.from({ length: drops }, () => 'accept-then-drop' as const));
  const handle = await startEvent(
    suite.temporal.client,
    suite.config.TEMPORAL_TASK_QUEUE,
    sandboxEvent({ conversationId, messageId: 'm1', target: 'sandbox-blind' }),
  );
  await waitForState(handle, 'held');
  const [row] = await effectRows(`chat:sandbox:${conversationId}:m1:answer`);
  return { handle, conversationId, effectId: row.id as string };
}

/**
 * How many bytes of (encoded) input the run's history holds: the run's own, and each activity task's
 * by activity type, in order. What grows a history toward Temporal's limit.
 */
export async function historyInputBytes(handle: WorkflowHandle) {
  const bytes = (payloads?: { data?: Uint8Array | null }[] | null) =>
    (payloads ?? []).reduce((sum, p) => sum + (p.data?.length ?? 0), 0);
  const { events } = await handle.fetchHistory();
  const tasks: Record<string, number[]> = {};
  for (const event of events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (!scheduled) continue;
    const type = scheduled.activityType?.name ?? '';
    tasks[type] = [...(tasks[type] ?? []), bytes(scheduled.input?.payloads)];
  }
  const started = events?.[0]?.workflowExecutionStartedEventAttributes;
  return { run: bytes(started?.input?.payloads), tasks };
}
