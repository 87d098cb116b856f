// The worker role: runs the event workflow and its activities on the task queue. Several workers can
// share one queue; each needs the same encryption key and database.
import path from 'node:path';
import { NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { type ActivityDeps, createActivities } from '../activities';
import { createNotifier } from './alerts';
import type { Config } from './config';
import { createEffectsRepository } from './db/effects';
import { createOperatorStore } from './db/operators';
import type { Pool } from './db/pool';
import { createSendPacing } from './db/send-pacing';
import { createTenantCredentialStore } from './db/tenant-credentials';
import type { Logger } from './logger';
import type { DeliveryPolicy } from './model';
import { freePort } from './ports';
import { createResponder } from './responders';
import { loadRouteFile, planner, type RouteSet, workerRouteChecks } from './routes';
import { createTargets, type TargetRegistry } from './targets';
import { AcksFirst } from './temporal/acks-first';
import { connectionSecurity, keyring, payloadCodec } from './temporal/client';
import { SearchAttributesMissingError } from './temporal/errors';
import { sdkLogger } from './temporal/sdk-logger';
import { searchAttributeAdvice, searchAttributeProblems } from './temporal/search-attributes';
import { workflowBundleFor } from './temporal/workflow-bundle';
import { fileTenantDirectory, tenantDirectoryOf } from './tenants/directory';
import { tenantsFileOf } from './tenants/tenants-file';
import type { Tracing } from './tracing';
import { createWorkerMetrics, gateMetrics, serveWorkerMetrics, type WorkerMetrics } from './worker-metrics';

export const WORKFLOWS_PATH = path.resolve(__dirname, '..', 'workflows');

let runtimeInstalled = false;
/** Where the SDK's Prometheus exporter answers, when installRuntime started one. */
let sdkMetricsUrl: string | undefined;
/**
 * The SDK's own logs, the core's included, go through `logger` (src/temporal/sdk-logger.ts) from
 * `level` up (REPLYFLOW_SDK_LOG_LEVEL). With `sdkMetricsPort`, the SDK's runtime metrics are exported
 * on that loopback port. Installed once per process: the first caller's options hold.
 */
export function installRuntime(options: {
  logger: Logger;
  level: Config['REPLYFLOW_SDK_LOG_LEVEL'];
  sdkMetricsPort?: number;
}): void {
  if (runtimeInstalled) return;
  const { level } = options;
  const bindAddress = options.sdkMetricsPort ? `127.0.0.1:${options.sdkMetricsPort}` : undefined;
  Runtime.install({
    logger: sdkLogger(options.logger, level),
    // The CLI stops the parts in order on SIGINT/SIGTERM (receiver, then worker): the SDK's own
    // handlers would shut the worker down at once, beside starts still in flight.
    shutdownSignals: [],
    telemetryOptions: {
      logging: { filter: { core: level, other: 'ERROR' }, forward: {} },
      ...(bindAddress && {
        metrics: { prometheus: { bindAddress, countersTotalSuffix: true, useSecondsForDurations: true } },
      }),
    },
  });
  runtimeInstalled = true;
  if (bindAddress) sdkMetricsUrl = `http://${bindAddress}/metrics`;
}

function deliveryPolicy(config: Config): DeliveryPolicy {
  return {
    maxAttempts: config.SEND_MAX_ATTEMPTS,
    maxElapsedMs: config.SEND_MAX_ELAPSED,
    sendTimeoutMs: config.SEND_TIMEOUT,
    reminderScheduleMs: config.HELD_REMINDERS,
    failedParkMs: config.FAILED_PARK,
    turnGatherMs: config.TURN_GATHER,
  };
}

interface WorkerHandle {
  worker: Worker;
  /** Its connection to Temporal, lent to a receiver in the same process for eager starts. */
  connection: NativeConnection;
  /** Resolves when the worker stopped; rejects if it crashed. */
  running: Promise<void>;
  /** The worker's Prometheus endpoint, when WORKER_METRICS_PORT is not 0. */
  metricsUrl?: string;
  /** The address the metrics endpoint really listens on, `host:port`. */
  metricsListening?: string;
  stop(): Promise<void>;
}

interface WorkerSetup {
  config: Config;
  pool: Pool;
  temporalAddress: string;
  encryptionKey: string;
  logger: Logger;
  /**
   * Set when a receiver in this process starts its workflows eagerly on this worker (`replyflow
   * start`): the worker then takes new tasks through this gate, which yields to the receiver's starts.
   */
  acksFirst?: AcksFirst;
  /** Tests pass a prebuilt bundle and their own queue. */
  workerOptions?: Partial<WorkerOptions>;
  /** Tests replace dependencies (targets pointing at fakes, a shorter policy). */
  deps?: Partial<ActivityDeps>;
  /** This process's traces, when OTEL_* turn them on (src/tracing): runs started traced are traced here. */
  tracing?: Tracing;
}

/**
 * The interceptors and the span sink of a traced worker. Untraced, the sink is there too and drops
 * what it is given: a run a traced receiver started still runs its workflow interceptors here
 * (workflows/otel-interceptors.ts), and the SDK logs an error for every call to a missing sink.
 */
function tracingOptions(tracing: Tracing | undefined): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  if (tracing) return tracing.workerOptions;
  return { sinks: { exporter: { export: { fn: () => {} } } } };
}

