// Property-based: random bodies and headers, including valid-looking but wrongly signed ones, at every
// endpoint of every provider `createProviders` returns with every secret set. Whatever arrives, the
// receiver never answers a 5xx other than 503 and never starts a workflow for a request it could not
// verify. A recording EventStarter stands in for Temporal, so hundreds of requests run in seconds.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { type Config, configSchema, loadConfig } from '../../src/config';
import { createSignedBodiesStore } from '../../src/db/github-signed-bodies';
import { createReceiverMetrics } from '../../src/metrics';
import { createProviders } from '../../src/providers';
import { GITHUB_REPLAY_WINDOW_DAYS, type SignedBodyLedger } from '../../src/providers/github';
import { signStandardWebhook } from '../../src/providers/standard-webhooks';
import type { InboundEvent } from '../../src/providers/types';
import { createReceiverApp } from '../../src/receiver/app';
import { TemporalUnavailableError } from '../../src/receiver/errors';
import type { EventStarter, StartOutcome } from '../../src/receiver/start-event';
import { database } from '../support/servers';
import { signGitHubDelivery, signLineRequest, signSlackRequest, signStripeEvent } from '../support/signers';
import { silentLogger } from '../support/system';

const SOURCE = 'orders';
const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
/** Small, so that some random bodies cross it. */
const BODY_LIMIT = 2048;

/** A `whsec_` secret every provider accepts (Standard Webhooks needs base64 after the prefix). */
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** Every `…_SECRET` / `…_SECRETS` setting the config knows, set: every provider enabled. */
function configWithEverySecret(): Config {
  const env: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    // The Slack app's OAuth client secret verifies no webhook (and needs its client id beside it).
    if (key === 'SLACK_CLIENT_SECRET') continue;
    if (key === 'STANDARD_WEBHOOKS_SECRETS') env[key] = `${SOURCE}=${newSecret()}`;
    else if (/_SECRETS?$/.test(key)) env[key] = newSecret();
  }
  env.SANDBOX_ENABLED = 'true';
  env.SANDBOX_API_TOKEN = randomBytes(24).toString('base64url');
  return loadConfig(env);
}

/** Starts nothing: records what the receiver asked for and answers as told. */
class RecordingStarter implements EventStarter {
  readonly started: InboundEvent[] = [];
  answer: StartOutcome | 'unavailable' = 'accepted';
  async start(event: InboundEvent): Promise<StartOutcome> {
    this.started.push(event);
    if (this.answer === 'unavailable') throw new TemporalUnavailableError('recorded: unavailable');
    return this.answer;
  }
}

type Headers = Record<string, string>;

/** How each known provider signs, with a given secret; providers without an entry get random headers only. */
const SIGNERS: Record<string, (secret: string, body: string, id: string) => Headers | Promise<Headers>> = {
  slack: (secret, body) => signSlackRequest(secret, body),
  line: (secret, body) => signLineRequest(secret, body),
  github: (secret, body, id) =>
    signGitHubDelivery(secret, body, { event: 'issues', deliveryId: id, hookId: '42' }),
  stripe: (secret, body) => signStripeEvent(secret, body),
  std: (secret, body, id) => signStandardWebhook(secret, id, body),
  sandbox: (secret, body, id) => signStandardWebhook(secret, id, body),
};

/**
 * Every provider's signature headers at once, well-formed and fresh but made with a wrong secret
 * (hand-rolled after PROVIDERS.md, so they do not depend on any provider module).
 */
function wronglySigned(body: string, id: string): Headers {
  const wrong = 'not-the-secret';
  const hmac = (data: string) => createHmac('sha256', wrong).update(data);
  const ts = String(Math.floor(Date.now() / 1000));
  return {
    'x-slack-request-timestamp': ts,
    'x-slack-signature': `v0=${hmac(`v0:${ts}:${body}`).digest('hex')}`,
    'x-line-signature': hmac(body).digest('base64'),
    'x-hub-signature-256': `sha256=${hmac(body).digest('hex')}`,
    'x-github-event': 'issues',
    'x-github-delivery': id,
    'x-github-hook-id': '42',
    'stripe-signature': `t=${ts},v1=${hmac(`${ts}.${body}`).digest('hex')}`,
    ...signStandardWebhook(newSecret(), id, body),
  };
}

