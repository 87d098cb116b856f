// Prometheus metrics for the receiver and the worker. One registry per process, created on demand so
// tests can run several receivers in one process without clashing names.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { TenantLabels, withTenant } from './tenants/metric-label';

export const WEBHOOK_OUTCOMES = [
  'accepted',
  'duplicate',
  'rejected_signature',
  'invalid',
  'unavailable',
  /** Handshakes answered without an event (Slack url_verification, LINE's empty verify request). */
  'answered',
  /** Verified deliveries that carry no event (Slack app_rate_limited, unknown envelope types): 200. */
  'ignored',
] as const;

export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/**
 * Why a webhook was answered 503, which the sender retries: Temporal did not confirm the start in
 * time (`temporal_slow`), the delivery waited half that time for one of the WEBHOOK_START_CONCURRENCY
 * places at Temporal because the starts ahead of it were slow (`temporal_queued`), Temporal could not
 * be reached (`temporal_down`) or refused it (`temporal_refused`, e.g. a missing search attribute); or
 * what verifies the request, the tenant store in PostgreSQL, could not be read (`store_down`). Never "our own worker is busy": it yields (src/temporal/acks-first.ts).
 */
export const UNAVAILABLE_REASONS = [
  'temporal_slow',
  'temporal_queued',
  'temporal_down',
  'temporal_refused',
  'store_down',
] as const;

export type UnavailableReason = (typeof UNAVAILABLE_REASONS)[number];

/** The provider label of requests to a path no enabled provider serves (404). */
export const UNKNOWN_PROVIDER = 'unknown';

export interface ReceiverMetrics {
  registry: Registry;
  requests: Counter<'provider' | 'outcome'>;
  ackSeconds: Histogram<'provider' | 'outcome'>;
  /** Verified deliveries acknowledged without an event, by why. */
  ignored: Counter<'provider' | 'reason'>;
  /** Event workflows started, by how their first workflow task reached a worker. */
  starts: Counter<'dispatch'>;
  /** Counts one event made durable (its workflow started), by provider and tenant (bounded, see below). */
  accepted(provider: string, tenant: string | undefined): void;
  /** Connections closed as they arrived because RECEIVER_MAX_CONNECTIONS were open. */
  droppedConnections: Counter;
  /** Webhooks answered 503, by provider and why. */
  unavailable: Counter<'provider' | 'reason'>;
}

/**
 * `eager`: handed back with the start to the worker in this process (`replyflow start`); `queue`:
 * through the task queue, to whichever worker polls (a receiver on its own, or no free slot).
 */
export type StartDispatch = 'eager' | 'queue';

/** @param startsWaiting deliveries waiting for their turn to start at Temporal (src/receiver/start-queue.ts). */
export function createReceiverMetrics(startsWaiting?: () => number): ReceiverMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (startsWaiting)
    new Gauge({
      name: 'replyflow_webhook_starts_waiting',
      help: 'Deliveries waiting for one of the WEBHOOK_START_CONCURRENCY places to start their workflow at Temporal (each waits at most half of WEBHOOK_START_DEADLINE_MS, then 503)',
      registers: [registry],
      collect() {
        this.set(startsWaiting());
      },
    });
  const starts = new Counter({
    name: 'replyflow_workflow_starts_total',
    help: 'Event workflows started, by how their first workflow task reached a worker (eager: to the worker in this process with the start; queue: through the task queue)',
    labelNames: ['dispatch'] as const,
    registers: [registry],
  });
  for (const dispatch of ['eager', 'queue'] satisfies StartDispatch[]) starts.inc({ dispatch }, 0);
  const tenants = new TenantLabels();
  const acceptedEvents = new Counter({
    name: 'replyflow_events_accepted_total',
    help: 'Events made durable (their workflow started; redeliveries not counted), by provider and tenant (the first 100 tenants a receiver sees by id, then other; no label for events without a tenant)',
    labelNames: ['provider', 'tenant'] as const,
    registers: [registry],
  });
  return {
    registry,
    starts,
    accepted(provider, tenant) {
      acceptedEvents.inc(withTenant({ provider }, tenants.of(tenant)));
    },
    requests: new Counter({
      name: 'replyflow_webhook_requests_total',
      help: 'Webhook requests by provider and outcome',
      labelNames: ['provider', 'outcome'],
      registers: [registry],
    }),
    ackSeconds: new Histogram({
      name: 'replyflow_webhook_ack_seconds',
      help: 'Time from request to answer, by provider and outcome',
      labelNames: ['provider', 'outcome'],
      // Dense below 100 ms (our ack target) and up to the senders' deadlines (LINE 2 s, Slack 3 s).
      buckets: [0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3],
      registers: [registry],
    }),
    droppedConnections: new Counter({
      name: 'replyflow_receiver_connections_dropped_total',
      help: 'Connections the receiver closed as they arrived, because RECEIVER_MAX_CONNECTIONS were open',
      registers: [registry],
    }),
    unavailable: new Counter({
      name: 'replyflow_webhook_unavailable_total',
      help: 'Webhooks answered 503 (the sender retries), by provider and reason: temporal_slow (the start was not confirmed within WEBHOOK_START_DEADLINE_MS), temporal_queued (no place among WEBHOOK_START_CONCURRENCY came free within half of it), temporal_down, temporal_refused, store_down (the tenant store could not be read)',
      labelNames: ['provider', 'reason'],
      registers: [registry],
    }),
    ignored: new Counter({
      name: 'replyflow_webhook_ignored_total',
      help: 'Verified deliveries acknowledged without starting a workflow, by provider and reason',
      labelNames: ['provider', 'reason'],
      registers: [registry],
    }),
  };
}
