// Makes an event durable: starts its workflow under the id derived from (provider, event id). A
// duplicate start is the first dedupe key; a start Temporal cannot confirm in time is "unavailable".
import { type Client, type Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import type { handleEvent } from '../../workflows';
import { ConversationId, CorrelationId, Provider, ReplyState } from '../../workflows/search-attributes';
import type { InboundEvent } from '../providers/types';

export type StartOutcome = 'accepted' | 'duplicate';

/** Thrown when Temporal did not confirm the start before the deadline: the sender must retry (503). */
export class TemporalUnavailableError extends Error {
  override name = 'TemporalUnavailableError';
}

export interface EventStarter {
  start(event: InboundEvent): Promise<StartOutcome>;
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
        await connection.withDeadline(Date.now() + deadlineMs, () =>
          client.workflow.start<typeof handleEvent>('handleEvent', {
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
          }),
        );
        return 'accepted';
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return 'duplicate';
        throw new TemporalUnavailableError(`Temporal did not accept the start: ${(err as Error).message}`);
      }
    },
  };
}