const KNOWN_HEADERS = [
  'x-slack-signature',
  'x-slack-request-timestamp',
  'x-slack-retry-num',
  'x-line-signature',
  'x-hub-signature-256',
  'x-github-event',
  'x-github-delivery',
  'x-github-hook-id',
  'stripe-signature',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'x-request-id',
  'content-encoding',
];
const headerName = fc.oneof(fc.constantFrom(...KNOWN_HEADERS), fc.stringMatching(/^x-[a-z0-9-]{1,20}$/));
/** Visible ASCII: what an HTTP client lets through (fetch refuses control characters). */
const headerValue = fc.oneof(
  fc.stringMatching(/^[\x21-\x7e]{0,120}$/),
  fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'v1,', 'v0=', 't=1,v1=00', '0', '-1', '99999999999'),
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset=bogus',
  'application/x-www-form-urlencoded',
  'text/plain',
  'multipart/form-data; boundary=x',
);
/** Bodies that pass validation, so the properties also reach the start (Standard Webhooks, sandbox). */
const wellFormed = fc.oneof(
  fc
    .record({
      type: fc.string({ minLength: 1, maxLength: 20 }),
      timestamp: fc.constant(new Date().toISOString()),
      data: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
    })
    .map((v) => JSON.stringify(v)),
  fc
    .record({
      type: fc.constant('message'),
      conversationId: fc.stringMatching(/^[\w-]{1,20}$/),
      messageId: fc.stringMatching(/^[\w-]{1,20}$/),
      text: fc.string({ minLength: 1, maxLength: 80 }),
      sentAt: fc.constant(new Date().toISOString()),
    })
    .map((v) => JSON.stringify(v)),
);
/** Random bytes, random text, random JSON, JSON shaped like the providers' envelopes, valid bodies. */
const body = fc.oneof(
  wellFormed,
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc
    .record(
      {
        type: fc.constantFrom('message', 'event_callback', 'url_verification', 'order.paid', 'ping'),
        id: fc.oneof(fc.constant('evt_1'), fc.string({ maxLength: 20 })),
        event_id: fc.string({ maxLength: 20 }),
        challenge: fc.string({ maxLength: 20 }),
        destination: fc.string({ maxLength: 40 }),
        events: fc.array(fc.object({ maxDepth: 2 }), { maxLength: 3 }),
        event: fc.object({ maxDepth: 2 }),
        data: fc.object({ maxDepth: 2 }),
        conversationId: fc.stringMatching(/^[\w-]{1,10}$/),
        messageId: fc.stringMatching(/^[\w-]{1,10}$/),
        text: fc.string({ maxLength: 40 }),
        timestamp: fc.oneof(fc.integer(), fc.constant(new Date().toISOString())),
        sentAt: fc.constant(new Date().toISOString()),
      },
      { requiredKeys: [] },
    )
    .map((v) => JSON.stringify(v)),
);
const eventId = fc.oneof(fc.stringMatching(/^[\w.:-]{1,40}$/), fc.string({ maxLength: 40 }));

