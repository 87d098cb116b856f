// Every bad input gets its answer and leaves nothing behind: 401 for signatures, 400 with zod issues
// (never the payload echoed), 413 before parsing, 415, 404; no stack traces, secrets or message text in
// responses, and none in the logs either.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import type { ReceiverHandle } from '../../src/receiver';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import {
  capturedLogger,
  post,
  type SignedRequest,
  STD_SECRET,
  STD_SOURCE,
  sandboxRequest,
  standardRequest,
  startTestReceiver,
} from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { TEST_SANDBOX, testConfig, uniqueId } from '../support/system';

const BODY_LIMIT = 4096;
/** Text that must never come back in a response or appear in a log. */
const CANARY = 'PURPLE-ELEPHANT-7731';

describe('receiver: bad input (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(120_000);
  const config = testConfig({
    STANDARD_WEBHOOKS_SECRETS: `${STD_SOURCE}=${STD_SECRET}`,
    WEBHOOK_BODY_LIMIT: String(BODY_LIMIT),
  });
  const logs = capturedLogger();
  let receiver: ReceiverHandle;
  let temporal: TemporalClient;
  let client: Client;

  before(async () => {
    const server = await devServer();
    receiver = await startTestReceiver({ config, temporalAddress: server.address, logger: logs.logger });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    client = temporal.client;
  });
  after(async () => {
    await receiver?.stop();
    await temporal?.close();
  });

  /** Neither a workflow nor a ledger row exists for the event. */
  const assertNothingStored = async (workflowId: string, eventId: string) => {
    await assert.rejects(client.workflow.getHandle(workflowId).describe(), /not found/i);
    const { pool } = await database();
    const { rowCount } = await pool.query('SELECT 1 FROM events WHERE event_id = $1', [eventId]);
    assert.equal(rowCount, 0);
  };

  /** A response that reveals nothing: no stack trace, no secret, no canary text. */
  const assertDiscreet = (text: string) => {
    assert.doesNotMatch(text, /\bat .+:\d+:\d+|\.ts:\d+|Error:/, 'no stack trace');
    assert.ok(!text.includes(CANARY), 'no message text');
    for (const secret of [STD_SECRET, TEST_SANDBOX.webhookSecret])
      assert.ok(!text.includes(secret.slice(6)), 'no secret');
  };

  describe('401: bad signature or timestamp, nothing stored', () => {
    const valid = () => standardRequest({ body: JSON.stringify(orderBody()) });
    const cases: [string, () => SignedRequest & { eventId: string }][] = [
      [
        'a changed body byte',
        () => {
          const r = valid();
          return { ...r, body: r.body.replace('order.paid', 'order.paiD') };
        },
      ],
      ['the wrong secret', () => standardRequest({ secret: 'whsec_dGhlLXdyb25nLXNlY3JldC10aGUtd3Jvbmc=' })],
      ['a timestamp too old', () => standardRequest({ at: new Date(Date.now() - 301_000) })],
      ['a timestamp too new', () => standardRequest({ at: new Date(Date.now() + 301_000) })],
      [
        'the signature header missing',
        () => {
          const r = valid();
          const { 'webhook-signature': _, ...headers } = r.headers;
          return { ...r, headers };
        },
      ],
      [
        'the timestamp header missing',
        () => {
          const r = valid();
          const { 'webhook-timestamp': _, ...headers } = r.headers;
          return { ...r, headers };
        },
      ],
    ];
    for (const [name, build] of cases) {
      it(`rejects ${name}`, async () => {
        const request = build();
        const response = await post(receiver, request);
        assert.equal(response.status, 401);
        const text = await response.text();
        assert.equal(JSON.parse(text).error, 'invalid signature');
        assertDiscreet(text);
        await assertNothingStored(`webhook:std.${STD_SOURCE}:${request.eventId}`, request.eventId);
      });
    }

    it('rejects a sandbox message signed with another secret', async () => {
      const request = sandboxRequest({ ...config, SANDBOX_WEBHOOK_SECRET: STD_SECRET }, { text: CANARY });
      const response = await post(receiver, request);
      assert.equal(response.status, 401);
      assertDiscreet(await response.text());
      await assertNothingStored(`webhook:sandbox:${request.eventId}`, request.eventId);
    });
  });

  describe('400: malformed or incomplete bodies, with zod issues and no echo', () => {
    const signedBody = (body: string) => standardRequest({ body });

    it('answers malformed JSON with an issue and without the body', async () => {
      const request = signedBody(`{"type": "order.paid", "note": "${CANARY}"`);
      const response = await post(receiver, request);
      assert.equal(response.status, 400);
      const text = await response.text();
      assertDiscreet(text);
      assert.deepEqual(JSON.parse(text).issues, [
        { code: 'invalid_json', path: [], message: 'body is not valid JSON' },
      ]);
      await assertNothingStored(`webhook:std.${STD_SOURCE}:${request.eventId}`, request.eventId);
    });

    it('names each missing or wrong field, never its value', async () => {
      const eventId = uniqueId('evt_');
      const body = JSON.stringify({ type: 'message', conversationId: 42, text: CANARY, note: CANARY });
      const response = await post(receiver, sandboxRequest(config, { eventId, body }));
      assert.equal(response.status, 400);
      const text = await response.text();
      assertDiscreet(text);
      const { issues } = JSON.parse(text) as { issues: { path: string[]; message: string }[] };
      assert.deepEqual(issues.map((i) => i.path.join('.')).sort(), ['conversationId', 'messageId', 'sentAt']);
      await assertNothingStored(`webhook:sandbox:${eventId}`, eventId);
    });

    it('does not echo a field value that fails its pattern', async () => {
      const eventId = uniqueId('evt_');
      const body = JSON.stringify({
        type: 'message',
        conversationId: `${CANARY} not an id!`,
        messageId: 'm1',
        text: CANARY,
        target: CANARY,
        sentAt: new Date().toISOString(),
      });
      const response = await post(receiver, sandboxRequest(config, { eventId, body }));
      assert.equal(response.status, 400);
      const text = await response.text();
      assertDiscreet(text);
      const { issues } = JSON.parse(text) as { issues: { path: string[] }[] };
      assert.deepEqual(issues.map((i) => i.path.join('.')).sort(), ['conversationId', 'target']);
    });
  });

  describe('413: bodies over WEBHOOK_BODY_LIMIT, before parsing', () => {
    const oversized = () => {
      const body = JSON.stringify({ ...orderBody(), data: { filler: 'x'.repeat(BODY_LIMIT) } });
      return standardRequest({ body });
    };

    it('refuses a declared Content-Length over the limit without reading it', async () => {
      const request = oversized();
      const response = await post(receiver, request);
      assert.equal(response.status, 413);
      assertDiscreet(await response.text());
      await assertNothingStored(`webhook:std.${STD_SOURCE}:${request.eventId}`, request.eventId);
    });

    it('refuses a chunked body once it passes the limit', async () => {
      const request = oversized();
      const bytes = Buffer.from(request.body);
      const chunks = [bytes.subarray(0, 1000), bytes.subarray(1000, 3000), bytes.subarray(3000)];
      const response = await fetch(`${receiver.url}${request.path}`, {
        method: 'POST',
        headers: request.headers,
        body: new ReadableStream({
          pull(controller) {
            const chunk = chunks.shift();
            if (chunk) controller.enqueue(chunk);
            else controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      assert.equal(response.status, 413);
      assertDiscreet(await response.text());
      await assertNothingStored(`webhook:std.${STD_SOURCE}:${request.eventId}`, request.eventId);
    });

    it('accepts a body just under the limit', async () => {
      const base = JSON.stringify({ ...orderBody(), data: { filler: '' } });
      const body = base.replace('"filler":""', `"filler":"${'x'.repeat(BODY_LIMIT - base.length)}"`);
      assert.equal(Buffer.byteLength(body), BODY_LIMIT);
      const response = await post(receiver, standardRequest({ body }));
      assert.equal(response.status, 202);
    });
  });

  describe('bodies that cannot become a workflow input: 4xx, never a 503 the sender retries forever', () => {
    let roomy: ReceiverHandle;
    before(async () => {
      const roomyConfig = testConfig({
        STANDARD_WEBHOOKS_SECRETS: `${STD_SOURCE}=${STD_SECRET}`,
        WEBHOOK_BODY_LIMIT: String(3 * 1024 * 1024),
      });
      roomy = await startTestReceiver({ config: roomyConfig, temporalAddress: (await devServer()).address });
    });
    after(async () => {
      await roomy?.stop();
    });

    it('answers 400 to a signed body nested 5,000 deep', async () => {
      const nested = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
      const request = standardRequest({ body: `{"type":"order.paid","data":${nested}}` });
      const response = await post(roomy, request);
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('retry-after'), null);
      assertDiscreet(await response.text());
      await assertNothingStored(`webhook:std.${STD_SOURCE}:${request.eventId}`, request.eventId);
    });

    it('answers 413 to a signed body within WEBHOOK_BODY_LIMIT but over what a workflow input may hold', async () => {
      const request = standardRequest({
        body: JSON.stringify({ type: 'order.paid', data: { note: 'x'.repeat(2_200_000) } }),
      });
      const response = await post(roomy, request);
      assert.equal(response.status, 413);
      assertDiscreet(await response.text());
      await assertNothingStored(`webhook:std.${STD_SOURCE}:${request.eventId}`, request.eventId);
    });
  });

  it('answers 415 to a content type the provider does not send', async () => {
    const request = standardRequest();
    const response = await post(receiver, request, { 'content-type': 'text/plain' });
    assert.equal(response.status, 415);
    assertDiscreet(await response.text());
    await assertNothingStored(`webhook:std.${STD_SOURCE}:${request.eventId}`, request.eventId);
  });

  for (const [name, path] of [
    ['an unknown provider', '/webhooks/nonesuch'],
    ['a provider whose secret is unset', '/webhooks/github'],
    ['a path outside the webhooks', '/nonesuch'],
  ] as const) {
    it(`answers 404 to ${name}`, async () => {
      const response = await post(receiver, { ...standardRequest(), path });
      assert.equal(response.status, 404);
      assertDiscreet(await response.text());
    });
  }

  for (const source of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
    it(`answers 401, not 500, to a signed delivery for the source ${source} (no such source)`, async () => {
      const request = standardRequest();
      const response = await post(receiver, { ...request, path: `/webhooks/std/${source}` });
      assert.equal(response.status, 401);
      assertDiscreet(await response.text());
      await assertNothingStored(`webhook:std.${source}:${request.eventId}`, request.eventId);
    });
  }

  it('answers 400, not 500, to a path it cannot decode', async () => {
    const response = await post(receiver, { ...standardRequest(), path: '/webhooks/std/%E0%A4%A' });
    assert.equal(response.status, 400);
    assertDiscreet(await response.text());
  });

  it('logs every line of a request with its correlation id and without secrets or message text', async () => {
    const requestId = uniqueId('req-');
    const token = `xoxb-${uniqueId('')}-SECRET`;
    const before = logs.lines().length;
    const request = sandboxRequest(config, { text: `${CANARY} please call me` });
    const response = await post(receiver, request, {
      authorization: `Bearer ${token}`,
      'x-api-key': token,
      'x-request-id': requestId,
    });
    assert.equal(response.status, 202);
    assert.equal(response.headers.get('x-request-id'), requestId);

    const lines = logs.lines().slice(before);
    assert.ok(
      lines.some((l) => l.workflowId === `webhook:sandbox:${request.eventId}` && l.status === 202),
      'the request was logged with what it started',
    );
    for (const line of lines) assert.equal(line.correlationId, requestId);
    const raw = logs.raw();
    assert.ok(!raw.includes(CANARY), 'message text is not logged');
    assert.ok(!raw.includes(token), 'tokens are not logged');
    assert.ok(!raw.includes(request.headers['webhook-signature']!), 'signatures are not logged');
  });
});

function orderBody() {
  return { type: 'order.paid', timestamp: new Date().toISOString(), data: { order: uniqueId('o') } };
}
