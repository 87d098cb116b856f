// The receiver role: the HTTP server in front of Temporal. Stateless; several can run side by side.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection, isGrpcServiceError, WorkflowNotFoundError } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { statusQuery } from '../../workflows/messages';
import { type Config, sandboxSecrets, slackOAuthSettings } from '../config';
import { createSignedBodiesStore } from '../db/github-signed-bodies';
import { type Pool, ping } from '../db/pool';
import { createTenantCredentialStore, revocationOf } from '../db/tenant-credentials';
import type { Logger } from '../logger';
import { createReceiverMetrics } from '../metrics';
import { operatorApi } from '../operator/api';
import { boundAddress, listenOn, reachableHost } from '../ports';
import { createProviders } from '../providers';
import { GITHUB_REPLAY_WINDOW_DAYS } from '../providers/github';
import { sandboxRouter } from '../sandbox/api';
import type { AcksFirst } from '../temporal/acks-first';
import { connectionSecurity, dataConverter, keyring, payloadCodec } from '../temporal/client';
import { codecRouter, codecServerOptions } from '../temporal/codec-server';
import { searchAttributeAdvice, searchAttributeProblems } from '../temporal/search-attributes';
import { tenantDirectoryOf } from '../tenants/directory';
import { revocationAnnouncer } from '../tenants/revocation-announcer';
import { tenantsFileOf } from '../tenants/tenants-file';
import type { Tracing } from '../tracing';
import { createReceiverApp } from './app';
import { DeadlineCalls } from './deadline-calls';
import { SLACK_EVENTS_ACTOR, slackInstallRouter } from './slack-install';
import { fairnessKeyOf, temporalEventStarter } from './start-event';
import { StartQueue } from './start-queue';

/** A probe slower than this counts as down: a load balancer's check must not hang. */
const READINESS_DEADLINE_MS = 1000;