describe('receiver: property-based, random requests at every endpoint (recording starter)', function () {
  this.timeout(300_000);
  const config = configWithEverySecret();
  // GitHub's replay guard remembers bodies in the real PostgreSQL, started on first use.
  const githubBodies: SignedBodyLedger = {
    admit: async (sha256, deliveryId) =>
      createSignedBodiesStore((await database()).pool, GITHUB_REPLAY_WINDOW_DAYS).admit(sha256, deliveryId),
  };
  const providers = createProviders(config, { githubBodies });
  const starter = new RecordingStarter();
  let server: Server;
  let url = '';

  const secretOf: Record<string, string | undefined> = {
    slack: config.SLACK_SIGNING_SECRET,
    line: config.LINE_CHANNEL_SECRET,
    github: config.GITHUB_WEBHOOK_SECRET,
    stripe: config.STRIPE_WEBHOOK_SECRET,
    std: config.STANDARD_WEBHOOKS_SECRETS[SOURCE],
    sandbox: config.SANDBOX_WEBHOOK_SECRET,
  };
  const pathsOf = (name: string) =>
    name === 'std' ? [`/webhooks/std/${SOURCE}`, '/webhooks/std/nosuch'] : [`/webhooks/${name}`];
  const endpoints = [
    ...providers.flatMap((p) => pathsOf(p.name)),
    '/webhooks/nonesuch',
    '/webhooks/std/',
    // Names of Object's members, where a lookup by name could find the prototype's instead of a provider's.
    ...['__proto__', 'constructor', 'toString', 'hasOwnProperty'].flatMap((key) => [
      `/webhooks/std/${key}`,
      `/webhooks/${key}`,
    ]),
    '/healthz',
    '/readyz',
    '/metrics',
  ];

  before(async () => {
    const app = createReceiverApp({
      providers,
      starter,
      readiness: async () => ({
        checks: { temporal: true, postgres: true, searchAttributes: true },
        problems: [],
      }),
      metrics: createReceiverMetrics(),
      logger: silentLogger,
      bodyLimit: BODY_LIMIT,
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()) ?? resolve());
  });

  it('covers every provider the registry returns with every secret set', () => {
    const names = providers.map((p) => p.name).sort();
    assert.ok(names.length >= 2, `providers: ${names.join(', ')}`);
    for (const name of names) assert.ok(SIGNERS[name], `add a signer for provider ${name}`);
  });

  const send = async (path: string, method: string, headers: Headers, payload: string) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers,
      body: method === 'GET' ? undefined : payload,
    });
    return {
      status: response.status,
      text: await response.text(),
      retryAfter: response.headers.get('retry-after'),
    };
  };

  const assertNoLeak = (text: string) => {
    assert.doesNotMatch(text, /\bat .+:\d+:\d+|\.ts:\d+/, 'no stack trace in the answer');
    for (const secret of Object.values(secretOf)) if (secret) assert.ok(!text.includes(secret.slice(6)));
  };

  it('never answers 5xx and never starts a workflow for an unsigned or wrongly signed request', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom(...endpoints), fc.stringMatching(/^\/webhooks\/(std\/)?[\w%.-]{0,12}$/)),
        fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT'),
        body,
        eventId,
        fc.constantFrom('random', 'wrong-secret', 'signed-then-changed'),
        fc.dictionary(headerName, headerValue, { maxKeys: 6 }),
        contentType,
        async (path, method, payload, id, signing, randomHeaders, type) => {
          const provider = providers.find((p) => pathsOf(p.name).includes(path));
          let headers: Headers = { ...randomHeaders, 'content-type': type };
          let sent = payload;
          if (signing === 'wrong-secret') headers = { ...wronglySigned(payload, id), ...headers };
          if (signing === 'signed-then-changed' && provider) {
            // Signed correctly, then one byte changed in transit.
            const secret = secretOf[provider.name] ?? newSecret();
            headers = { ...(await SIGNERS[provider.name]!(secret, `${payload}x`, id)), 'x-request-id': id };
            sent = `${payload}y`;
          }
          const before = starter.started.length;
          const answer = await send(path, method, headers, sent);
          assert.ok(answer.status < 500, `${method} ${path} answered ${answer.status}: ${answer.text}`);
          if (path.startsWith('/webhooks/')) assert.ok(answer.status >= 400, `${path}: ${answer.status}`);
          assert.equal(starter.started.length, before, 'no workflow from an unverified request');
          assertNoLeak(answer.text);
        },
      ),
      { numRuns: RUNS * 4 },
    );
  });

  it('answers a correctly signed random body with 2xx, 400 or 503, never another 5xx', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...providers.map((p) => p.name)),
        // GitHub's signing library refuses an empty body (and its verifier rejects one as unsigned).
        body.filter((b) => b.length > 0),
        fc.stringMatching(/^[\w.:-]{1,40}$/),
        fc.constantFrom<StartOutcome | 'unavailable'>('accepted', 'duplicate', 'unavailable'),
        async (name, payload, id, startAnswer) => {
          starter.answer = startAnswer;
          const headers = await SIGNERS[name]!(secretOf[name]!, payload, id);
          const before = starter.started.length;
          const answer = await send(pathsOf(name)[0]!, 'POST', headers, payload);
          const started = starter.started.slice(before);
          seen.add(answer.status);
          const tooLarge = Buffer.byteLength(payload) > BODY_LIMIT;
          assert.ok(
            tooLarge ? answer.status === 413 : [200, 202, 400, 503].includes(answer.status),
            `${name} answered ${answer.status}: ${answer.text}`,
          );
          if (answer.status === 503) {
            assert.equal(startAnswer, 'unavailable');
            assert.ok(answer.retryAfter, '503 carries Retry-After');
          }
          if (answer.status === 202) assert.ok(started.length > 0 && startAnswer === 'accepted');
          if (answer.status === 400) assert.equal(started.length, 0, 'nothing starts from an invalid body');
          for (const event of started) assert.match(event.workflowId, /^webhook:/);
          assertNoLeak(answer.text);
        },
      ),
      { numRuns: RUNS * 2 },
    );
    for (const status of [202, 200, 400, 503]) assert.ok(seen.has(status), `no request got a ${status}`);
  });
});
