// How the event workflow calls its activities: one stub per kind of work, each with the retry policy
// that kind needs. The activities themselves are imported as types only (they run outside the sandbox).
import { patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { Failure } from '../src/failures';
import type { DeliveryPolicy } from '../src/model';
import { LOCAL_BOOKKEEPING } from './patches';

/**
 * Bookkeeping against PostgreSQL: retried until the database answers, so an outage delays work but
 * never loses it.
 */
export const records = proxyActivities<Activities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * The same bookkeeping on the main path (ledger, plan, transition, claim, turn request, outcome) as
 * local activities: each is one marker in the history instead of a task through Temporal's queues
 * and a workflow task, which cut the dev server's CPU per event by a third (docs/benchmarks.md). They
 * are idempotent, so the re-run a crashed worker causes is harmless.
 */
const localRecords = proxyLocalActivities<Activities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * The main-path bookkeeping for this run: local activities, except for runs started before they
 * were (their histories hold regular activity tasks, so they replay on `records`). `localAlready`:
 * a later patch implies this one, so the run need not record (and upsert) a second patch marker.
 * Call it once, first.
 */
export function mainPathRecords(localAlready: boolean): typeof records {
  return localAlready || patched(LOCAL_BOOKKEEPING) ? localRecords : records;
}

const RESPONDER_RETRY = {
  initialInterval: '2s',
  maximumAttempts: 5,
  nonRetryableErrorTypes: [Failure.PermanentResponder],
};

/** A responder service (RESPONDER_URL): an activity of its own, with its own retries. */
export const responder = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: RESPONDER_RETRY });

/** The built-in FAQ answers in-process: a local activity, in the same workflow task. */
export const localResponder = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: RESPONDER_RETRY,
});

export const lookups = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '2s', maximumAttempts: 5 },
});

/** Telling a revoked tenant's held runs (workflows/tenant-revoked.ts): a listing, heartbeated per run told. */
export const announcer = proxyActivities<Activities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

export const alerts = proxyActivities<Activities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '2s', maximumAttempts: 5 },
});

/**
 * Sends carry their lease: start-to-close bounds the lease, schedule-to-close the retry budget.
 * The send activity fails for good only with failures it throws as non-retryable (a missing or
 * unsendable effect, an unknown target); a permanent target error is an outcome, not a failure.
 * `local`: runs started since sends were local activities send inside the workflow task, one task
 * per event instead of three; the lease in PostgreSQL, not Temporal's timeout, is what keeps two
 * attempts from both writing (model/send.pml), so the protocol is the same either way.
 */
export function sender(policy: DeliveryPolicy, gatherMs = 0, turnWaitMs = 0, local = false) {
  const options = {
    // The attempt may first wait out the gather window and an earlier send of its conversation; its
    // lease is still SEND_TIMEOUT at most.
    startToCloseTimeout: policy.sendTimeoutMs + gatherMs + turnWaitMs,
    scheduleToCloseTimeout: policy.maxElapsedMs,
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '10m',
      maximumAttempts: policy.maxAttempts,
    },
  } as const;
  return local ? proxyLocalActivities<Activities>(options) : proxyActivities<Activities>(options);
}

export type Sender = ReturnType<typeof sender>;
