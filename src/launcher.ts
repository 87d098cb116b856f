// `replyflow start`: the whole system on one machine. What is not configured is started embedded
// (a Temporal dev server with its Web UI, a real PostgreSQL), all under the data dir so a second
// start reuses it. Whatever fails, everything already started is stopped again.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { NativeConnection } from '@temporalio/worker';
import { type Config, tracesExport } from './config';
import { migrate } from './db/migrate';
import { createOperatorStore } from './db/operators';
import { createPool, type Pool } from './db/pool';
import { sealKeyRegistered } from './db/seal-keys';
import { setUpDatabase } from './db/setup';
import { APPLICATION_ROLE, startEmbeddedPostgres } from './embedded/postgres';
import { errorMessage, isUnreachable } from './failures';
import type { Logger } from './logger';
import { reachableHostOf } from './ports';
import { startReceiver } from './receiver';
import { createResponder } from './responders';
import { resolveSandbox } from './sandbox/settings';
import { keyring, payloadCodec, resolveEncryptionKey } from './temporal/client';
import { CODEC_PATH } from './temporal/codec-server';
import { checkDevServerPorts, startDevServer } from './temporal/dev-server';
import { startTracing } from './tracing';
import { acksFirstGate, loadWorkerRoutes, startWorker } from './worker';

export interface Running {
  urls: {
    receiver: string;
    /** The address the receiver really listens on, `host:port`. */
    receiverListening?: string;
    sandbox?: string;
    temporalUi?: string;
    /** Where operators sign in so that the Web UI shows decrypted payloads. */
    codecLogin?: string;
    workerMetrics?: string;
    /** The address the worker's metrics really listen on, `host:port`. */
    workerMetricsListening?: string;
    temporal: string;
    database: string;
  };
  /** No operator account exists yet: nobody can decide until an admin adds one. */
  noOperators: boolean;
  stop(): Promise<void>;
  /** Rejects when the worker stops on its own (a crash): the process should stop and exit non-zero. */
  failed: Promise<never>;
}

type Role = 'all' | 'receiver' | 'worker';

/** Stops one part, but waits at most `ms`: a part stuck under load must not keep the others running. */
async function stopWithin(
  name: string,
  ms: number,
  stop: () => Promise<void>,
  logger: Logger,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
  });
  try {
    const outcome = await Promise.race([stop().then(() => 'stopped' as const), late]);
    if (outcome === 'late') logger.warn({ part: name, seconds: ms / 1000 }, 'did not stop in time; going on');
  } catch (err) {
    logger.error({ part: name, err: errorMessage(err) }, 'stop failed');
  } finally {
    clearTimeout(timer);
  }
}

/** How long each part may take to stop; the worker lets a send in flight finish (SEND_TIMEOUT). */
const STOP_MS = 15_000;

