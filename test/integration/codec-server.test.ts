// The codec server over real HTTP on the receiver, for operator accounts in PostgreSQL: bearer token and
// browser login checked against the operators table on every call (a disabled or rotated operator is
// refused at once), decode for any operator, encode only for decisions, each sealed for the operator
// who asked, and CORS for the Web UI's origin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { loadConfig } from '../../src/config';
import { createOperatorStore } from '../../src/db/operators';
import { openSeal } from '../../src/decision-seal';
import { ConfigError } from '../../src/errors';
import type { ReceiverHandle } from '../../src/receiver';
import { connectClient, payloadCodec } from '../../src/temporal/client';
import {
  FAILED_SIGN_INS_PER_SOURCE,
  SESSION_COOKIE,
  SIGN_INS_PER_OPERATOR,
  sessionValue,
  uiOrigins,
} from '../../src/temporal/codec-server';
import { type TestOperator, testOperator } from '../support/operators';
import { capturedLogger, requestFrom, startTestReceiver } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { sandboxEvent, testConfig, uniqueId } from '../support/system';

const UI_ORIGIN = 'http://127.0.0.1:8233';
const SECRET_TEXT = 'my order number is 4711';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');
const text = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');
const jsonPayload = (value: unknown, encoding = 'json/plain'): JsonPayload => ({
  metadata: { encoding: b64(encoding) },
  data: b64(JSON.stringify(value)),
});
const codec = payloadCodec(TEST_ENCRYPTION_KEY);
const { Payload, Payloads } = temporal.api.common.v1;

/** Payloads in the codec protocol's JSON, as the server answers them, back to protobuf. */
const fromJson = (payloads: JsonPayload[]) => Payloads.fromObject({ payloads }).payloads;
const toJson = (payloads: temporal.api.common.v1.IPayload[]) =>
  (Payloads.toObject(Payloads.create({ payloads }), { bytes: String }) as { payloads: JsonPayload[] })
    .payloads;

