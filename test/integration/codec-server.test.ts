// The codec server over real HTTP on the receiver: bearer token and browser login, Temporal's codec
// protocol in both directions (including payloads taken from a real workflow history), and CORS for
// the Web UI's origin.
import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import { ConfigError, loadConfig } from '../../src/config';
import type { ReceiverHandle } from '../../src/receiver';
import { connectClient, payloadCodec } from '../../src/temporal/client';
import { SESSION_COOKIE, sessionValue } from '../../src/temporal/codec-server';
import { startTestReceiver } from '../helpers/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../helpers/servers';
import { sandboxEvent, testConfig, uniqueId } from '../helpers/system';

const TOKEN = 'codec-test-token-0123456789abcdef';
const UI_ORIGIN = 'http://127.0.0.1:8233';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');
const text = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');
const jsonPayload = (value: unknown): JsonPayload => ({
  metadata: { encoding: b64('json/plain') },
  data: b64(JSON.stringify(value)),
});

describe('codec server: /codec/encode and /codec/decode for the Web UI (receiver, HTTP)', function () {
  this.timeout(120_000);
  let receiver: ReceiverHandle;
  const config = testConfig({ CODEC_AUTH_TOKEN: TOKEN, CODEC_CORS_ORIGINS: UI_ORIGIN });

  before(async () => {
    const [server] = await Promise.all([devServer(), database()]);
    receiver = await startTestReceiver({ config, temporalAddress: server.address });
  });
  after(async () => {
    await receiver?.stop();
  });

  const call = (operation: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${receiver.url}/codec/${operation}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
      body: JSON.stringify(body),
    });
  const bearer = { authorization: `Bearer ${TOKEN}` };

  it('answers 401 without a token, with a wrong one, or with another scheme, and decodes nothing', async () => {
    const [encoded] = await payloadCodec(TEST_ENCRYPTION_KEY).encode([
      temporal.api.common.v1.Payload.fromObject(jsonPayload({ secret: 'do not show' })),
    ]);
    const body = {
      payloads: [{ metadata: { encoding: b64(encoded!.metadata!.encoding!) }, data: b64(encoded!.data!) }],
    };
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong-token-of-some-length' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Basic ${b64(`x:${TOKEN}`)}` },
      { cookie: `${SESSION_COOKIE}=${Date.now() + 60_000}.forgedforgedforgedforgedforgedforgedforged1` },
    ];
    for (const headers of attempts) {
      for (const operation of ['decode', 'encode']) {
        const response = await call(operation, body, headers);
        assert.equal(response.status, 401, `${operation} with ${JSON.stringify(headers)}`);
        assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer/);
        const answer = await response.text();
        assert.doesNotMatch(answer, /do not show/);
        assert.doesNotMatch(answer, /payloads/);
      }
    }
  });

  it('round-trips with the bearer token: encode gives ciphertext with a key id, decode gives the input back', async () => {
    const input = [
      jsonPayload({ action: 'mark-sent', operator: 'ana', reason: 'found it' }),
      jsonPayload('plain'),
    ];
    const encoded = await call('encode', { payloads: input }, bearer);
    assert.equal(encoded.status, 200);
    const { payloads } = (await encoded.json()) as { payloads: JsonPayload[] };
    assert.equal(payloads.length, 2);
    for (const payload of payloads) {
      assert.equal(text(payload.metadata?.encoding), 'binary/encrypted');
      assert.equal(text(payload.metadata?.['encryption-key-id']), 'default');
      assert.doesNotMatch(text(payload.data), /mark-sent|found it|plain/);
    }
    const decoded = await call('decode', { payloads }, bearer);
    assert.equal(decoded.status, 200);
    assert.deepEqual(await decoded.json(), { payloads: input });
  });

  it('decodes the payloads of a real workflow history, and passes unencrypted ones through', async () => {
    const server = await devServer();
    const temporalClient = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    const conversationId = uniqueId('c');
    const event = sandboxEvent({ conversationId, text: 'my order number is 4711' });
    try {
      // No worker serves this queue: the start alone writes the encrypted input into history.
      const handle = await temporalClient.client.workflow.start('handleEvent', {
        workflowId: event.workflowId,
        taskQueue: uniqueId('q-nobody-'),
        args: [event],
      });
      const history = await handle.fetchHistory();
      const stored = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
      const asJson = temporal.api.common.v1.Payloads.toObject(
        temporal.api.common.v1.Payloads.create({ payloads: stored }),
        { bytes: String },
      ) as { payloads: JsonPayload[] };
      assert.equal(text(asJson.payloads[0]!.metadata!.encoding), 'binary/encrypted');
      assert.doesNotMatch(text(asJson.payloads[0]!.data), /4711/);

      const plain = jsonPayload({ not: 'encrypted' });
      const response = await call('decode', { payloads: [...asJson.payloads, plain] }, bearer);
      assert.equal(response.status, 200);
      const { payloads } = (await response.json()) as { payloads: JsonPayload[] };
      assert.equal(text(payloads[0]!.metadata!.encoding), 'json/plain');
      const decodedEvent = JSON.parse(text(payloads[0]!.data)) as typeof event;
      assert.equal(decodedEvent.message?.text, 'my order number is 4711');
      assert.equal(decodedEvent.conversation?.id, conversationId);
      assert.deepEqual(payloads[1], plain);
      await handle.terminate('test done');
    } finally {
      await temporalClient.close();
    }
  });

  it('signs a browser in with the token: an HttpOnly session cookie that decodes, a wrong token sets none', async () => {
    const refused = await fetch(`${receiver.url}/codec/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'not-the-token-at-all' }),
    });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('set-cookie'), null);

    const login = await fetch(`${receiver.url}/codec/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN }),
    });
    assert.equal(login.status, 200);
    const setCookie = login.headers.get('set-cookie') ?? '';
    assert.match(setCookie, new RegExp(`^${SESSION_COOKIE}=`));
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Strict/);
    assert.match(setCookie, /Path=\/codec/);
    assert.ok(!setCookie.includes(TOKEN), 'the cookie proves the token without carrying it');
    const cookie = setCookie.split(';')[0]!;

    const input = [jsonPayload({ hello: 'operator' })];
    const encoded = await call('encode', { payloads: input }, { cookie });
    assert.equal(encoded.status, 200);
    const decoded = await call('decode', await encoded.json(), { cookie });
    assert.deepEqual(await decoded.json(), { payloads: input });

    const expired = `${SESSION_COOKIE}=${sessionValue(TOKEN, Date.now() - 1000)}`;
    assert.equal((await call('decode', { payloads: input }, { cookie: expired })).status, 401);
    const otherToken = `${SESSION_COOKIE}=${sessionValue('another-token-0123456789', Date.now() + 60_000)}`;
    assert.equal((await call('decode', { payloads: input }, { cookie: otherToken })).status, 401);
  });

  it('answers the Web UI preflight for its origin with the headers it sends, and refuses other origins', async () => {
    const preflight = (origin: string, headers = 'content-type,x-namespace') =>
      fetch(`${receiver.url}/codec/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': headers,
        },
      });
    const ok = await preflight(UI_ORIGIN, 'content-type,x-namespace,authorization');
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('access-control-allow-origin'), UI_ORIGIN);
    assert.equal(ok.headers.get('access-control-allow-credentials'), 'true');
    assert.match(ok.headers.get('access-control-allow-methods') ?? '', /POST/);
    const allowed = (ok.headers.get('access-control-allow-headers') ?? '').split(/,\s*/);
    for (const header of ['content-type', 'x-namespace', 'authorization'])
      assert.ok(allowed.includes(header), header);
    assert.match(ok.headers.get('vary') ?? '', /Origin/i);

    const other = await preflight('http://evil.example');
    assert.equal(other.status, 403);
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    assert.equal((await preflight(UI_ORIGIN, 'content-type,x-evil')).status, 403);

    // The actual request carries the CORS answer too, even when it is refused (the UI reads the 401).
    const unauthorised = await call('decode', { payloads: [] }, { origin: UI_ORIGIN });
    assert.equal(unauthorised.status, 401);
    assert.equal(unauthorised.headers.get('access-control-allow-origin'), UI_ORIGIN);
    const fromElsewhere = await call(
      'decode',
      { payloads: [] },
      { origin: 'http://evil.example', ...bearer },
    );
    assert.equal(fromElsewhere.headers.get('access-control-allow-origin'), null);
  });

  it('answers 400 for a body that is not payloads and 422 for ciphertext it cannot decrypt', async () => {
    const bad = await call('decode', { payloads: [{ data: 'not base64 !' }] }, bearer);
    assert.equal(bad.status, 400);
    const [encoded] = await payloadCodec(Buffer.alloc(32, 9).toString('base64'), { keyId: 'old-key' }).encode(
      [temporal.api.common.v1.Payload.fromObject(jsonPayload('x'))],
    );
    const foreign = await call(
      'decode',
      {
        payloads: [
          {
            metadata: Object.fromEntries(Object.entries(encoded!.metadata!).map(([k, v]) => [k, b64(v)])),
            data: b64(encoded!.data!),
          },
        ],
      },
      bearer,
    );
    assert.equal(foreign.status, 422);
    assert.match(((await foreign.json()) as { error: string }).error, /old-key/);
  });

  it('is absent from a receiver without CODEC_AUTH_TOKEN', async () => {
    const server = await devServer();
    const plain = await startTestReceiver({ config: testConfig(), temporalAddress: server.address });
    try {
      const response = await fetch(`${plain.url}/codec/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"payloads":[]}',
      });
      assert.equal(response.status, 404);
    } finally {
      await plain.stop();
    }
  });

  it('refuses a short token and origins that are not origins, naming the setting', () => {
    assert.throws(
      () =>
        loadConfig({
          CODEC_AUTH_TOKEN: 'short',
          CODEC_CORS_ORIGINS: 'http://ui.example/path,127.0.0.1:8233',
        }),
      (err: ConfigError) =>
        err instanceof ConfigError &&
        err.problems.some((p) => p.startsWith('CODEC_AUTH_TOKEN')) &&
        err.problems.some((p) => p.startsWith('CODEC_CORS_ORIGINS')) &&
        !err.message.includes('short'),
    );
    assert.deepEqual(
      loadConfig({ CODEC_CORS_ORIGINS: 'http://127.0.0.1:8233, https://ui.example' }).CODEC_CORS_ORIGINS,
      ['http://127.0.0.1:8233', 'https://ui.example'],
    );
  });
});
