// Whose is the run that already holds an event's workflow id? Anyone with access to Temporal can start
// `handleEvent` under an id the receiver will use later (a future event id). Such a run is not the
// event: a worker refuses plaintext input before doing anything, and another event's captured
// ciphertext runs as that other event. Answering the real delivery `200 duplicate` would lose it, so
// the receiver looks at the run first: its own runs carry this event, encrypted by our key.
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Failure } from '../failures';
import { isRefusedPayload } from '../model';
import { UnknownPayloadKeyError } from '../temporal/errors';

type ExistingRun =
  | { ours: true }
  | {
      ours: false;
      runId: string;
      /** Whether it still runs (then it must be terminated before the event's own run can start). */
      running: boolean;
      /** Whether it closed failed, terminated, cancelled or timed out (else it completed). */
      closedUnsuccessfully: boolean;
      /** Why it is not the event's, for the log: never its content. */
      why: string;
    };

const { WorkflowExecutionStatus, HistoryEventFilterType } = temporal.api.enums.v1;
const UNSUCCESSFUL = new Set<number>([
  WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_FAILED,
  WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TERMINATED,
  WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CANCELED,
  WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
]);

/**
 * Looks at the latest run under `workflowId`. It is someone else's when a worker failed it as refused
 * (its own verdict: such a run did nothing), or when its input is not `workflowId`'s event encrypted
 * by one of our keys: plaintext, ciphertext that does not authenticate, another event, or a sealed
 * decision. An input under a key id we do not hold counts as ours: every receiver holds every key
 * history may contain (docs/deploy.md), but during a mistaken rollout terminating a held item would
 * be worse than a lost start.
 *
 * @param inputCodec refuses what our keys did not encrypt (`refuseUnencrypted`), as workers do.
 */
export async function existingRun(
  client: Client,
  inputCodec: PayloadCodec,
  workflowId: string,
): Promise<ExistingRun> {
  const { namespace } = client.options;
  // Raw, not through the data converter: the run's memo is whatever its starter put there, and must
  // not be able to make this look fail.
  const described = await client.workflowService.describeWorkflowExecution({
    namespace,
    execution: { workflowId },
  });
  const runId = described.workflowExecutionInfo?.execution?.runId;
  const status = described.workflowExecutionInfo?.status ?? 0;
  // Without its run id, a termination would reach whatever run holds the id by then.
  if (!runId) throw new Error(`Temporal described ${workflowId} without a run id`);
  const someoneElses = (why: string): ExistingRun => ({
    ours: false,
    runId,
    running: status === WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING,
    closedUnsuccessfully: UNSUCCESSFUL.has(status),
    why,
  });
  const execution = { workflowId, runId };

  if (status === WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_FAILED) {
    const close = await client.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution,
      historyEventFilterType: HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
    });
    const failure = close.history?.events?.[0]?.workflowExecutionFailedEventAttributes?.failure;
    if (failure?.applicationFailureInfo?.type === Failure.PayloadRefused)
      return someoneElses('a worker refused its input');
  }

  const first = await client.workflowService.getWorkflowExecutionHistory({
    namespace,
    execution,
    maximumPageSize: 1,
  });
  const payloads = first.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
  if (payloads.length !== 1) return someoneElses('its input is not one event');
  let input: unknown;
  try {
    const [decoded] = await inputCodec.decode(payloads);
    input = defaultPayloadConverter.fromPayload(decoded!);
  } catch (err) {
    if (err instanceof UnknownPayloadKeyError) return { ours: true };
    return someoneElses('its input cannot be read');
  }
  if (isRefusedPayload(input)) return someoneElses(`its input is ${input.replyflowRefusedPayload}`);
  return isThisEvent(input, workflowId) ? { ours: true } : someoneElses('its input is not this event');
}

/** The receiver's start input for `workflowId`: an event of it, never a sealed decision. */
function isThisEvent(input: unknown, workflowId: string): boolean {
  if (typeof input !== 'object' || input === null) return false;
  const event = input as { workflowId?: unknown; provider?: unknown; eventId?: unknown; seal?: unknown };
  return (
    event.workflowId === workflowId &&
    typeof event.provider === 'string' &&
    typeof event.eventId === 'string' &&
    event.seal === undefined
  );
}