describe('codec server: operators decode, and encode only sealed decisions (receiver, HTTP, PostgreSQL)', function () {
  this.timeout(120_000);
  let receiver: ReceiverHandle;
  let ana: TestOperator;
  const log = capturedLogger();
  const config = testConfig({ CODEC_CORS_ORIGINS: UI_ORIGIN });
  const store = async () => createOperatorStore((await database()).adminPool);

  before(async () => {
    const [server] = await Promise.all([devServer(), database()]);
    receiver = await startTestReceiver({ config, temporalAddress: server.address, logger: log.logger });
    ana = await testOperator(['mark-sent']);
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
  const whoami = (headers: Record<string, string>) => fetch(`${receiver.url}/codec/whoami`, { headers });
  const bearer = (op: TestOperator | string) => ({
    authorization: `Bearer ${typeof op === 'string' ? op : op.token}`,
  });
  const login = (token: string) =>
    fetch(`${receiver.url}/codec/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }),
    });
  const encrypted = async (value: unknown) =>
    toJson(await codec.encode([Payload.fromObject(jsonPayload(value))]));
  /** A decision that names its hold, so that the codec server need not ask the (absent) workflow. */
  const decision = (workflowId = `webhook:sandbox:${uniqueId('evt_')}`) => ({
    workflowId,
    hold: `${uniqueId('e')}:1`,
    action: 'mark-sent',
    reason: 'found it',
    externalId: 'ext-1',
  });

  it('answers 401 without a valid operator, and decodes, encodes and names nobody', async () => {
    const body = { payloads: await encrypted({ secret: SECRET_TEXT }) };
    const forged = sessionValue(Buffer.alloc(32, 9), {
      sessionId: randomUUID(),
      operator: ana.account.name,
      credentialId: ana.account.credentialId,
      expiresAt: Date.now() + 60_000,
    });
    const attempts: Record<string, string>[] = [
      {},
      bearer('rfo_not-a-token-anyone-was-given-0123456789abcdefghijk'),
      bearer(`${ana.token}x`),
      bearer('codec-test-token-0123456789abcdef'),
      { authorization: `Basic ${b64(`x:${ana.token}`)}` },
      { cookie: `${SESSION_COOKIE}=${forged}` },
      { cookie: `${SESSION_COOKIE}=${ana.token}` },
    ];
    for (const headers of attempts) {
      const responses = [
        await call('decode', body, headers),
        await call('encode', { payloads: [jsonPayload(decision())] }, headers),
        await whoami(headers),
      ];
      for (const response of responses) {
        assert.equal(response.status, 401, `${response.url} with ${JSON.stringify(headers)}`);
        assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer/);
        const answer = await response.text();
        assert.doesNotMatch(answer, /4711|payloads|seal/);
      }
    }
  });

  it('says who a token belongs to, and decodes for that operator: a real history, and plaintext as it is', async () => {
    const me = await whoami(bearer(ana));
    assert.equal(me.status, 200);
    assert.deepEqual(await me.json(), { operator: ana.account.name, roles: ['view', 'mark-sent'] });

    const server = await devServer();
    const temporalClient = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    const event = sandboxEvent({ conversationId: uniqueId('c'), text: SECRET_TEXT });
    try {
      // No worker serves this queue: the start alone writes the encrypted input into history.
      const handle = await temporalClient.client.workflow.start('handleEvent', {
        workflowId: event.workflowId,
        taskQueue: uniqueId('q-nobody-'),
        args: [event],
      });
      const history = await handle.fetchHistory();
      const stored = toJson(history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!);
      assert.equal(text(stored[0]!.metadata!.encoding), 'binary/encrypted');
      assert.doesNotMatch(text(stored[0]!.data), /4711/);

      const plain = jsonPayload({ not: 'encrypted' });
      const response = await call('decode', { payloads: [...stored, plain] }, bearer(ana));
      assert.equal(response.status, 200);
      const { payloads } = (await response.json()) as { payloads: JsonPayload[] };
      assert.equal(text(payloads[0]!.metadata!.encoding), 'json/plain');
      assert.equal((JSON.parse(text(payloads[0]!.data)) as typeof event).message?.text, SECRET_TEXT);
      assert.deepEqual(payloads[1], plain);
      await handle.terminate('test done');
    } finally {
      await temporalClient.close();
    }
  });

  it('encodes a decision sealed for the operator who asked: fresh request id, issued now, any typed seal replaced', async () => {
    const asked = { ...decision(), seal: 'rfs1.typed-by-hand.forged' };
    const before = Date.now();
    const sealedTwice = [];
    for (let i = 0; i < 2; i++) {
      const response = await call('encode', { payloads: [jsonPayload(asked)] }, bearer(ana));
      assert.equal(response.status, 200);
      const [payload] = ((await response.json()) as { payloads: JsonPayload[] }).payloads;
      assert.equal(text(payload!.metadata?.encoding), 'binary/encrypted');
      assert.equal(text(payload!.metadata?.['encryption-key-id']), 'default');
      assert.doesNotMatch(text(payload!.data), /found it|mark-sent/);
      const [plain] = await codec.decode(fromJson([payload!]));
      const body = JSON.parse(Buffer.from(plain!.data!).toString()) as Record<string, unknown>;
      const opened = openSeal(body, codec.keys);
      assert.ok(opened.ok, 'the worker accepts the seal');
      assert.deepEqual({ ...body, seal: undefined }, { ...asked, seal: undefined });
      assert.equal(opened.claims.operator, ana.account.name);
      assert.equal(opened.claims.credentialId, ana.account.credentialId);
      assert.equal(opened.claims.workflowId, asked.workflowId);
      assert.ok(opened.claims.issuedAt >= before && opened.claims.issuedAt <= Date.now());
      sealedTwice.push(opened.claims.requestId);
    }
    assert.notEqual(sealedTwice[0], sealedTwice[1], 'every encode is a new decision');
  });

  it('refuses to encode anything but a decision (422, one line), so it cannot make workflow input', async () => {
    const refusals: [string, JsonPayload[]][] = [
      ['an event to start a workflow with', [jsonPayload(sandboxEvent({ conversationId: uniqueId('c') }))]],
      ['a field a decision does not have', [jsonPayload({ ...decision(), provider: 'sandbox' })]],
      ['no workflowId', [jsonPayload({ action: 'discard', reason: 'r' })]],
      ['an empty workflowId', [jsonPayload({ workflowId: '', reason: 'r' })]],
      ['a field of another type', [jsonPayload({ workflowId: 'w', reason: 5 })]],
      ['an array', [jsonPayload([decision()])]],
      ['a string', [jsonPayload('plain')]],
      ['binary', [jsonPayload(decision(), 'binary/plain')]],
      ['no encoding', [{ data: b64(JSON.stringify(decision())) }]],
      ['not JSON', [{ metadata: { encoding: b64('json/plain') }, data: b64('{"workflowId":') }]],
      ['a decision beside something else', [jsonPayload(decision()), jsonPayload({ text: SECRET_TEXT })]],
    ];
    for (const [what, payloads] of refusals) {
      const response = await call('encode', { payloads }, bearer(ana));
      assert.equal(response.status, 422, what);
      const answer = (await response.json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(answer), ['error'], what);
      assert.match(
        String(answer.error),
        /^the codec server encodes operator decisions only: payload \d[^\n]+$/,
        what,
      );
      assert.doesNotMatch(String(answer.error), /4711|found it/, 'the reason never echoes the payload');
    }
  });

  it('signs a browser in with the operator token: a cookie naming the operator that decodes and seals', async () => {
    const refused = await login('rfo_wrong-token-0123456789abcdefghijklmnopqrstuvwxyz');
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('set-cookie'), null);

    const signedIn = await login(ana.token);
    assert.equal(signedIn.status, 200);
    assert.match(
      await signedIn.text(),
      new RegExp(`Signed in as <b id="codec-operator">${ana.account.name}</b>`),
    );
    const setCookie = signedIn.headers.get('set-cookie') ?? '';
    assert.match(setCookie, new RegExp(`^${SESSION_COOKIE}=`));
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Strict/);
    assert.match(setCookie, /Path=\/codec/);
    assert.match(setCookie, /Max-Age=43200/, 'a login lasts 12 hours');
    assert.ok(!setCookie.includes(ana.token), 'the cookie names the operator without carrying the token');
    const cookie = { cookie: setCookie.split(';')[0]! };

    const page = await fetch(`${receiver.url}/codec/login`, { headers: cookie });
    assert.match(
      await page.text(),
      new RegExp(`Signed in as <b id="codec-operator">${ana.account.name}</b>`),
    );
    assert.deepEqual(await (await whoami(cookie)).json(), {
      operator: ana.account.name,
      roles: ['view', 'mark-sent'],
    });
    const decoded = await call('decode', { payloads: await encrypted({ hello: 'operator' }) }, cookie);
    assert.deepEqual(await decoded.json(), { payloads: [jsonPayload({ hello: 'operator' })] });
    const encoded = await call('encode', { payloads: [jsonPayload(decision())] }, cookie);
    const [plain] = await codec.decode(
      fromJson(((await encoded.json()) as { payloads: JsonPayload[] }).payloads),
    );
    const opened = openSeal(JSON.parse(Buffer.from(plain!.data!).toString()), codec.keys);
    assert.ok(opened.ok && opened.claims.operator === ana.account.name);

    const expired = sessionValue(Buffer.from(TEST_ENCRYPTION_KEY, 'base64'), {
      sessionId: randomUUID(),
      operator: ana.account.name,
      credentialId: ana.account.credentialId,
      expiresAt: Date.now() - 1000,
    });
    assert.equal((await whoami({ cookie: `${SESSION_COOKIE}=${expired}` })).status, 401);
    const page401 = await (
      await fetch(`${receiver.url}/codec/login`, { headers: { cookie: `${SESSION_COOKIE}=${expired}` } })
    ).text();
    assert.match(page401, /Operator token/);
  });

  it('refuses a disabled operator and a rotated token at once, by bearer and by cookie', async () => {
    const operators = await store();
    const bo = await testOperator(['approve']);
    const cookie = { cookie: (await login(bo.token)).headers.get('set-cookie')!.split(';')[0]! };
    assert.equal((await whoami(cookie)).status, 200);

    await operators.disable(bo.account.name, { by: 'test' });
    assert.equal((await whoami(cookie)).status, 401);
    assert.equal((await whoami(bearer(bo))).status, 401);
    assert.equal((await call('encode', { payloads: [jsonPayload(decision())] }, cookie)).status, 401);
    assert.equal((await login(bo.token)).status, 401, 'a disabled operator cannot log in');

    await operators.enable(bo.account.name, { by: 'test' });
    assert.equal((await whoami(cookie)).status, 200, 'enabled again, with the same credential');

    const { token } = await operators.rotate(bo.account.name, { by: 'test' });
    assert.equal((await whoami(cookie)).status, 401, 'the session of the old token ends');
    assert.equal((await whoami(bearer(bo))).status, 401);
    assert.equal((await whoami(bearer(token))).status, 200);
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
      { origin: 'http://evil.example', ...bearer(ana) },
    );
    assert.equal(fromElsewhere.headers.get('access-control-allow-origin'), null);
  });

  it('answers 400 for a body that is not payloads and 422 for ciphertext it cannot decrypt', async () => {
    const bad = await call('decode', { payloads: [{ data: 'not base64 !' }] }, bearer(ana));
    assert.equal(bad.status, 400);
    const [foreign] = await payloadCodec(Buffer.alloc(32, 9).toString('base64'), { keyId: 'old-key' }).encode(
      [Payload.fromObject(jsonPayload('x'))],
    );
    const response = await call('decode', { payloads: toJson([foreign!]) }, bearer(ana));
    assert.equal(response.status, 422);
    assert.match(((await response.json()) as { error: string }).error, /old-key/);
  });

  it('never writes a token, a cookie or payload text to its log', () => {
    const written = log.raw();
    assert.match(written, /codec: decisions sealed/, 'the log was captured');
    for (const secret of [ana.token, SECRET_TEXT, 'found it', SESSION_COOKIE])
      assert.ok(!written.includes(secret), `the log does not contain ${secret.slice(0, 12)}…`);
  });

  it('refuses origins that are not origins, naming the setting', () => {
    assert.throws(
      () => loadConfig({ CODEC_CORS_ORIGINS: 'http://ui.example/path,127.0.0.1:8233' }),
      (err: ConfigError) =>
        err instanceof ConfigError && err.problems.some((p) => p.startsWith('CODEC_CORS_ORIGINS')),
    );
    assert.deepEqual(
      loadConfig({ CODEC_CORS_ORIGINS: 'http://127.0.0.1:8233, https://ui.example' }).CODEC_CORS_ORIGINS,
      ['http://127.0.0.1:8233', 'https://ui.example'],
    );
  });
});

describe('codec server: sessions, sign-in limits, cookies and origins (receiver, HTTP, PostgreSQL)', function () {
  this.timeout(120_000);
  const receivers: ReceiverHandle[] = [];
  /** A receiver of its own (its own limits and settings), stopped after the suite. */
  const receiverWith = async (env: Record<string, string> = {}) => {
    const receiver = await startTestReceiver({
      config: testConfig(env),
      temporalAddress: (await devServer()).address,
    });
    receivers.push(receiver);
    return receiver;
  };
  after(async () => {
    for (const receiver of receivers) await receiver.stop();
  });

  const loginForm = (token: string) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
  });
  const cookieOf = (setCookie: string | string[] | undefined) =>
    String(Array.isArray(setCookie) ? setCookie[0] : setCookie).split(';')[0]!;
  const whoamiWith = (receiver: ReceiverHandle, headers: Record<string, string>) =>
    fetch(`${receiver.url}/codec/whoami`, { headers });

  it('ends the session on sign-out for good: a copy of the cookie no longer counts, other sessions do', async () => {
    const receiver = await receiverWith();
    const op = await testOperator(['view']);
    const signIn = async () =>
      cookieOf(
        (await requestFrom('127.0.0.1', `${receiver.url}/codec/login`, loginForm(op.token))).headers[
          'set-cookie'
        ],
      );
    const [laptop, phone] = [await signIn(), await signIn()];
    assert.equal((await whoamiWith(receiver, { cookie: laptop })).status, 200);

    const out = await fetch(`${receiver.url}/codec/logout`, { method: 'POST', headers: { cookie: laptop } });
    assert.equal(out.status, 200);
    assert.match(out.headers.get('set-cookie') ?? '', new RegExp(`^${SESSION_COOKIE}=;`));
    // Whoever copied the cookie before sign-out (a shared machine, a stolen profile) holds nothing now.
    assert.equal((await whoamiWith(receiver, { cookie: laptop })).status, 401);
    assert.equal(
      (
        await fetch(`${receiver.url}/codec/decode`, {
          method: 'POST',
          headers: { cookie: laptop, 'content-type': 'application/json' },
          body: JSON.stringify({ payloads: [] }),
        })
      ).status,
      401,
    );
    assert.match(
      await (await fetch(`${receiver.url}/codec/login`, { headers: { cookie: laptop } })).text(),
      /Operator token/,
    );
    assert.equal(
      (await whoamiWith(receiver, { cookie: phone })).status,
      200,
      'another sign-in of the same operator stays',
    );
  });

  it('limits failed sign-ins and token checks per source address: 429 with Retry-After, other addresses unaffected', async () => {
    const receiver = await receiverWith();
    const op = await testOperator(['view']);
    const wrong = 'rfo_guessed-0123456789abcdefghijklmnopqrstuvwxyzABCDE';
    const source = '127.0.0.23';
    const statuses: number[] = [];
    for (let i = 0; i < FAILED_SIGN_INS_PER_SOURCE; i++) {
      const guess =
        i % 2 === 0
          ? await requestFrom(source, `${receiver.url}/codec/login`, loginForm(wrong))
          : await requestFrom(source, `${receiver.url}/codec/whoami`, {
              headers: { authorization: `Bearer ${wrong}` },
            });
      statuses.push(guess.status);
    }
    assert.deepEqual(new Set(statuses), new Set([401]), 'every guess within the limit is judged');

    const limited = [
      await requestFrom(source, `${receiver.url}/codec/login`, loginForm(op.token)),
      await requestFrom(source, `${receiver.url}/codec/whoami`, {
        headers: { authorization: `Bearer ${op.token}` },
      }),
      // A header the client writes itself does not make it another source (no proxy is trusted here).
      await requestFrom(source, `${receiver.url}/codec/login`, {
        ...loginForm(op.token),
        headers: { ...loginForm(op.token).headers, 'x-forwarded-for': '10.1.2.3' },
      }),
    ];
    for (const answer of limited) {
      assert.equal(answer.status, 429);
      const retryAfter = Number(answer.headers['retry-after']);
      assert.ok(
        Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 600,
        `Retry-After ${retryAfter}`,
      );
      assert.match(answer.text, /too many failed sign-ins from this address/);
      assert.equal(answer.headers['set-cookie'], undefined);
    }
    const elsewhere = await requestFrom('127.0.0.24', `${receiver.url}/codec/whoami`, {
      headers: { authorization: `Bearer ${op.token}` },
    });
    assert.equal(elsewhere.status, 200, 'another address is not limited');
  });

  it('limits sign-ins per operator: 429 with Retry-After for that operator only', async () => {
    const receiver = await receiverWith();
    const [busy, other] = await Promise.all([testOperator(['view']), testOperator(['view'])]);
    const source = '127.0.0.25';
    for (let i = 0; i < SIGN_INS_PER_OPERATOR; i++) {
      const ok = await requestFrom(source, `${receiver.url}/codec/login`, loginForm(busy.token));
      assert.equal(ok.status, 200, `sign-in ${i + 1}`);
    }
    const limited = await requestFrom('127.0.0.26', `${receiver.url}/codec/login`, loginForm(busy.token));
    assert.equal(limited.status, 429, 'from any address');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    assert.match(limited.text, /too many sign-ins for this operator/);
    assert.equal(limited.headers['set-cookie'], undefined);
    assert.equal(
      (await requestFrom(source, `${receiver.url}/codec/login`, loginForm(other.token))).status,
      200,
    );
    assert.equal(
      (
        await requestFrom(source, `${receiver.url}/codec/whoami`, {
          headers: { authorization: `Bearer ${busy.token}` },
        })
      ).status,
      200,
      'the token itself keeps working: only new sessions are limited',
    );
  });

  it('answers a cookie with a malformed % escape as no session: 401, never 5xx', async () => {
    const receiver = await receiverWith();
    for (const value of ['%E0%A4%A', '%', 'abc%zz.def']) {
      const cookie = { cookie: `${SESSION_COOKIE}=${value}` };
      assert.equal((await whoamiWith(receiver, cookie)).status, 401, value);
      const decode = await fetch(`${receiver.url}/codec/decode`, {
        method: 'POST',
        headers: { ...cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ payloads: [] }),
      });
      assert.equal(decode.status, 401, value);
      const page = await fetch(`${receiver.url}/codec/login`, { headers: cookie });
      assert.equal(page.status, 200, value);
      assert.match(await page.text(), /Operator token/);
      assert.equal(
        (await fetch(`${receiver.url}/codec/logout`, { method: 'POST', headers: cookie })).status,
        200,
      );
    }
  });

  it('marks the cookie Secure when configured, or behind TLS a trusted proxy reports, and only then', async () => {
    const op = await testOperator(['view']);
    const setCookieOf = async (receiver: ReceiverHandle, headers: Record<string, string> = {}) => {
      const form = loginForm(op.token);
      const answer = await requestFrom('127.0.0.1', `${receiver.url}/codec/login`, {
        ...form,
        headers: { ...form.headers, ...headers },
      });
      assert.equal(answer.status, 200);
      return { cookie: String(answer.headers['set-cookie']), page: answer.text };
    };
    const plain = await receiverWith();
    const configured = await receiverWith({ CODEC_COOKIE_SECURE: 'true' });
    const behindProxy = await receiverWith({ TRUST_PROXY: 'loopback' });

    assert.doesNotMatch((await setCookieOf(plain)).cookie, /;\s*Secure/i);
    assert.doesNotMatch(
      (await setCookieOf(plain, { 'x-forwarded-proto': 'https' })).cookie,
      /;\s*Secure/i,
      'a header any client can write does not make the connection TLS',
    );
    assert.match((await setCookieOf(configured)).cookie, /;\s*Secure/i);
    const proxied = await setCookieOf(behindProxy, { 'x-forwarded-proto': 'https' });
    assert.match(proxied.cookie, /;\s*Secure/i);
    assert.match(proxied.page, /<code>https:\/\//, 'the endpoint shown for the UI is the https one');
    assert.doesNotMatch(
      (await setCookieOf(behindProxy)).cookie,
      /;\s*Secure/i,
      'plain http through the proxy',
    );
  });

  it('allows only the Web UI origin really bound, not its localhost twin another user could bind', async () => {
    const receiver = await receiverWith({ TEMPORAL_UI_URL: 'http://127.0.0.1:8233' });
    const preflight = (origin: string) =>
      fetch(`${receiver.url}/codec/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
    assert.equal((await preflight('http://127.0.0.1:8233')).status, 204);
    for (const twin of ['http://localhost:8233', 'http://[::1]:8233']) {
      const answer = await preflight(twin);
      assert.equal(answer.status, 403, twin);
      assert.equal(answer.headers.get('access-control-allow-origin'), null, twin);
    }
    assert.deepEqual(uiOrigins('http://127.0.0.1:8233/namespaces/default'), ['http://127.0.0.1:8233']);
    assert.deepEqual(uiOrigins('http://localhost:8080'), ['http://localhost:8080']);
  });
});