/**
 * Refuses to start on a namespace that lacks a search attribute the workflows set: they would fail
 * every start and every update of their state. A namespace the list cannot be read from (no
 * permission, say) is left to Worker.create, which fails on its own with Temporal's message.
 */
async function checkSearchAttributes(
  connection: NativeConnection,
  target: { address: string; namespace: string },
): Promise<void> {
  const problems = await searchAttributeProblems(connection.operatorService, target.namespace).catch(
    () => [],
  );
  if (problems.length > 0)
    throw new SearchAttributesMissingError(problems, searchAttributeAdvice(problems, target));
}

/**
 * Workflow tasks a worker runs at once when a receiver in its process starts workflows eagerly on it. A
 * task stays open while its send runs, the gather window included, so the SDK's default of 40 lets a
 * worker take ~20 new events a second, and each eager start needs a free slot: such a worker takes as
 * many tasks as it runs sends, and at most a quarter as many as its cache holds, which is twice the sends
 * by default. A task for a run that is not cached needs a cached run evicted first, and one with a task
 * or a send open cannot be: with as many slots as cached workflows, another conversation's first task
 * waited behind a burst's until its 10 s task timeout (bench:fairness: p99 14.3 s with a cache of 200,
 * 4.6 s with 400, 200 slots each), and with half as many (a cache of 200 for 100 slots) bench:tenants
 * still lost 1–5 first tasks that way in 7 runs of 8, none with a quarter (docs/benchmarks.md, "Lost
 * tasks came back"). The cache fits issue 25's memory since our workflow modules are loaded once for
 * all runs (src/temporal/workflow-bundle.ts). A worker on its own keeps the SDK's 40: past it a burst
 * waits in Temporal's task queue, and receivers sharing the machine keep their CPU for acknowledging (a
 * chaos run with as many task slots as send slots answered 94 deliveries 503 outside any disruption,
 * against 0 with 40).
 */
export function eagerWorkerSizes(config: Config): { workflowTaskSlots: number; cachedWorkflows: number } {
  // WORKER_MAX_CACHED_WORKFLOWS, or twice as many as the worker runs sends.
  const cachedWorkflows = config.WORKER_MAX_CACHED_WORKFLOWS || 2 * config.WORKER_ACTIVITY_SLOTS;
  return {
    workflowTaskSlots: Math.max(2, Math.min(config.WORKER_ACTIVITY_SLOTS, Math.floor(cachedWorkflows / 4))),
    cachedWorkflows,
  };
}

