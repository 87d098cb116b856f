// Property-based, per provider: verify and parse over hostile input. Bodies in each provider's own
// envelope, correctly signed, with any field swapped for a hostile value (numbers at the edges,
// prototype keys, deep nesting, wrong types); random headers and sources for verify. Whatever
// arrives, verify fails only with WebhookVerificationError, parse only with WebhookPayloadError
// (the receiver's 401 and 400), and every event it returns can be stored as a workflow input.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WebhookPayloadError, WebhookVerificationError } from '../../../src/providers/errors';
import { githubProvider } from '../../../src/providers/github';
import { lineProvider } from '../../../src/providers/line';
import { MAX_JSON_DEPTH } from '../../../src/providers/parse';
import { sandboxProvider } from '../../../src/providers/sandbox';
import { slackProvider } from '../../../src/providers/slack';
import { signStandardWebhook, standardWebhooksProvider } from '../../../src/providers/standard-webhooks';
import { stripeProvider } from '../../../src/providers/stripe';
import type { ProviderResult, RequestContext, WebhookProvider } from '../../../src/providers/types';
import { storageProblem } from '../../../src/receiver/start-event';
import {
  signGitHubDelivery,
  signLineRequest,
  signSlackRequest,
  signStripeEvent,
} from '../../support/signers';
import { requestContext } from './context';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
const STD_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'prototype'];

/** JSON text, written out by hand so that a `__proto__` key stays an ordinary key of the body. */
const hostileJson: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    // Weighted up: the edges are where parsers break.
    {
      weight: 5,
      arbitrary: fc.constantFrom(
        '9007199254740991',
        '9007199254740992',
        '-9007199254740991',
        '1e308',
        '-1',
        '0',
        '-0',
        '1.5',
        '1e21',
        '253402300800',
        '8640000000000001',
        'null',
        'true',
        '""',
        '"9999-12-31T23:59:59Z"',
        '"+275760-09-13T00:00:00.000Z"',
        '"not a date"',
        ...PROTOTYPE_KEYS.map((k) => JSON.stringify(k)),
      ),
    },
    fc.integer().map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
    fc.string({ maxLength: 30 }).map((s) => JSON.stringify(s)),
    fc.array(tie('value'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
    fc
      .array(
        fc.tuple(fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), fc.string({ maxLength: 10 })), tie('value')),
        {
          maxLength: 4,
        },
      )
      .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
    // Nesting far beyond any real payload.
    fc.integer({ min: 60, max: 3000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
  ),
})).value;

/**
 * A provider's envelope (field → valid JSON text) with some fields swapped for hostile ones and
 * hostile keys (prototype names among them) added.
 */
function envelope(fields: Record<string, string>): fc.Arbitrary<string> {
  const field = (valid: string) => fc.oneof(fc.constant(valid), hostileJson);
  return fc
    .record({
      kept: fc.tuple(...Object.values(fields).map(field)),
      extra: fc.array(fc.tuple(fc.constantFrom(...PROTOTYPE_KEYS, 'x', 'event'), hostileJson), {
        maxLength: 2,
      }),
    })
    .map(({ kept, extra }) => {
      const entries = [...Object.keys(fields).map((name, i) => [name, kept[i]!]), ...extra];
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
    });
}

/** How deeply a JSON text nests once parsed (a repeated key keeps only its last value). */
function nesting(json: string): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[JSON.parse(json), 0]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (node === null || typeof node !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return deepest;
}

const now = () => Math.floor(Date.now() / 1000);
const slackEvent = JSON.stringify({ type: 'message', channel: 'C1', user: 'U1', text: 'hi', ts: '1.1' });
const lineEvent = JSON.stringify({
  type: 'message',
  mode: 'active',
  timestamp: Date.now(),
  source: { type: 'user', userId: 'U1' },
  webhookEventId: '01HZZZZZZZZZZZZZZZZZZZZZZ1',
  deliveryContext: { isRedelivery: false },
  replyToken: 'r',
  message: { id: '1', type: 'text', text: 'hi' },
});

interface Case {
  provider: WebhookProvider;
  body: fc.Arbitrary<string>;
  sign(body: string): Promise<Record<string, string>> | Record<string, string>;
  params?: Record<string, string>;
}

