// Prometheus metrics of the worker role on one endpoint: what effects did (outcomes, time to
// resolution, retries by error class; held and failed counts read from PostgreSQL at scrape time)
// next to the Temporal SDK's runtime metrics, which its own exporter serves on a loopback port.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { createEffectsRepository, type EffectsRepository } from './db/effects';
import type { Pool } from './db/pool';
import { errorMessage } from './failures';
import type { Logger } from './logger';
import { ALERT_KINDS, type AlertKind } from './model';
import { boundAddress, listenOn, reachableHost } from './ports';
import type { AcksFirst } from './temporal/acks-first';
import { TenantLabels, withTenant } from './tenants/metric-label';

/** The states an effect is recorded in that an operator cares about. */
type EffectOutcome = 'succeeded' | 'held' | 'failed' | 'discarded' | 'skipped';
/** Who settled an effect: the send protocol itself, or an operator's decision. */
type SettledBy = 'worker' | 'operator';

/** Effect states that are not final: counted from the effects table at every scrape. */
const OPEN_STATES = ['claimed', 'sending', 'retry_wait', 'unknown', 'held', 'failed'] as const;
const NONE_OPEN = { count: 0, oldestSeconds: 0 };

/** Which send it was: its target, and the tenant whose credential it used (src/tenants/tenant-id.ts). */
export interface SendLabels {
  target: string;
  tenant?: string;
}

export interface WorkerMetrics {
  registry: Registry;
  /** An effect was recorded `state`; `ageSeconds`: since it was claimed (its time to resolution). */
  outcome(send: SendLabels, state: EffectOutcome, by: SettledBy, ageSeconds?: number): void;
  /** A failed send attempt will be retried; `errorClass` as the target adapter classified the failure. */
  retry(send: SendLabels, errorClass: string): void;
  /** An alert of `kind` was delivered, or its delivery failed (the activity retries it). */
  alerted(kind: AlertKind, delivered: boolean): void;
}

export function createWorkerMetrics(pool: Pool): WorkerMetrics {
  const registry = new Registry();
  const tenants = new TenantLabels();
  const outcomes = new Counter({
    name: 'replyflow_effect_outcomes_total',
    help: 'Effects recorded in a state (succeeded, held, failed, discarded), by target, tenant (the first 100 a worker sees, then other) and who settled them',
    labelNames: ['target', 'state', 'by', 'tenant'],
    registers: [registry],
  });
  const resolution = new Histogram({
    name: 'replyflow_effect_resolution_seconds',
    help: 'Time from claiming an effect to its final state (succeeded or discarded), by target and who settled it',
    labelNames: ['target', 'state', 'by'],
    // From an immediate reply to a held item an operator settles days later.
    buckets: [0.5, 1, 2, 5, 15, 60, 300, 900, 3600, 4 * 3600, 86_400, 3 * 86_400, 7 * 86_400],
    registers: [registry],
  });
  const retries = new Counter({
    name: 'replyflow_send_retries_total',
    help: 'Send attempts that failed and are retried, by target, tenant (the first 100 a worker sees, then other) and error class',
    labelNames: ['target', 'error_class', 'tenant'],
    registers: [registry],
  });
  const alerts = new Counter({
    name: 'replyflow_alerts_total',
    help: 'Alerts about held and failed work delivered (logged, and posted to ALERT_WEBHOOK_URL when set), by kind: held, failed, reminder (held work still waiting, HELD_REMINDERS)',
    labelNames: ['kind'],
    registers: [registry],
  });
  const alertFailures = new Counter({
    name: 'replyflow_alert_failures_total',
    help: 'Alert deliveries that failed (ALERT_WEBHOOK_URL unreachable or not 2xx) and are retried, by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  for (const kind of ALERT_KINDS) {
    alerts.inc({ kind }, 0);
    alertFailures.inc({ kind }, 0);
  }
  const queryErrors = new Counter({
    name: 'replyflow_metrics_query_errors_total',
    help: 'Scrapes whose effect counts could not be read from PostgreSQL',
    registers: [registry],
  });
  const effects = createEffectsRepository(pool);
  // One read of the effects table per scrape, shared by the gauges below: prom-client collects all
  // metrics of a scrape at once, so the first gauge's collect starts the read and the other joins it.
  let reading: Promise<Awaited<ReturnType<EffectsRepository['openByStatus']>> | undefined> | undefined;
  const readOpen = () => {
    reading ??= effects
      .openByStatus(OPEN_STATES)
      .catch(() => {
        queryErrors.inc();
        return undefined;
      })
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
  /** Sets each open status from the shared read; no numbers rather than stale ones when it failed. */
  const openGauge = (
    name: string,
    help: string,
    value: (open: { count: number; oldestSeconds: number }) => number,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const open = await readOpen();
        // The error counter says why the series are missing.
        if (!open) return this.reset();
        for (const status of OPEN_STATES) this.set({ status }, value(open.get(status) ?? NONE_OPEN));
      },
    });
  openGauge(
    'replyflow_effects_open',
    'Effects not in a final state, by status (held and failed wait for an operator), across all workers',
    (open) => open.count,
  );
  openGauge(
    'replyflow_effects_open_oldest_seconds',
    'Seconds since the oldest effect in each open status got there (held: how long the oldest held item has waited for an operator; 0 when none), across all workers',
    (open) => open.oldestSeconds,
  );
  return {
    registry,
    outcome({ target, tenant }, state, by, ageSeconds) {
      outcomes.inc(withTenant({ target, state, by }, tenants.of(tenant)));
      // The histogram stays per target: its buckets times every tenant would be too many series.
      if ((state === 'succeeded' || state === 'discarded') && ageSeconds !== undefined)
        resolution.observe({ target, state, by }, ageSeconds);
    },
    retry({ target, tenant }, errorClass) {
      retries.inc(withTenant({ target, error_class: errorClass }, tenants.of(tenant)));
    },
    alerted(kind, delivered) {
      (delivered ? alerts : alertFailures).inc({ kind });
    },
  };
}