export interface ReceiverHandle {
  /** Where this machine reaches the receiver (loopback when it listens on every interface). */
  url: string;
  port: number;
  /** The address it really listens on, `host:port`. */
  listening: string;
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
  /**
   * The connection of a worker running in the same process (`replyflow start`): starts go through it
   * and ask for eager execution, so an event's first workflow task comes back with the start to that
   * worker. The worker owns it; the receiver never closes it.
   */
  workerConnection?: NativeConnection;
  /** That worker's gate: told how long each start takes, so that the worker yields while they are slow. */
  acksFirst?: Pick<AcksFirst, 'startBegan' | 'eagerFor'>;
  /** This process's traces, when OTEL_* turn them on (src/tracing): each webhook request is a trace's root. */
  tracing?: Tracing;
}): Promise<ReceiverHandle> {
  const { config, pool, logger, workerConnection } = options;
  // A TENANTS_FILE with problems (or naming a variable that is not set) stops the start before anything connects.
  const tenantsFile = tenantsFileOf(config);
  const connection =
    workerConnection ??
    // Lazy: the receiver starts (and answers 503) even while Temporal is down.
    Connection.lazy({
      address: options.temporalAddress,
      connectTimeout: 2000,
      ...connectionSecurity(config),
    });
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    dataConverter: dataConverter(options.encryptionKey, keyring(config)),
    ...(options.tracing && { interceptors: { workflow: options.tracing.clientInterceptors } }),
  });
  const calls = new DeadlineCalls(connection, !workerConnection);
  const startQueue = new StartQueue(config.WEBHOOK_START_CONCURRENCY);
  const port = options.port ?? config.PORT;
  let selfUrl = '';
  // The codec server: payloads decrypted, and decisions sealed, for authenticated operators only.
  // The launcher binds the process part's `role`; a part of the receiver names itself in `component`,
  // since a second `role` binding would write the key twice in each of its lines.
  const codecOptions = codecServerOptions(
    config,
    options.encryptionKey,
    pool,
    (workflowId) => workflowStatus(client, workflowId),
    logger.child({ component: 'codec' }),
  );
  const codecServer = codecRouter(codecOptions);
  // Beside it, for the same operators: what the replyflow CLI asks, so operators need no other access.
  const operators = operatorApi({
    config,
    pool,
    codec: codecOptions,
    temporalAddress: options.temporalAddress,
    logger: logger.child({ component: 'operator-api' }),
  });
  const sandbox = sandboxSecrets(config);
  const sandboxRoutes = sandbox
    ? [
        sandboxRouter({
          pool,
          webhookSecret: sandbox.webhookSecret,
          apiToken: sandbox.apiToken,
          allowRemote: config.SANDBOX_ALLOW_REMOTE,
          receiverUrl: () => selfUrl,
          temporalUiUrl: config.TEMPORAL_UI_URL,
          namespace: config.TEMPORAL_NAMESPACE,
        }),
      ]
    : [];
  const namespace = { address: options.temporalAddress, namespace: config.TEMPORAL_NAMESPACE };
  const metrics = createReceiverMetrics(() => startQueue.waiting);
  const secretKeys = payloadCodec(options.encryptionKey, keyring(config));
  const tenants = tenantDirectoryOf(pool, secretKeys, tenantsFile);
  const tenantStore = createTenantCredentialStore(pool, secretKeys);
  const revocations = revocationAnnouncer({
    pool,
    client,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    logger,
    call: (start) => calls.run(config.WEBHOOK_START_DEADLINE_MS, start),
  });
  const slackOAuth = slackOAuthSettings(config);
  const slackInstallRoutes = slackOAuth
    ? [
        slackInstallRouter({
          settings: slackOAuth,
          store: tenantStore,
          tenants,
          logger: logger.child({ component: 'slack-install' }),
        }),
      ]
    : [];
  const app = createReceiverApp({
    providers: createProviders(config, {
      githubBodies: createSignedBodiesStore(pool, GITHUB_REPLAY_WINDOW_DAYS),
      tenants,
      slackRevocations: {
        async revoke(tenant, reason, eventId) {
          const revoked = await tenantStore.revoke(tenant, reason, {
            by: SLACK_EVENTS_ACTOR,
            reason: `${reason} (${eventId})`,
          });
          tenants.forget(tenant);
          if (revoked) logger.info({ tenant, reason }, 'slack installation revoked');
          // Its held work ends by itself, told at once. Told for a repeated notice too: the first may
          // have been refused before it was; once told, it is not told again.
          const revocation = await revocationOf(pool, tenant);
          if (revocation) await revocations.announce(tenant, revocation.revokedAt);
        },
      },
    }),
    starter: temporalEventStarter({
      client,
      calls,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      deadlineMs: config.WEBHOOK_START_DEADLINE_MS,
      queue: startQueue,
      eager:
        workerConnection !== undefined &&
        (options.acksFirst ? (event) => options.acksFirst!.eagerFor(fairnessKeyOf(event)) : true),
      timing: options.acksFirst,
      inputCodec: payloadCodec(options.encryptionKey, keyring(config), { refuseUnencrypted: true }),
      onStarted: (dispatch) => metrics.starts.inc({ dispatch }),
      onReplaced: (replaced) =>
        logger.warn(replaced, 'replaced a run under this event id that the receiver did not start'),
    }),
    readiness: async () => {
      const [temporal, postgres, attributes] = await Promise.all([
        calls
          .run(READINESS_DEADLINE_MS, () => connection.workflowService.getSystemInfo({}))
          .then(
            () => true,
            () => false,
          ),
        answersWithin(READINESS_DEADLINE_MS, () => ping(pool)),
        calls
          .run(READINESS_DEADLINE_MS, () =>
            searchAttributeProblems(connection.operatorService, config.TEMPORAL_NAMESPACE),
          )
          .catch(uncheckable),
      ]);
      return {
        checks: { temporal, postgres, searchAttributes: attributes?.length === 0 },
        problems: attributes?.length ? [searchAttributeAdvice(attributes, namespace)] : [],
      };
    },
    metrics,
    logger,
    tracer: options.tracing?.tracer,
    bodyLimit: config.WEBHOOK_BODY_LIMIT,
    extraRoutes: [...sandboxRoutes, ...slackInstallRoutes, codecServer, operators.router],
  });
  // Whose X-Forwarded-For / -Proto count (the codec login's source limit and Secure cookie): only
  // the proxies configured, so a client cannot claim another address or TLS itself.
  app.set('trust proxy', config.TRUST_PROXY.length > 0 ? config.TRUST_PROXY : false);
  const server = http.createServer(serverLimits(config), app);
  server.maxConnections = config.RECEIVER_MAX_CONNECTIONS;
  server.on('drop', () => metrics.droppedConnections.inc());
  try {
    await listenOn(server, config.HOST, port);
  } catch (err) {
    // A port in use: nothing of this receiver may outlive its failed start in a process that goes on
    // (the announcer's interval, the lazy connection and the operators' clients).
    revocations.stop();
    await Promise.all([calls.close(), operators.close()]);
    throw err;
  }
  const address = server.address() as AddressInfo;
  selfUrl = `http://${reachableHost(address)}:${address.port}`;
  return {
    url: selfUrl,
    port: address.port,
    listening: boundAddress(address),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      revocations.stop();
      await Promise.all([calls.close(), operators.close()]);
    },
  };
}