/**
 * The gate of a receiver and a worker in one process (src/temporal/acks-first.ts): a start slower
 * than a sixth of WEBHOOK_START_DEADLINE_MS (250 ms by default; against a distant Temporal, three
 * times its fastest starts, up to half the deadline), or a quarter of WEBHOOK_START_CONCURRENCY starts
 * in flight at once (8 of 32: a fast offer builds up starts in flight before any one is slow, and a
 * start waiting for a place is a 503 in waiting), makes the worker take new tasks more slowly, well
 * before a start could miss the deadline and be answered 503.
 */
export function acksFirstGate(config: Config): AcksFirst {
  return new AcksFirst({
    slowStartMs: config.WEBHOOK_START_DEADLINE_MS / 6,
    maxSlowStartMs: config.WEBHOOK_START_DEADLINE_MS / 2,
    busyStarts: Math.max(2, config.WEBHOOK_START_CONCURRENCY / 4),
    workflowSlots: eagerWorkerSizes(config).workflowTaskSlots,
    activitySlots: config.WORKER_ACTIVITY_SLOTS,
  });
}

/**
 * ROUTES_FILE as a worker with `config` runs it, checked as a whole against that worker (its
 * environment, its built-in targets, its Standard Webhooks sources): `replyflow start` calls it before
 * it starts anything, so that a bad file is refused in a moment with every problem at once.
 * @throws RouteFileError
 */
export function loadWorkerRoutes(
  config: Config,
  targets: TargetRegistry = createTargets(config),
): RouteSet | undefined {
  if (!config.ROUTES_FILE) return undefined;
  return loadRouteFile(
    config.ROUTES_FILE,
    workerRouteChecks(config, (target) => targets.has(target)),
  );
}

