// `replyflow start`: the whole system on one machine. What is not configured is started embedded
// (a Temporal dev server with its Web UI, a real PostgreSQL), all under the data dir so a second
// start reuses it. Whatever fails, everything already started is stopped again.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config';
import { migrate } from './db/migrate';
import { createPool, type Pool } from './db/pool';
import { startEmbeddedPostgres } from './embedded/postgres';
import type { Logger } from './logger';
import { reachableHostOf } from './ports';
import { startReceiver } from './receiver';
import { resolveSandbox } from './sandbox/settings';
import { resolveEncryptionKey } from './temporal/client';
import { CODEC_PATH, codecTokenFile, resolveCodecToken } from './temporal/codec-server';
import { startDevServer } from './temporal/dev-server';
import { startWorker } from './worker';

export interface Running {
  urls: {
    receiver: string;
    /** The address the receiver really listens on, `host:port`. */
    receiverListening?: string;
    sandbox?: string;
    temporalUi?: string;
    /** Where operators sign in so that the Web UI shows decrypted payloads. */
    codecLogin?: string;
    /** The file holding the generated codec token (unset when CODEC_AUTH_TOKEN is set). */
    codecTokenFile?: string;
    workerMetrics?: string;
    /** The address the worker's metrics really listen on, `host:port`. */
    workerMetricsListening?: string;
    temporal: string;
    database: string;
  };
  stop(): Promise<void>;
  /** Rejects when the worker stops on its own (a crash): the process should stop and exit non-zero. */
  failed: Promise<never>;
}

type Role = 'all' | 'receiver' | 'worker';

export async function launch(config: Config, logger: Logger, role: Role = 'all'): Promise<Running> {
  const stops: (() => Promise<void>)[] = [];
  // Never settles unless a worker runs and stops by itself.
  let failed: Promise<never> = new Promise(() => {});
  const stopAll = async () => {
    for (const stop of stops.reverse())
      await stop().catch((err) => logger.error({ err: (err as Error).message }, 'stop failed'));
    stops.length = 0;
  };
  try {
    mkdirSync(config.REPLYFLOW_DATA_DIR, { recursive: true });
    // The sandbox is the local demo: on by default for `start` only, with secrets from the data dir.
    const sandbox = resolveSandbox(config, { local: role === 'all' });
    let databaseUrl = config.DATABASE_URL;
    let pool: Pool;
    if (databaseUrl) {
      pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE);
      stops.push(() => pool.end());
      await migrate(pool);
    } else {
      if (role !== 'all')
        throw new Error(`replyflow ${role} needs DATABASE_URL (only \`replyflow start\` embeds PostgreSQL)`);
      const pg = await startEmbeddedPostgres({ dir: path.join(config.REPLYFLOW_DATA_DIR, 'postgres') });
      stops.push(() => pg.stop());
      // Migrations run as the superuser; the application connects as a role that owns no table.
      const admin = createPool(pg.adminUrl, 1);
      await migrate(admin).finally(() => admin.end());
      databaseUrl = pg.url;
      pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE);
      stops.push(() => pool.end());
    }

    // The receiver serves the codec endpoint; `start` generates its token so the embedded UI has one.
    const codecToken = role === 'worker' ? undefined : resolveCodecToken(config, { create: role === 'all' });

    let temporalAddress = config.TEMPORAL_ADDRESS;
    let temporalUi = config.TEMPORAL_UI_URL;
    if (!temporalAddress) {
      if (role !== 'all')
        throw new Error(
          `replyflow ${role} needs TEMPORAL_ADDRESS (only \`replyflow start\` embeds Temporal)`,
        );
      const server = await startDevServer({
        dbFile: path.join(config.REPLYFLOW_DATA_DIR, 'temporal.sqlite'),
        port: 7233,
        uiPort: config.TEMPORAL_UI_PORT,
        uiCodecEndpoint: codecToken ? `${localReceiverUrl(config)}${CODEC_PATH}` : undefined,
        namespace: config.TEMPORAL_NAMESPACE,
      });
      stops.push(() => server.stop());
      temporalAddress = server.address;
      temporalUi = server.uiUrl;
    }
    const effective: Config = {
      ...config,
      ...sandbox,
      TEMPORAL_UI_URL: temporalUi,
      CODEC_AUTH_TOKEN: codecToken,
      // In one process the worker reaches the sandbox API on this receiver, wherever HOST binds it.
      SANDBOX_API_URL:
        config.SANDBOX_API_URL ?? (role === 'all' ? `${localReceiverUrl(config)}/sandbox/api` : undefined),
    };
    const encryptionKey = resolveEncryptionKey(config, { create: role === 'all' });

    let workerMetrics: string | undefined;
    let workerMetricsListening: string | undefined;
    if (role !== 'receiver') {
      const worker = await startWorker({
        config: effective,
        pool,
        temporalAddress,
        encryptionKey,
        logger: logger.child({ role: 'worker' }),
      });
      stops.push(() => worker.stop());
      workerMetrics = worker.metricsUrl;
      workerMetricsListening = worker.metricsListening;
      failed = worker.running.then(
        () => Promise.reject(new Error('the worker stopped')),
        (err) => Promise.reject(new Error(`the worker stopped: ${(err as Error).message}`)),
      );
      failed.catch(() => {}); // observed by callers that care (the CLI); never an unhandled rejection
    }
    let receiverUrl = '';
    let receiverListening: string | undefined;
    if (role !== 'worker') {
      const receiver = await startReceiver({
        config: effective,
        pool,
        temporalAddress,
        encryptionKey,
        logger: logger.child({ role: 'receiver' }),
      });
      stops.push(() => receiver.stop());
      receiverUrl = receiver.url;
      receiverListening = receiver.listening;
    }
    return {
      urls: {
        receiver: receiverUrl,
        receiverListening,
        sandbox: receiverUrl && sandbox.SANDBOX_ENABLED ? `${receiverUrl}/sandbox` : undefined,
        temporalUi: temporalUi,
        codecLogin: receiverUrl && codecToken ? `${receiverUrl}${CODEC_PATH}/login` : undefined,
        codecTokenFile:
          receiverUrl && codecToken && !config.CODEC_AUTH_TOKEN ? codecTokenFile(config) : undefined,
        workerMetrics,
        workerMetricsListening,
        temporal: temporalAddress,
        database: databaseUrl.replace(/\/\/[^@/]*@/, '//'),
      },
      stop: stopAll,
      failed,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** The receiver's URL from this machine, known before it listens (HOST=0.0.0.0 is reached on loopback). */
function localReceiverUrl(config: Config): string {
  return `http://${reachableHostOf(config.HOST)}:${config.PORT}`;
}