const CASES: Record<string, Case> = {
  slack: {
    provider: slackProvider('slack-secret'),
    body: envelope({
      type: '"event_callback"',
      team_id: '"T1"',
      event_id: '"Ev1"',
      event_time: String(now()),
      event: slackEvent,
    }),
    sign: (body) => signSlackRequest('slack-secret', body),
  },
  line: {
    provider: lineProvider('line-secret'),
    body: envelope({ destination: '"U1"', events: `[${lineEvent}]` }),
    sign: (body) => signLineRequest('line-secret', body),
  },
  github: {
    provider: githubProvider('github-secret'),
    body: envelope({
      action: '"opened"',
      issue: '{"number":1,"title":"hi"}',
      repository: '{"name":"r","full_name":"o/r","owner":{"login":"o"}}',
    }),
    sign: (body) =>
      signGitHubDelivery('github-secret', body, { event: 'issues', deliveryId: 'd1', hookId: '1' }),
  },
  stripe: {
    provider: stripeProvider('whsec_stripe'),
    body: envelope({
      id: '"evt_1"',
      object: '"event"',
      type: '"payment_intent.succeeded"',
      created: String(now()),
      data: '{"object":{"id":"pi_1","object":"payment_intent"}}',
    }),
    sign: (body) => signStripeEvent('whsec_stripe', body),
  },
  std: {
    provider: standardWebhooksProvider({ orders: STD_SECRET }),
    body: envelope({
      type: '"order.paid"',
      timestamp: `"${new Date().toISOString()}"`,
      data: '{"order":"o1"}',
    }),
    sign: (body) => signStandardWebhook(STD_SECRET, 'msg_1', body),
    params: { source: 'orders' },
  },
  sandbox: {
    provider: sandboxProvider(STD_SECRET),
    body: envelope({
      type: '"message"',
      conversationId: '"c1"',
      messageId: '"m1"',
      text: '"hi"',
      sentAt: `"${new Date().toISOString()}"`,
    }),
    sign: (body) => signStandardWebhook(STD_SECRET, 'msg_1', body),
  },
};

/** Runs parse; anything but a result or a WebhookPayloadError fails the property. */
async function parseOrRefuse(
  provider: WebhookProvider,
  ctx: RequestContext,
): Promise<ProviderResult | undefined> {
  try {
    return await provider.parse(ctx);
  } catch (err) {
    if (err instanceof WebhookPayloadError) return undefined;
    throw err;
  }
}

describe('providers: property-based verify and parse over hostile input', () => {
  for (const [name, { provider, body, sign, params }] of Object.entries(CASES)) {
    it(`${name}: a signed body with hostile fields is parsed or refused with 400, never anything else`, async () => {
      await fc.assert(
        fc.asyncProperty(body, async (raw) => {
          const ctx = requestContext(raw, await sign(raw), { params });
          await provider.verify(ctx);
          const result = await parseOrRefuse(provider, ctx);
          if (nesting(raw) > MAX_JSON_DEPTH)
            assert.equal(result, undefined, 'a body nested too deep is refused');
          if (result?.kind !== 'events') return;
          for (const event of result.events) {
            assert.match(event.workflowId, /^webhook:[\w.:-]+$/);
            assert.ok(event.occurredAt === undefined || !Number.isNaN(Date.parse(event.occurredAt)));
            assert.equal(storageProblem(event), undefined, 'a parsed event can be stored');
          }
        }),
        { numRuns: RUNS },
      );
    });

    it(`${name}: random signing headers fail verification with 401, never anything else`, async () => {
      const headerName = fc.oneof(
        fc.constantFrom(...Object.keys(await sign('{}')), ...PROTOTYPE_KEYS),
        fc.stringMatching(/^[a-z-]{1,20}$/),
      );
      const headerValue = fc.oneof(
        fc.stringMatching(/^[\x21-\x7e]{0,80}$/),
        fc.constantFrom(
          '9007199254740991',
          '99999999999999999999',
          '-1',
          'v1,',
          'sha256=',
          't=1,v1=00',
          'v0=',
        ),
      );
      await fc.assert(
        fc.asyncProperty(
          body,
          fc.dictionary(headerName, headerValue, { maxKeys: 6 }),
          fc.oneof(fc.constant(params?.source), fc.constantFrom(...PROTOTYPE_KEYS)),
          async (raw, headers, source) => {
            const ctx = requestContext(raw, headers, { params: source === undefined ? {} : { source } });
            try {
              await provider.verify(ctx);
            } catch (err) {
              if (!(err instanceof WebhookVerificationError)) throw err;
              return;
            }
            assert.fail('random headers verified');
          },
        ),
        { numRuns: RUNS },
      );
    });
  }
});