/** Builds a worker without running it (tests drive it with `worker.runUntil`). */
export async function createWorker(
  options: WorkerSetup,
): Promise<{ worker: Worker; connection: NativeConnection; metrics: WorkerMetrics }> {
  const { config, logger } = options;
  installRuntime({ logger, level: config.REPLYFLOW_SDK_LOG_LEVEL });
  // A route file with problems stops the start here, listing every problem, before anything connects.
  // So does a TENANTS_FILE with problems, or one naming a variable that is not set.
  const tenantsFile = tenantsFileOf(config);
  const routes = loadWorkerRoutes(
    config,
    options.deps?.targets ?? createTargets(config, {}, { tenants: fileTenantDirectory(tenantsFile) }),
  );
  const pool = options.deps?.pool ?? options.pool;
  const codec = payloadCodec(options.encryptionKey, keyring(config), { refuseUnencrypted: true });
  const tenants = tenantDirectoryOf(pool, codec, tenantsFile);
  const targets =
    options.deps?.targets ??
    createTargets(config, routes?.endpoints, {
      tenants,
      tenantStore: createTenantCredentialStore(pool, codec),
    });
  // So is a bot module that cannot be loaded.
  const responder = options.deps?.responder ?? (await createResponder(config));
  const connection = await NativeConnection.connect({
    address: options.temporalAddress,
    grpcCompression: { codec: config.TEMPORAL_GRPC_COMPRESSION },
    ...connectionSecurity(config),
  });
  try {
    await checkSearchAttributes(connection, {
      address: options.temporalAddress,
      namespace: config.TEMPORAL_NAMESPACE,
    });
  } catch (err) {
    await connection.close();
    throw err;
  }
  const metrics = options.deps?.metrics ?? createWorkerMetrics(options.pool);
  const activities = createActivities({
    pool,
    effects: createEffectsRepository(pool),
    operators: createOperatorStore(pool),
    pacing: createSendPacing(pool),
    payloadKeys: codec.keys,
    targets,
    responder,
    policy: deliveryPolicy(config),
    plan: planner(routes),
    slackReplies: { replyTo: config.SLACK_REPLY_TO, allIn: config.SLACK_REPLY_TO_ALL_IN },
    notify: createNotifier({
      logger,
      webhookUrl: config.ALERT_WEBHOOK_URL,
      temporalUiUrl: config.TEMPORAL_UI_URL,
      namespace: config.TEMPORAL_NAMESPACE,
    }),
    logger,
    metrics,
    ...options.deps,
  });
  let worker: Worker;
  try {
    worker = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      activities,
      // Workers refuse what is not encrypted by a known key (src/temporal/codec.ts).
      dataConverter: { payloadCodecs: [codec] },
      ...tracingOptions(options.tracing),
      // On SIGTERM (a rolling deploy) a send in flight may finish: cancelling it would turn a reply that
      // probably went out into an unknown outcome for the next worker to look up or hold.
      shutdownGraceTime: config.SEND_TIMEOUT,
      // A burst into one conversation leaves many workflows waiting for their turn: keep them cached
      // where memory allows, and run enough sends at once that gather windows do not queue them.
      // Beside a receiver (`replyflow start`, under npm start's heap limit) as many as it runs sends,
      // twice its task slots: the SDK would derive 32 from a 256 MiB heap, and evict and replay on
      // nearly every task (replies 22 % slower at 192 MiB; docs/benchmarks.md, "Memory").
      ...((config.WORKER_MAX_CACHED_WORKFLOWS !== undefined || options.acksFirst) && {
        maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS ?? eagerWorkerSizes(config).cachedWorkflows,
      }),
      ...(options.acksFirst
        ? { tuner: options.acksFirst.tuner() }
        : {
            maxConcurrentActivityTaskExecutions: config.WORKER_ACTIVITY_SLOTS,
            // Sends are local activities since the `local-sends` patch: the same slots for them.
            maxConcurrentLocalActivityExecutions: config.WORKER_ACTIVITY_SLOTS,
          }),
      ...(options.workerOptions?.workflowBundle
        ? {}
        : { workflowBundle: await workflowBundleFor(WORKFLOWS_PATH) }),
      ...options.workerOptions,
    });
  } catch (err) {
    await connection.close();
    throw err;
  }
  return { worker, connection, metrics };
}

/** Runs a worker until `stop()`, with its Prometheus endpoint on WORKER_METRICS_PORT (0: none). */
export async function startWorker(options: WorkerSetup): Promise<WorkerHandle> {
  const metricsPort = options.config.WORKER_METRICS_PORT;
  if (metricsPort > 0)
    installRuntime({
      logger: options.logger,
      level: options.config.REPLYFLOW_SDK_LOG_LEVEL,
      sdkMetricsPort: await freePort(),
    });
  const metrics = options.deps?.metrics ?? createWorkerMetrics(options.pool);
  if (options.acksFirst) gateMetrics(metrics.registry, options.acksFirst);
  // The metrics port is taken before the worker exists: a port in use then fails the start with its
  // own message, instead of leaving a created worker that holds the connection open.
  const metricsServer =
    metricsPort > 0
      ? await serveWorkerMetrics({
          port: metricsPort,
          host: options.config.HOST,
          metrics,
          sdkMetricsUrl,
          logger: options.logger,
        })
      : undefined;
  let worker: Worker;
  let connection: NativeConnection;
  try {
    ({ worker, connection } = await createWorker({ ...options, deps: { ...options.deps, metrics } }));
  } catch (err) {
    await metricsServer?.stop();
    throw err;
  }
  const running = worker.run().finally(() => connection.close());
  return {
    worker,
    connection,
    running,
    metricsUrl: metricsServer?.url,
    metricsListening: metricsServer?.listening,
    async stop() {
      // No eager start may be in flight when the SDK's shutdown begins (AcksFirst.close says why).
      await options.acksFirst?.close();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      options.acksFirst?.stop();
      await metricsServer?.stop();
    },
  };
}
