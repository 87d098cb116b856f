// What the receiver tests share: signed webhook requests as senders make them, a receiver started on
// port 0, a captured log, and reading counters out of the Prometheus text.
import http from 'node:http';
import { Writable } from 'node:stream';
import type { Client } from '@temporalio/client';
import type { LevelWithSilent } from 'pino';
import type { Config } from '../../src/config';
import { createPool, type Pool } from '../../src/db/pool';
import { createLogger, type Logger } from '../../src/logger';
import { signStandardWebhook } from '../../src/providers/standard-webhooks';
import { type ReceiverHandle, startReceiver } from '../../src/receiver';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import type { Tracing } from '../../src/tracing';
import { database, devServer, TEST_ENCRYPTION_KEY } from './servers';
import { silentLogger, startTestWorker, uniqueId } from './system';

/** A Standard Webhooks secret for the `orders` source of the tests' config. */
export const STD_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const STD_SOURCE = 'orders';

export async function startTestReceiver(options: {
  config: Config;
  temporalAddress: string;
  logger?: Logger;
  pool?: Pool;
  tracing?: Tracing;
}): Promise<ReceiverHandle> {
  return startReceiver({
    tracing: options.tracing,
    config: options.config,
    pool: options.pool ?? (await database()).pool,
    temporalAddress: options.temporalAddress,
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: options.logger ?? silentLogger,
    port: 0,
  });
}

/** A receiver and a worker with one config on the shared dev server, and a client to look at their work. */
export interface TestSystem {
  receiver: ReceiverHandle;
  temporal: TemporalClient;
  /** Stops the worker, the receiver and the client. */
  stop(): Promise<void>;
}

export async function startTestSystem(options: { config: Config; logger?: Logger }): Promise<TestSystem> {
  const { config, logger } = options;
  const server = await devServer();
  const receiver = await startTestReceiver({ config, temporalAddress: server.address, logger });
  const temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
  const worker = await startTestWorker({ address: server.address, config });
  return {
    receiver,
    temporal,
    async stop() {
      await worker.stop();
      await receiver.stop();
      await temporal.close();
    },
  };
}

interface ReceiverSuite {
  receiver: ReceiverHandle;
  temporal: TemporalClient;
  client: Client;
}

/**
 * A receiver with `config` on the shared dev server, and a client to look at what it started, for the
 * describe block it is called in (started before its tests, stopped after).
 */
export function receiverSuite(config: Config): ReceiverSuite {
  const suite = {} as ReceiverSuite;
  before(async () => {
    const server = await devServer();
    suite.receiver = await startTestReceiver({ config, temporalAddress: server.address });
    suite.temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    suite.client = suite.temporal.client;
  });
  after(async () => {
    await suite.receiver?.stop();
    await suite.temporal?.close();
  });
  return suite;
}

/** A pool to a port nothing listens on: PostgreSQL "down" for readiness checks. */
export function unreachablePool(): Pool {
  return createPool('postgres://nobody@127.0.0.1:1/none', 1);
}

export interface SignedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A sandbox chat message, signed as the sandbox page signs it. */
export function sandboxRequest(
  config: Config,
  options: {
    eventId?: string;
    conversationId?: string;
    messageId?: string;
    text?: string;
    at?: Date;
    /** Replaces the whole message (still signed). */
    body?: string;
  } = {},
): SignedRequest & { eventId: string; conversationId: string } {
  const eventId = options.eventId ?? uniqueId('evt_');
  const conversationId = options.conversationId ?? uniqueId('c');
  const body =
    options.body ??
    JSON.stringify({
      type: 'message',
      conversationId,
      messageId: options.messageId ?? 'm1',
      text: options.text ?? 'what are your opening hours?',
      sentAt: new Date().toISOString(),
    });
  return {
    path: '/webhooks/sandbox',
    headers: signStandardWebhook(config.SANDBOX_WEBHOOK_SECRET ?? '', eventId, body, options.at),
    body,
    eventId,
    conversationId,
  };
}

/** A Standard Webhooks event for the `orders` source. */
export function standardRequest(
  options: { eventId?: string; type?: string; secret?: string; at?: Date; body?: string } = {},
): SignedRequest & { eventId: string } {
  const eventId = options.eventId ?? uniqueId('msg_');
  const body =
    options.body ??
    JSON.stringify({
      type: options.type ?? 'order.paid',
      timestamp: new Date().toISOString(),
      data: { order: uniqueId('o') },
    });
  return {
    path: `/webhooks/std/${STD_SOURCE}`,
    headers: signStandardWebhook(options.secret ?? STD_SECRET, eventId, body, options.at),
    body,
    eventId,
  };
}

export function post(
  receiver: ReceiverHandle,
  request: SignedRequest,
  extraHeaders: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${receiver.url}${request.path}`, {
    method: 'POST',
    headers: { ...request.headers, ...extraHeaders },
    body: request.body,
  });
}

/** The value of one counter series in Prometheus text, 0 when the series is absent. */
export function counterValue(metricsText: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const labelText = line.slice(name.length + 1, line.indexOf('}'));
    const have = labelText.split(',');
    if (wanted.every((w) => have.includes(w)) && have.length === wanted.length)
      return Number(line.slice(line.indexOf('}') + 1).trim());
  }
  return 0;
}

export async function metricsOf(receiver: ReceiverHandle): Promise<string> {
  return (await fetch(`${receiver.url}/metrics`)).text();
}

/** A logger whose lines the test can read back; at the most verbose level unless `level` says. */
export function capturedLogger(level: LevelWithSilent = 'trace'): {
  logger: Logger;
  lines: () => Record<string, unknown>[];
  raw: () => string;
} {
  let text = '';
  const sink = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return {
    logger: createLogger(level, 'replyflow', sink),
    raw: () => text,
    lines: () =>
      text
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/**
 * One HTTP request from a chosen loopback address (all of 127/8 is this machine): another client, as
 * far as the receiver can tell (per-source limits).
 */
export function requestFrom(
  localAddress: string,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: init.method ?? 'GET', headers: init.headers, localAddress },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text }),
        );
      },
    );
    request.once('error', reject);
    request.end(init.body);
  });
}