/**
 * The state of the gate through which a worker beside a receiver takes new tasks (`replyflow start`,
 * src/temporal/acks-first.ts), read at each scrape.
 */
export function gateMetrics(registry: Registry, gate: Pick<AcksFirst, 'underPressure' | 'perSecond'>): void {
  new Gauge({
    name: 'replyflow_worker_yielding',
    help: '1 while the receiver in this process sees slow workflow starts, so that the worker yields to it (declines eager starts, takes new tasks slowly); else 0',
    registers: [registry],
    collect() {
      this.set(gate.underPressure ? 1 : 0);
    },
  });
  new Gauge({
    name: 'replyflow_worker_task_rate',
    help: 'New workflow and activity tasks a second the worker beside a receiver may take now (2000: no limit); under pressure (a slow start, or a quarter of the start places busy) cut every 100 ms to half of what it was taking',
    registers: [registry],
    collect() {
      this.set(gate.perSecond);
    },
  });
}

interface MetricsServer {
  /** Where this machine scrapes it. */
  url: string;
  /** The address it really listens on, `host:port`. */
  listening: string;
  stop(): Promise<void>;
}

/**
 * Serves `GET /metrics`: our registry followed by the SDK exporter's text (when it runs), so that
 * one scrape target covers the worker. An unreachable SDK exporter leaves our metrics served.
 */
export async function serveWorkerMetrics(options: {
  port: number;
  metrics: WorkerMetrics;
  /** The Temporal SDK's Prometheus exporter (bound on loopback by installRuntime). */
  sdkMetricsUrl?: string;
  logger: Logger;
  /** HOST: loopback unless a deployment opens it for its Prometheus. */
  host: string;
}): Promise<MetricsServer> {
  const { registry } = options.metrics;
  // Process metrics only where they are served (tests build many workers in one process).
  collectDefaultMetrics({ register: registry });
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    void (async () => {
      const ours = await registry.metrics();
      const sdk = options.sdkMetricsUrl
        ? await fetch(options.sdkMetricsUrl, { signal: AbortSignal.timeout(5000) })
            .then((r) => (r.ok ? r.text() : ''))
            .catch(() => '')
        : '';
      res.writeHead(200, { 'content-type': registry.contentType }).end(sdk ? `${ours}\n${sdk}` : ours);
    })().catch((err: unknown) => {
      options.logger.error({ err: errorMessage(err) }, 'worker metrics scrape failed');
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await listenOn(server, options.host, options.port, { port: 'WORKER_METRICS_PORT', role: 'worker metrics' });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${reachableHost(address)}:${address.port}/metrics`,
    listening: boundAddress(address),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
