// Prometheus metrics for the receiver and the worker. One registry per process, created on demand so
// tests can run several receivers in one process without clashing names.
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

export type WebhookOutcome =
  | 'accepted'
  | 'duplicate'
  | 'rejected_signature'
  | 'invalid'
  | 'unavailable'
  | 'answered';

export interface ReceiverMetrics {
  registry: Registry;
  requests: Counter<'provider' | 'outcome'>;
  ackSeconds: Histogram<'provider' | 'outcome'>;
}

export function createReceiverMetrics(): ReceiverMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
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
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3],
      registers: [registry],
    }),
  };
}
