// What a refused webhook leaves in the receiver's log: exactly one record, saying why and, when the fix
// is a setting of ours, which one; the error's stack only at LOG_LEVEL=debug; never the body, a
// secret or message text. (The answers themselves are receiver-bad-input.test.ts's.)
import assert from 'node:assert/strict';
import type { ReceiverHandle } from '../../src/receiver';
import {
  capturedLogger,
  post,
  STD_SECRET,
  STD_SOURCE,
  sandboxRequest,
  standardRequest,
  startTestReceiver,
} from '../support/receiver';
import { devServer } from '../support/servers';
import { TEST_SANDBOX, testConfig, uniqueId } from '../support/system';

const BODY_LIMIT = 2048;
/** Text that must never appear in a log. */
const CANARY = 'TANGERINE-OCTOPUS-4417';
const config = testConfig({
  STANDARD_WEBHOOKS_SECRETS: `${STD_SOURCE}=${STD_SECRET}`,
  WEBHOOK_BODY_LIMIT: String(BODY_LIMIT),
});
const PINO_INFO = 30;
const PINO_WARN = 40;

interface Refused {
  name: string;
  status: number;
  /** The request, sent with `x-request-id` so that its records can be picked out of the log. */
  send: (receiver: ReceiverHandle, requestId: string) => Promise<Response>;
  /** What the record's `fix` must name, when the fix is a setting. */
  fix?: RegExp;
  /** Whether an error object lies behind the refusal (then debug shows its stack). */
  error?: boolean;
}

const headersOf = (requestId: string, extra: Record<string, string> = {}) => ({
  'x-request-id': requestId,
  ...extra,
});
const canaryOrder = () =>
  JSON.stringify({ type: 'order.paid', timestamp: new Date().toISOString(), data: { note: CANARY } });

const REFUSALS: Refused[] = [
  {
    name: 'a signature made with another secret (401)',
    status: 401,
    send: (receiver, id) =>
      post(
        receiver,
        standardRequest({ body: canaryOrder(), secret: 'whsec_dGhlLXdyb25nLXNlY3JldC10aGUtd3Jvbmc=' }),
        headersOf(id),
      ),
    fix: /STANDARD_WEBHOOKS_SECRETS/,
    error: true,
  },
  {
    name: 'a sandbox message without its signature (401)',
    status: 401,
    send: (receiver, id) => {
      const request = sandboxRequest(config, { text: CANARY });
      const { 'webhook-signature': _, ...headers } = request.headers;
      return post(receiver, { ...request, headers }, headersOf(id));
    },
    fix: /SANDBOX_WEBHOOK_SECRET/,
    error: true,
  },
  {
    name: 'a signed body that is not JSON (400)',
    status: 400,
    send: (receiver, id) => post(receiver, standardRequest({ body: `{"note": "${CANARY}` }), headersOf(id)),
    error: true,
  },
  {
    name: 'a signed body without the required fields (400)',
    status: 400,
    send: (receiver, id) =>
      post(
        receiver,
        sandboxRequest(config, { body: JSON.stringify({ type: 'message', note: CANARY }) }),
        headersOf(id),
      ),
    error: true,
  },
  {
    name: 'a provider whose secret is unset (404)',
    status: 404,
    send: (receiver, id) =>
      post(
        receiver,
        { ...standardRequest({ body: canaryOrder() }), path: '/webhooks/github' },
        headersOf(id),
      ),
    fix: /GITHUB_WEBHOOK_SECRET/,
  },
  {
    name: 'a provider that does not exist (404)',
    status: 404,
    send: (receiver, id) =>
      post(
        receiver,
        { ...standardRequest({ body: canaryOrder() }), path: '/webhooks/nonesuch' },
        headersOf(id),
      ),
  },
  {
    name: 'a content type the provider does not send (415)',
    status: 415,
    send: (receiver, id) =>
      post(
        receiver,
        standardRequest({ body: canaryOrder() }),
        headersOf(id, { 'content-type': 'text/plain' }),
      ),
  },
  {
    name: 'a declared body over WEBHOOK_BODY_LIMIT (413)',
    status: 413,
    send: (receiver, id) =>
      post(receiver, standardRequest({ body: `${CANARY} `.repeat(BODY_LIMIT) }), headersOf(id)),
    fix: /WEBHOOK_BODY_LIMIT/,
  },
  {
    name: 'a chunked body that passes WEBHOOK_BODY_LIMIT (413)',
    status: 413,
    send: (receiver, id) => {
      const request = standardRequest();
      const chunk = new TextEncoder().encode(`${CANARY} `.repeat(64));
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent > BODY_LIMIT * 2) return controller.close();
          sent += chunk.length;
          controller.enqueue(chunk);
        },
      });
      return fetch(`${receiver.url}${request.path}`, {
        method: 'POST',
        headers: { ...request.headers, 'x-request-id': id },
        body,
        duplex: 'half',
      } as RequestInit);
    },
    fix: /WEBHOOK_BODY_LIMIT/,
    error: true,
  },
];