export async function launch(config: Config, logger: Logger, role: Role = 'all'): Promise<Running> {
  const stops: { name: string; ms: number; stop: () => Promise<void> }[] = [];
  // Never settles unless a worker runs and stops by itself.
  let failed: Promise<never> = new Promise(() => {});
  const stopAll = async () => {
    for (const { name, ms, stop } of stops.reverse()) await stopWithin(name, ms, stop, logger);
    stops.length = 0;
  };
  try {
    mkdirSync(config.REPLYFLOW_DATA_DIR, { recursive: true });
    // First in, so last out: the spans of the receiver's and the worker's last work are exported.
    const tracing = startTracing(tracesExport(config));
    if (tracing) stops.push({ name: 'traces', ms: STOP_MS, stop: () => tracing.shutdown() });
    // The sandbox is the local demo: on by default for `start` only, with secrets from the data dir.
    const sandbox = resolveSandbox(config, { local: role === 'all' });
    const encryptionKey = resolveEncryptionKey(config, { create: role === 'all' });
    // The worker checks its routes again when it is built; here a bad file stops the start before
    // PostgreSQL and Temporal are started or reached; so does a bot module that cannot be loaded.
    if (role !== 'receiver') {
      loadWorkerRoutes({ ...config, ...sandbox });
      await createResponder(config);
    }
    // A port the embedded Temporal cannot have stops the start before PostgreSQL is started for nothing.
    if (!config.TEMPORAL_ADDRESS && role === 'all')
      await checkDevServerPorts({ port: config.TEMPORAL_DEV_PORT, uiPort: config.TEMPORAL_UI_PORT });
    let databaseUrl = config.DATABASE_URL;
    let pool: Pool;
    if (databaseUrl) {
      pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE);
      stops.push({ name: 'database pool', ms: STOP_MS, stop: () => pool.end() });
      // As the application role this only finds nothing pending: the admin migrates (`replyflow setup`).
      await reaching({ what: 'PostgreSQL', at: hostOf(databaseUrl), setting: 'DATABASE_URL' }, () =>
        migrate(pool),
      );
      if (role !== 'receiver') await warnUnlessSealsVerify(pool, config, logger);
    } else {
      if (role !== 'all')
        throw new Error(`replyflow ${role} needs DATABASE_URL (only \`replyflow start\` embeds PostgreSQL)`);
      const pg = await startEmbeddedPostgres({ dir: path.join(config.REPLYFLOW_DATA_DIR, 'postgres') });
      stops.push({ name: 'PostgreSQL', ms: STOP_MS, stop: () => pg.stop() });
      // This process holds both the superuser and the payload key, so it is the admin's setup step too;
      // the receiver and the worker then connect as the application role.
      const admin = createPool(pg.adminUrl, 1);
      await setUpDatabase(admin, {
        appRole: APPLICATION_ROLE,
        payloadKeys: payloadCodec(encryptionKey, keyring(config)).keys,
      }).finally(() => admin.end());
      databaseUrl = pg.url;
      pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE);
      stops.push({ name: 'database pool', ms: STOP_MS, stop: () => pool.end() });
    }

    let temporalAddress = config.TEMPORAL_ADDRESS;
    let temporalUi = config.TEMPORAL_UI_URL;
    if (!temporalAddress) {
      if (role !== 'all')
        throw new Error(
          `replyflow ${role} needs TEMPORAL_ADDRESS (only \`replyflow start\` embeds Temporal)`,
        );
      const server = await startDevServer({
        dbFile: path.join(config.REPLYFLOW_DATA_DIR, 'temporal.sqlite'),
        port: config.TEMPORAL_DEV_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        uiCodecEndpoint: `${localReceiverUrl(config)}${CODEC_PATH}`,
        namespace: config.TEMPORAL_NAMESPACE,
      });
      stops.push({ name: 'Temporal dev server', ms: STOP_MS, stop: () => server.stop() });
      temporalAddress = server.address;
      temporalUi = server.uiUrl;
    }
    const effective: Config = {
      ...config,
      ...sandbox,
      TEMPORAL_UI_URL: temporalUi,
      // In one process the worker reaches the sandbox API on this receiver, wherever HOST binds it.
      SANDBOX_API_URL:
        config.SANDBOX_API_URL ?? (role === 'all' ? `${localReceiverUrl(config)}/sandbox/api` : undefined),
    };

    const temporalAt = {
      what: 'Temporal',
      at: temporalAddress,
      setting: config.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : 'the embedded dev server, TEMPORAL_DEV_PORT',
    };
    let workerMetrics: string | undefined;
    let workerMetricsListening: string | undefined;
    let workerConnection: NativeConnection | undefined;
    // One process: the receiver's starts hand each event's first task to this worker, which yields to them.
    const acksFirst = role === 'all' ? acksFirstGate(effective) : undefined;
    if (role !== 'receiver') {
      const worker = await reaching(temporalAt, () =>
        startWorker({
          config: effective,
          pool,
          temporalAddress,
          encryptionKey,
          logger: logger.child({ role: 'worker' }),
          acksFirst,
          tracing,
        }),
      );
      stops.push({ name: 'worker', ms: config.SEND_TIMEOUT + STOP_MS, stop: () => worker.stop() });
      workerMetrics = worker.metricsUrl;
      workerMetricsListening = worker.metricsListening;
      workerConnection = worker.connection;
      failed = worker.running.then(
        () => Promise.reject(new Error('the worker stopped')),
        (err) => Promise.reject(new Error(`the worker stopped: ${errorMessage(err)}`)),
      );
      failed.catch(() => {}); // observed by callers that care (the CLI); never an unhandled rejection
    }
    let receiverUrl = '';
    let receiverListening: string | undefined;
    if (role !== 'worker') {
      const receiver = await reaching(temporalAt, () =>
        startReceiver({
          config: effective,
          pool,
          temporalAddress,
          encryptionKey,
          logger: logger.child({ role: 'receiver' }),
          // One process: the receiver's starts hand each event's first workflow task to this worker.
          workerConnection,
          acksFirst,
          tracing,
        }),
      );
      stops.push({ name: 'receiver', ms: STOP_MS, stop: () => receiver.stop() });
      receiverUrl = receiver.url;
      receiverListening = receiver.listening;
    }
    return {
      urls: {
        receiver: receiverUrl,
        receiverListening,
        sandbox: receiverUrl && sandbox.SANDBOX_ENABLED ? `${receiverUrl}/sandbox` : undefined,
        temporalUi: temporalUi,
        codecLogin: receiverUrl ? `${receiverUrl}${CODEC_PATH}/login` : undefined,
        workerMetrics,
        workerMetricsListening,
        temporal: temporalAddress,
        database: databaseUrl.replace(/\/\/[^@/]*@/, '//'),
      },
      // Only for the banner's hint: a worker already polling must not exit because PostgreSQL
      // restarted just now (a chaos run caught that); unknown counts as "some".
      noOperators: await createOperatorStore(pool)
        .list()
        .then(
          (operators) => operators.length === 0,
          () => false,
        ),
      stop: stopAll,
      failed,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * A worker whose current payload key has no seal key registered would have every decision refused by
 * the database (migration 010): say so at start, with the fix, rather than at the first decision.
 */
async function warnUnlessSealsVerify(pool: Pool, config: Config, logger: Logger): Promise<void> {
  const keyId = config.REPLYFLOW_ENCRYPTION_KEY_ID;
  const registered = await sealKeyRegistered(pool, keyId).catch(() => true);
  if (!registered)
    logger.warn(
      { keyId },
      'the database does not verify seals of this payload key: operator decisions will be refused until the admin runs `replyflow setup` with it (docs/deploy.md, "Database roles")',
    );
}

/** The receiver's URL from this machine, known before it listens (HOST=0.0.0.0 is reached on loopback). */
function localReceiverUrl(config: Config): string {
  return `http://${reachableHostOf(config.HOST)}:${config.PORT}`;
}

/**
 * Runs `attempt`; a failure to connect is told as which server, where, and the setting that points
 * there (the other errors pass as they are). @throws the error, named so.
 */
async function reaching<T>(
  server: { what: string; at: string; setting: string },
  attempt: () => Promise<T>,
): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    if (!isUnreachable(err)) throw err;
    // The cause's message follows wherever the error is told (errorMessage).
    throw new Error(`cannot reach ${server.what} at ${server.at} (${server.setting})`, { cause: err });
  }
}

/** host:port of a database URL, never its credentials. */
function hostOf(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return url.port ? `${url.hostname}:${url.port}` : url.hostname;
  } catch {
    return 'the configured host';
  }
}
