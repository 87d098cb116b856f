// Builds what a test needs around the real servers: a config, a worker on the test's own task
// queue with targets pointed at fakes, and unique ids so tests never see each other's data.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import type { ActivityDeps } from '../../activities';
import { type Config, loadConfig } from '../../src/config';
import { createLogger, type Logger } from '../../src/logger';
import type { DeliveryPolicy } from '../../src/model';
import type { InboundEvent } from '../../src/providers/types';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import type { Tracing } from '../../src/tracing';
import { createWorker } from '../../src/worker';
import { FakeTarget } from './fake-target';
import { database, devServer, TEST_ENCRYPTION_KEY, workflowBundle } from './servers';

export const silentLogger = createLogger('silent');

export function uniqueId(prefix = 't'): string {
  return `${prefix}${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

/** The sandbox's secrets for this test run (the product generates its own per data dir). */
export const TEST_SANDBOX = {
  webhookSecret: `whsec_${randomBytes(24).toString('base64')}`,
  apiToken: randomBytes(24).toString('base64url'),
};

/** A config on the test's own task queue, with the sandbox on (most tests talk through it). */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    TEMPORAL_TASK_QUEUE: uniqueId('q-'),
    LOG_LEVEL: 'silent',
    SANDBOX_ENABLED: 'true',
    SANDBOX_WEBHOOK_SECRET: TEST_SANDBOX.webhookSecret,
    SANDBOX_API_TOKEN: TEST_SANDBOX.apiToken,
    ...env,
  });
}

/** A short policy so failure paths finish quickly; reminders and parking stay long (time-skipped). */
export const FAST_POLICY: DeliveryPolicy = {
  maxAttempts: 5,
  maxElapsedMs: 3_600_000,
  sendTimeoutMs: 5_000,
  reminderScheduleMs: [15 * 60_000, 60 * 60_000, 4 * 3_600_000],
  failedParkMs: 7 * 86_400_000,
  turnGatherMs: 500,
};

type WorkerSpec = {
  address: string;
  config: Config;
  deps?: Partial<ActivityDeps>;
  /** Where the worker logs; silent unless a test reads it. */
  logger?: Logger;
  tracing?: Tracing;
};

async function buildWorker(options: WorkerSpec) {
  const { pool } = await database();
  return createWorker({
    config: options.config,
    pool,
    temporalAddress: options.address,
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: options.logger ?? silentLogger,
    workerOptions: { workflowBundle: await workflowBundle() },
    deps: { policy: FAST_POLICY, ...options.deps },
    tracing: options.tracing,
  });
}

/** Runs `fn` while a worker serves the config's task queue, then shuts the worker down. */
export async function withWorker<T>(options: WorkerSpec, fn: (worker: Worker) => Promise<T>): Promise<T> {
  const { worker, connection } = await buildWorker(options);
  try {
    return await worker.runUntil(fn(worker));
  } finally {
    await connection.close();
  }
}

/**
 * A worker that serves its queue until `stop()`, for suites on the time-skipping server: workflows a
 * test leaves running (a conversation's turns workflow waits for more messages) must keep a worker,
 * or their timers, fired by skipped time, leave tasks nobody takes and time stops skipping.
 */
export async function startTestWorker(options: WorkerSpec): Promise<{ stop(): Promise<void> }> {
  const { worker, connection } = await buildWorker(options);
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

export interface WorkerSuite {
  /** The sandbox target the worker sends to. */
  fake: FakeTarget;
  /** Its config: the suite's own task queue, the sandbox target pointed at `fake`. */
  config: Config;
  temporal: TemporalClient;
}

/**
 * Registers mocha hooks for a suite on the dev server and PostgreSQL with a fake sandbox target and a
 * worker on the suite's own queue; the fields are filled in `before` and closed in `after`.
 */
export function workerSuite(): WorkerSuite {
  const suite = {} as WorkerSuite;
  let worker: { stop(): Promise<void> } | undefined;
  before(async () => {
    const [server] = await Promise.all([devServer(), database()]);
    suite.fake = await new FakeTarget().start();
    suite.config = testConfig({ SANDBOX_API_URL: suite.fake.url });
    suite.temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    worker = await startTestWorker({ address: server.address, config: suite.config });
  });
  after(async () => {
    await worker?.stop();
    await suite.temporal?.close();
    await suite.fake?.stop();
  });
  return suite;
}

/** A sandbox chat event (a message by default) as the provider would normalise it. */
export function sandboxEvent(options: {
  conversationId: string;
  messageId?: string;
  text?: string;
  target?: 'sandbox' | 'sandbox-lookup' | 'sandbox-blind';
  eventId?: string;
  type?: 'message' | 'handoff' | 'close';
  sentAt?: string;
}): InboundEvent {
  const eventId = options.eventId ?? uniqueId('evt_');
  const sentAt = options.sentAt ?? new Date().toISOString();
  const type = options.type ?? 'message';
  const event: InboundEvent = {
    provider: 'sandbox',
    eventId,
    workflowId: `webhook:sandbox:${eventId}`,
    eventType: type,
    occurredAt: sentAt,
    receivedAt: new Date().toISOString(),
    correlationId: uniqueId('corr-'),
    conversation: { id: options.conversationId, version: sentAt },
    payload: {},
  };
  if (type === 'message') {
    event.message = {
      id: options.messageId ?? uniqueId('m'),
      text: options.text ?? 'what are your opening hours?',
    };
    event.replyTo = {
      target: options.target ?? 'sandbox',
      kind: 'answer',
      destination: { conversationId: options.conversationId },
    };
  }
  return event;
}
