// The receiver role: the HTTP server in front of Temporal. Stateless; several can run side by side.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { Logger } from '../logger';
import { createReceiverMetrics } from '../metrics';
import { createProviders } from '../providers';
import { sandboxRouter } from '../sandbox/api';
import { connectionSecurity, dataConverter, keyring } from '../temporal/client';
import { codecRouter, codecServerOptions } from '../temporal/codec-server';
import { createReceiverApp } from './app';
import { DeadlineCalls } from './deadline-calls';
import { temporalEventStarter } from './start-event';

/** A probe slower than this counts as down: a load balancer's check must not hang. */
const READINESS_DEADLINE_MS = 1000;

export interface ReceiverHandle {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export async function startReceiver(options: {
  config: Config;
  pool: Pool;
  temporalAddress: string;
  encryptionKey: string;
  logger: Logger;
  /** Overrides config.PORT (tests use 0). */
  port?: number;
}): Promise<ReceiverHandle> {
  const { config, pool, logger } = options;
  // Lazy: the receiver starts (and answers 503) even while Temporal is down.
  const connection = Connection.lazy({
    address: options.temporalAddress,
    connectTimeout: 2000,
    ...connectionSecurity(config),
  });
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    dataConverter: dataConverter(options.encryptionKey, keyring(config)),
  });
  const calls = new DeadlineCalls(connection);
  const port = options.port ?? config.PORT;
  let selfUrl = `http://127.0.0.1:${port}`;
  // The codec server: payloads decrypted, and decisions sealed, for authenticated operators only.
  const codecServer = codecRouter(
    codecServerOptions(config, options.encryptionKey, pool, logger.child({ role: 'codec' })),
  );
  const app = createReceiverApp({
    providers: createProviders(config),
    starter: temporalEventStarter({
      client,
      calls,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      deadlineMs: config.WEBHOOK_START_DEADLINE_MS,
    }),
    readiness: async () => {
      const [temporal, postgres] = await Promise.all([
        calls
          .run(READINESS_DEADLINE_MS, () => connection.workflowService.getSystemInfo({}))
          .then(
            () => true,
            () => false,
          ),
        answersWithin(READINESS_DEADLINE_MS, () => pool.query('SELECT 1')),
      ]);
      return { temporal, postgres };
    },
    metrics: createReceiverMetrics(),
    logger,
    bodyLimit: config.WEBHOOK_BODY_LIMIT,
    extraRoutes: config.SANDBOX_ENABLED
      ? [
          sandboxRouter({
            pool,
            webhookSecret: config.SANDBOX_WEBHOOK_SECRET,
            receiverUrl: () => selfUrl,
            temporalUiUrl: config.TEMPORAL_UI_URL,
            namespace: config.TEMPORAL_NAMESPACE,
          }),
          codecServer,
        ]
      : [codecServer],
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, '0.0.0.0', (err?: Error) => (err ? reject(err) : resolve(s)));
    s.once('error', reject);
  }).catch((err: NodeJS.ErrnoException) => {
    throw new Error(
      err.code === 'EADDRINUSE'
        ? `port ${port} is already in use: stop what holds it or set PORT to another port`
        : `receiver could not listen on port ${port}: ${err.message}`,
    );
  });
  const actual = (server.address() as AddressInfo).port;
  selfUrl = `http://127.0.0.1:${actual}`;
  return {
    url: selfUrl,
    port: actual,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await calls.close();
    },
  };
}

/** Whether `probe` succeeds within `ms` (a probe that hangs counts as down). */
async function answersWithin(ms: number, probe: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      probe().then(
        () => true,
        () => false,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