/** Nothing a sender wrote into the body, and no secret, appears anywhere in `raw`. */
function assertDiscreet(raw: string) {
  assert.ok(!raw.includes(CANARY), 'no body or message text in the log');
  for (const secret of [STD_SECRET, TEST_SANDBOX.webhookSecret, TEST_SANDBOX.apiToken])
    assert.ok(!raw.includes(secret.replace(/^whsec_/, '')), 'no secret in the log');
}

describe('receiver: a refusal is one log line (dev server, HTTP)', function () {
  this.timeout(60_000);
  const info = capturedLogger('info');
  const debug = capturedLogger('debug');
  let atInfo: ReceiverHandle;
  let atDebug: ReceiverHandle;

  before(async () => {
    const temporalAddress = (await devServer()).address;
    atInfo = await startTestReceiver({ config, temporalAddress, logger: info.logger });
    atDebug = await startTestReceiver({ config, temporalAddress, logger: debug.logger });
  });
  after(async () => {
    await atInfo?.stop();
    await atDebug?.stop();
  });

  const recordsOf = (log: ReturnType<typeof capturedLogger>, requestId: string) =>
    log.lines().filter((record) => record.correlationId === requestId);

  for (const refusal of REFUSALS) {
    it(`logs ${refusal.name} as one record with the reason, and no stack`, async () => {
      const requestId = uniqueId('req-');
      const response = await refusal.send(atInfo, requestId);
      assert.equal(response.status, refusal.status);
      await response.arrayBuffer();

      const records = recordsOf(info, requestId);
      assert.equal(records.length, 1, JSON.stringify(records));
      const [record] = records as [Record<string, unknown>];
      assert.ok([PINO_INFO, PINO_WARN].includes(record.level as number), `level ${record.level}`);
      assert.equal(record.msg, 'webhook refused');
      assert.equal(record.status, refusal.status);
      assert.equal(typeof record.reason, 'string');
      assert.ok((record.reason as string).length > 0);
      if (refusal.fix) assert.match(String(record.fix), refusal.fix);
      assert.equal(record.stack, undefined, 'no stack below debug');
      assert.doesNotMatch(JSON.stringify(record), /\\n\s+at /, 'no stack frames in any field');
      assertDiscreet(info.raw());
    });
  }

  for (const refusal of REFUSALS.filter((r) => r.error)) {
    it(`adds the stack to ${refusal.name} at debug, still one record and discreet`, async () => {
      const requestId = uniqueId('req-');
      const response = await refusal.send(atDebug, requestId);
      assert.equal(response.status, refusal.status);
      await response.arrayBuffer();

      const records = recordsOf(debug, requestId);
      assert.equal(records.length, 1, JSON.stringify(records));
      assert.match(String(records[0]!.stack), /\n\s+at /);
      assertDiscreet(debug.raw());
    });
  }
});