/** How long the codec server waits for a workflow's status when it binds a decision to its hold. */
const STATUS_DEADLINE_MS = 5000;

/** A workflow's state and hold (its `status` query), or undefined when there is no such workflow. */
async function workflowStatus(client: Client, workflowId: string) {
  try {
    const status = await client.withDeadline(Date.now() + STATUS_DEADLINE_MS, () =>
      client.workflow.getHandle(workflowId).query(statusQuery),
    );
    return { state: status.state, hold: status.hold };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/**
 * The HTTP server's bounds on what a client may hold (RECEIVER_* in src/config.ts). Node's own
 * defaults let a slow body hold a connection 300 s and slow headers 60 s, and accept any number of
 * idle connections. Node checks the headers and request timeouts every `connectionsCheckingInterval`
 * (30 s by default), so a client is cut at most that much after its timeout: a tenth of the shorter
 * one, at most a second. A slow answer is not cut: the request timeout ends once the request is in.
 */
export function serverLimits(
  config: Pick<
    Config,
    'RECEIVER_HEADERS_TIMEOUT' | 'RECEIVER_REQUEST_TIMEOUT' | 'RECEIVER_KEEP_ALIVE_TIMEOUT'
  >,
): http.ServerOptions {
  const shorter = Math.min(config.RECEIVER_HEADERS_TIMEOUT, config.RECEIVER_REQUEST_TIMEOUT);
  return {
    headersTimeout: config.RECEIVER_HEADERS_TIMEOUT,
    requestTimeout: config.RECEIVER_REQUEST_TIMEOUT,
    keepAliveTimeout: config.RECEIVER_KEEP_ALIVE_TIMEOUT,
    connectionsCheckingInterval: Math.min(1000, Math.ceil(shorter / 10)),
  };
}

/**
 * What an unanswered search-attribute list means: nothing known (down) while Temporal is unreachable,
 * but no problem where the server does not let us list them (a credential without the permission):
 * starts then fail with Temporal's own message, which the receiver logs.
 */
function uncheckable(err: unknown): [] | undefined {
  return isGrpcServiceError(err) && [PERMISSION_DENIED, UNIMPLEMENTED].includes(err.code) ? [] : undefined;
}

/** gRPC status codes (grpc/grpc doc/statuscodes.md). */
const PERMISSION_DENIED = 7;
const UNIMPLEMENTED = 12;

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
