// The event a run was started with, read back from Temporal by an activity that needs all of it (the
// routes map any payload field; a responder service is posted the message and its raw payload). Its
// workflow's history holds the event once, in the run's input: an activity task that carried it again
// would add up to 2 MB to the history per task (per responder call, per reprocess), toward Temporal's
// limit. Local activities still get it as an argument: their input is never written to history.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { InboundEvent } from '../src/providers/types';

/**
 * The first argument of the current activity's run (every run of an event workflow, a reset's or a
 * continue-as-new's included, starts with the event): the first event of its history, decoded by the
 * worker's data converter, which holds the payload key.
 */
async function eventOfRun(): Promise<InboundEvent> {
  const { client, info } = Context.current();
  const run = info.workflowExecution;
  if (!run) throw ApplicationFailure.nonRetryable('an event is read from its run: this activity has none');
  const { workflowId, runId } = run;
  const page = await client.workflowService.getWorkflowExecutionHistory({
    namespace: info.workflowNamespace,
    execution: { workflowId, runId },
    maximumPageSize: 1,
  });
  const payloads = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
  const event = payloads?.length
    ? await decodeFromPayloadsAtIndex<InboundEvent>(client.options.loadedDataConverter, 0, payloads)
    : undefined;
  // Not a run of an event workflow: retrying cannot make it one.
  if (!event?.eventId)
    throw ApplicationFailure.nonRetryable(`run ${runId} of ${workflowId} was not started with an event`);
  return event;
}

/** The event given to the activity (a local one, or a task scheduled before tasks left it out), or the run's. */
export async function eventOf(input: { event?: InboundEvent }): Promise<InboundEvent> {
  return input.event ?? eventOfRun();
}
