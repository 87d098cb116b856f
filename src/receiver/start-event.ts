// Makes an event durable: starts its workflow under the id derived from (provider, event id). A
// duplicate start is the first dedupe key; a start Temporal cannot confirm in time is "unavailable".
import {
  type Client,
  type Connection,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import type { handleEvent } from '../../workflows';
import { ConversationId, CorrelationId, Provider, ReplyState } from '../../workflows/search-attributes';
import type { InboundEvent } from '../providers/types';

export type StartOutcome = 'accepted' | 'duplicate';

/** Thrown when Temporal did not confirm the start before the deadline: the sender must retry (503). */
export class TemporalUnavailableError extends Error {
  override name = 'TemporalUnavailableError';
}

/** Thrown when a call to Temporal is still unanswered at its deadline. */
export class TemporalDeadlineError extends Error {
  override name = 'TemporalDeadlineError';
  constructor(readonly deadlineMs: number) {
    super(`Temporal did not answer within ${deadlineMs} ms`);
  }
}

export interface EventStarter {
  start(event: InboundEvent): Promise<StartOutcome>;
}

/** How an event's workflow is started; the benchmark's raw loop uses the same options. */
export function eventStartOptions(
  event: InboundEvent,
  taskQueue: string,
): WorkflowStartOptions<typeof handleEvent> {
  return {
    workflowId: event.workflowId,
    taskQueue,
    args: [event],
    // A closed run with this id means the event was handled: a redelivery is a duplicate.
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
    memo: { correlationId: event.correlationId },
    typedSearchAttributes: [
      { key: ReplyState, value: 'received' },
      { key: Provider, value: event.provider },
      { key: CorrelationId, value: event.correlationId },
      ...(event.conversation ? [{ key: ConversationId, value: event.conversation.id }] : []),
    ],
  };
}

/**
 * Runs a Temporal call that must settle within `deadlineMs`. The gRPC deadline alone is not enough:
 * the client's retry interceptor sleeps between attempts and only notices the deadline after the
 * sleep, which overshot it by up to half a second when the server was down. The call is cancelled and
 * the promise rejects at the deadline itself.
 */
export async function withinDeadline<T>(
  connection: Connection,
  deadlineMs: number,
  call: () => Promise<T>,
): Promise<T> {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(new TemporalDeadlineError(deadlineMs));
    }, deadlineMs);
  });
  const attempt = connection.withAbortSignal(abort.signal, () =>
    connection.withDeadline(Date.now() + deadlineMs, call),
  );
  // Whichever loses the race still settles; its outcome is already decided.
  attempt.catch(() => {});
  try {
    return await Promise.race([attempt, expired]);
  } finally {
    clearTimeout(timer);
  }
}

export function temporalEventStarter(
  client: Client,
  connection: Connection,
  taskQueue: string,
  deadlineMs: number,
): EventStarter {
  return {
    async start(event) {
      try {
        await withinDeadline(connection, deadlineMs, () =>
          client.workflow.start<typeof handleEvent>('handleEvent', eventStartOptions(event, taskQueue)),
        );
        return 'accepted';
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return 'duplicate';
        throw new TemporalUnavailableError(`Temporal did not accept the start: ${(err as Error).message}`);
      }
    },
  };
}
