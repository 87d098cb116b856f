// Makes an event durable: starts its workflow under the id derived from (provider, event id). A
// duplicate start is the first dedupe key, once the run that holds the id is known to be the event's
// (existing-run.ts); a start Temporal cannot confirm in time is "unavailable".
import { createHash } from 'node:crypto';
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { type PayloadCodec, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import type { handleEvent } from '../../workflows';
import {
  ConversationId,
  CorrelationId,
  Provider,
  ReplyState,
  Tenant,
} from '../../workflows/search-attributes';
import { errorMessage } from '../failures';
import type { StartDispatch } from '../metrics';
import type { InboundEvent } from '../providers/types';
import { parseTenant } from '../tenants/tenant-id';
import { activeTraceId } from '../tracing';
import type { DeadlineCalls } from './deadline-calls';
import { TemporalDeadlineError, TemporalUnavailableError } from './errors';
import { existingRun } from './existing-run';
import type { StartQueue } from './start-queue';

export type StartOutcome = 'accepted' | 'duplicate';

/**
 * The largest event (as JSON) a workflow start may carry: Temporal refuses a payload over 2 MiB by
 * default (the server's limit.blobSize.error), which would otherwise surface as a 503 the sender
 * retries forever. The margin covers the codec's envelope.
 */
const MAX_EVENT_BYTES = 2_000_000;

/** Why an event can never become a workflow's input, as the answer to give, or undefined when it can. */
export function storageProblem(event: InboundEvent): { status: 400 | 413; error: string } | undefined {
  let json: string;
  try {
    json = JSON.stringify(event);
  } catch {
    return { status: 400, error: 'the body cannot be stored as a workflow input' };
  }
  if (Buffer.byteLength(json) > MAX_EVENT_BYTES)
    return { status: 413, error: `the event is over the ${MAX_EVENT_BYTES} bytes a workflow input may hold` };
  return undefined;
}

export interface EventStarter {
  start(event: InboundEvent): Promise<StartOutcome>;
}

/**
 * How an event's workflow is started; the benchmark's raw loop uses the same options. `eager` asks
 * Temporal to hand the run's first workflow task back with the start's answer, to the worker that
 * shares the client's connection (a receiver and a worker in one process, as `replyflow start` runs
 * them): the task skips the task queue, its matching and a poll, and the server does a fifth to a third
 * less work per event (docs/benchmarks.md). Temporal starts the run the same way and the 202 still waits for it;
 * with no free workflow-task slot the SDK asks for a plain start.
 */
export function eventStartOptions(
  event: InboundEvent,
  taskQueue: string,
  {
    eager = false,
    reuse = WorkflowIdReusePolicy.REJECT_DUPLICATE,
    traceId,
  }: {
    eager?: boolean;
    /** Only to replace a run that is not the event's (src/receiver/existing-run.ts). */
    reuse?: WorkflowIdReusePolicy;
    /**
     * The trace of the request that starts the run, with traces on: kept in the memo (encrypted like
     * every payload, and no message text), where `replyflow show` finds it without the history.
     */
    traceId?: string;
  } = {},
): WorkflowStartOptions<typeof handleEvent> {
  return {
    ...(eager && { requestEagerStart: true }),
    workflowId: event.workflowId,
    taskQueue,
    args: [event],
    // A closed run with this id means the event was handled: a redelivery is a duplicate.
    workflowIdReusePolicy: reuse,
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
    memo: { correlationId: event.correlationId, ...(traceId && { traceId }) },
    // What the Web UI shows above the workflow (decoded through the codec login, like the input).
    staticSummary: eventSummary(event),
    // Its tasks, and its activities' (they inherit it), take turns with other conversations' in
    // Temporal's matching: a burst into one conversation queues behind itself, not in front of others.
    priority: { fairnessKey: fairnessKeyOf(event) },
    typedSearchAttributes: [
      { key: ReplyState, value: 'received' },
      { key: Provider, value: event.provider },
      { key: CorrelationId, value: event.correlationId },
      ...(event.conversation ? [{ key: ConversationId, value: event.conversation.id }] : []),
      // Only a well-formed id (providers build it that way): nothing else reaches an unencrypted field.
      ...(event.tenant && parseTenant(event.tenant) ? [{ key: Tenant, value: event.tenant }] : []),
    ],
  };
}

/** Well within Temporal's limit on a workflow's summary (user metadata). */
export const SUMMARY_CHARS = 200;
/**
 * What an event type or an id may look like to be shown: no spaces, so never a sentence of text, and
 * no brackets or angle brackets, so no link or HTML in the Markdown the UI renders a summary as.
 */
const SHOWN = /^[\w.:@/+=-]{1,100}$/;

/**
 * One line an operator reads a workflow by: the provider, the event type, the conversation and the
 * tenant, each only when it is an identifier (the search attributes hold the same ids), never any
 * message text. E.g. `slack message · conversation T1:C1 · tenant slack:T1`.
 */
export function eventSummary(event: InboundEvent): string {
  const parts = [SHOWN.test(event.eventType) ? `${event.provider} ${event.eventType}` : event.provider];
  if (event.conversation && SHOWN.test(event.conversation.id))
    parts.push(`conversation ${event.conversation.id}`);
  if (event.tenant && parseTenant(event.tenant)) parts.push(`tenant ${event.tenant}`);
  return parts.join(' · ').slice(0, SUMMARY_CHARS);
}

/** Temporal's limit on a fairness key. */
const FAIRNESS_KEY_BYTES = 64;

/**
 * Whose share of the task queue an event's work counts against: its conversation (a chat, an order),
 * else its tenant, else its sender (a Standard Webhooks source). Ids only; a long one is hashed to fit.
 */
export function fairnessKeyOf(event: InboundEvent): string {
  const key = event.conversation?.id ?? event.tenant ?? event.provider;
  if (Buffer.byteLength(key, 'utf8') <= FAIRNESS_KEY_BYTES) return key;
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('base64url')}`;
}

/**
 * How often one delivery replaces a run that is not its event's before it gives up with a 503: an
 * attacker racing the receiver with new impostor starts only delays the event until the redelivery.
 */
const MAX_REPLACEMENTS = 2;

export function temporalEventStarter(options: {
  client: Client;
  calls: DeadlineCalls;
  taskQueue: string;
  /** WEBHOOK_START_DEADLINE_MS, for everything a start takes: below every sender's ack deadline. */
  deadlineMs: number;
  /** Where starts wait for their turn at Temporal (WEBHOOK_START_CONCURRENCY at once). */
  queue: StartQueue;
  /**
   * Eager starts: the client's connection is a worker's, in this process; a function decides per
   * event (src/temporal/acks-first.ts: not for a burst while that worker yields).
   */
  eager?: boolean | ((event: InboundEvent) => boolean);
  /** Refuses payloads our keys did not encrypt, as workers do: tells the receiver's runs from others. */
  inputCodec: PayloadCodec;
  /** Told as each start begins, and by the function it returns when it settled (src/temporal/acks-first.ts). */
  timing?: { startBegan(): () => void };
  /** Told how each started workflow's first task went to a worker (the receiver counts it). */
  onStarted?: (dispatch: StartDispatch) => void;
  /** Told when a run that was not the event's was replaced by the event's own (the receiver logs it). */
  onReplaced?: (replaced: { workflowId: string; runId: string; why: string }) => void;
}): EventStarter {
  const { client, calls, taskQueue, deadlineMs, queue, eager, inputCodec, timing, onStarted, onReplaced } =
    options;
  return {
    async start(event) {
      const settled = timing?.startBegan();
      const began = Date.now();
      try {
        // A delivery that waited half its deadline for its turn is answered 503 without a call: the
        // other half is for the start itself.
        return await queue.run(deadlineMs / 2, () => startOnce(event, began), fairnessKeyOf(event));
      } catch (err) {
        if (!(err instanceof TemporalDeadlineError)) throw err;
        throw new TemporalUnavailableError('Temporal is not confirming starts in time (waited for a turn)', {
          cause: err,
        });
      } finally {
        settled?.();
      }
    },
  };

  async function startOnce(event: InboundEvent, began: number): Promise<StartOutcome> {
    const deadline = began + deadlineMs;
    const eagerNow = typeof eager === 'function' ? eager(event) : eager;
    const inTime = <T>(call: () => Promise<T>) => calls.run(Math.max(1, deadline - Date.now()), call);
    try {
      let reuse: WorkflowIdReusePolicy | undefined;
      for (let replaced = 0; ; replaced++) {
        try {
          const handle = await inTime(() =>
            client.workflow.start<typeof handleEvent>(
              'handleEvent',
              eventStartOptions(event, taskQueue, { eager: eagerNow, reuse, traceId: activeTraceId() }),
            ),
          );
          onStarted?.(handle.eagerlyStarted ? 'eager' : 'queue');
          return 'accepted';
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        }
        const existing = await inTime(() => existingRun(client, inputCodec, event.workflowId));
        if (existing.ours) return 'duplicate';
        if (replaced === MAX_REPLACEMENTS) throw new Error('runs that are not the event keep taking its id');
        if (existing.running) await inTime(() => terminate(client, event.workflowId, existing.runId));
        onReplaced?.({ workflowId: event.workflowId, runId: existing.runId, why: existing.why });
        // After a run that did not complete (a refused or terminated one), only such a run may be
        // replaced: a concurrent delivery whose own start completed already is then refused, and
        // answered duplicate. A completed impostor (another event's ciphertext) needs any reuse;
        // a delivery racing that replacement starts a second run, which the ledger ends as duplicate.
        reuse =
          existing.running || existing.closedUnsuccessfully
            ? WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY
            : WorkflowIdReusePolicy.ALLOW_DUPLICATE;
      }
    } catch (err) {
      throw new TemporalUnavailableError(`Temporal did not accept the start: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  }
}

/** Terminates that one run (never a newer one under the id); one that closed meanwhile is fine. */
async function terminate(client: Client, workflowId: string, runId: string): Promise<void> {
  try {
    await client.workflow
      .getHandle(workflowId, runId)
      .terminate('not started by the receiver: replaced by the real delivery of its event');
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
