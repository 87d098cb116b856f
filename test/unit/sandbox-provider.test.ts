// The sandbox and Standard Webhooks verification: the official test vector, then a valid request
// broken one thing at a time.
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { WebhookPayloadError, WebhookVerificationError } from '../../src/providers/errors';
import { sandboxProvider } from '../../src/providers/sandbox';
import { signStandardWebhook, verifyStandardWebhook } from '../../src/providers/standard-webhooks';
import type { InboundEvent, RequestContext } from '../../src/providers/types';
import { toBotEvent } from '../../src/responders/bot-event';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function ctx(body: string, headers: Record<string, string>): RequestContext {
  return { rawBody: Buffer.from(body), headers, params: {}, receivedAt: new Date(), correlationId: 'c' };
}

describe('Standard Webhooks verification (sandbox provider)', () => {
  it('matches the official test vector', () => {
    const at = new Date(1614265330 * 1000);
    assert.equal(
      new Webhook(SECRET).sign('msg_p5jXN8AQM9LWM0D4loKWxJek', at, '{"test": 2432232314}'),
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
    assert.equal(
      signStandardWebhook(SECRET, 'msg_p5jXN8AQM9LWM0D4loKWxJek', '{"test": 2432232314}', at)[
        'webhook-signature'
      ],
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
  });

  const body = JSON.stringify({
    type: 'message',
    conversationId: 'c1',
    messageId: 'm1',
    text: 'hi',
    sentAt: new Date().toISOString(),
  });
  const valid = () => signStandardWebhook(SECRET, 'evt_1', body);

  it('accepts a valid request and normalises it', () => {
    const result = sandboxProvider(SECRET).parse(ctx(body, valid()));
    assert.equal(result.kind, 'events');
    const [event] = (result as { events: import('../../src/providers/types').InboundEvent[] }).events;
    assert.equal(event!.workflowId, 'webhook:sandbox:evt_1');
    assert.deepEqual(event!.conversation?.id, 'c1');
    assert.deepEqual(event!.replyTo, {
      target: 'sandbox',
      kind: 'answer',
      destination: { conversationId: 'c1' },
    });
  });

  it('holds sentAt within five minutes of arrival, so a far-future one cannot freeze the conversation', () => {
    const receivedAt = new Date('2026-11-30T10:00:00.000Z');
    for (const [sentAt, expected] of [
      ['9999-12-31T23:59:59.000Z', '2026-11-30T10:05:00.000Z'],
      ['1970-01-01T00:00:00.000Z', '2026-11-30T09:55:00.000Z'],
      ['2026-11-30T10:01:00.000Z', '2026-11-30T10:01:00.000Z'],
    ]) {
      const message = JSON.stringify({
        type: 'message',
        conversationId: 'c1',
        messageId: 'm1',
        text: 'hi',
        sentAt,
      });
      const headers = signStandardWebhook(SECRET, 'evt_2', message);
      const result = sandboxProvider(SECRET).parse({ ...ctx(message, headers), receivedAt });
      const [event] = (result as { events: InboundEvent[] }).events;
      assert.equal(event!.conversation?.version, expected);
      assert.equal(event!.occurredAt, expected);
    }
  });

  const broken: [string, () => RequestContext][] = [
    ['a changed body byte', () => ctx(body.replace('hi', 'ho'), valid())],
    [
      'another secret',
      () => ctx(body, signStandardWebhook('whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldA==', 'evt_1', body)),
    ],
    [
      'a timestamp too old',
      () => ctx(body, signStandardWebhook(SECRET, 'evt_1', body, new Date(Date.now() - 310_000))),
    ],
    [
      'a timestamp too new',
      () => ctx(body, signStandardWebhook(SECRET, 'evt_1', body, new Date(Date.now() + 310_000))),
    ],
    ['a missing signature header', () => ctx(body, { ...valid(), 'webhook-signature': '' })],
    ['a changed webhook-id', () => ctx(body, { ...valid(), 'webhook-id': 'evt_2' })],
  ];
  for (const [name, make] of broken) {
    it(`rejects ${name}`, () => {
      assert.throws(() => verifyStandardWebhook(SECRET, make()), WebhookVerificationError);
    });
  }

  it('answers a verified but malformed body with zod issues and no echo of the payload', () => {
    const bad = JSON.stringify({ type: 'message', conversationId: 'c1', text: 'secret text' });
    assert.throws(
      () => sandboxProvider(SECRET).parse(ctx(bad, signStandardWebhook(SECRET, 'evt_1', bad))),
      (err: unknown) => {
        assert.ok(err instanceof WebhookPayloadError);
        assert.deepEqual(err.issues.map((i) => i.path.join('.')).sort(), ['messageId', 'sentAt']);
        assert.ok(!JSON.stringify(err.issues).includes('secret text'));
        return true;
      },
    );
  });
});

describe('sandbox events as the bot sees them (the providers it plays)', () => {
  const sentAt = new Date().toISOString();
  const chat = { conversationId: 'c1', messageId: 'm1', user: 'sandbox-user', sentAt };
  const botEventOf = (body: object) => {
    const raw = JSON.stringify(body);
    const result = sandboxProvider(SECRET).parse(ctx(raw, signStandardWebhook(SECRET, 'evt_3', raw)));
    const [event] = (result as { events: InboundEvent[] }).events;
    return { event: event!, bot: toBotEvent(event!) };
  };

  it('gives a slash command its command, and its arguments as the text, as Slack does', () => {
    const { event, bot } = botEventOf({ ...chat, type: 'slash_command', command: '/weather', text: 'tokyo' });
    assert.equal(bot.eventType, 'slash_command');
    assert.equal(bot.text, 'tokyo');
    assert.deepEqual(bot.slack, { team: 'sandbox', channel: 'c1', command: '/weather' });
    assert.equal(bot.line, undefined);
    assert.equal(event.replyTo?.target, 'sandbox', 'answered like any chat message');
  });

  it('gives a button click its action id, block id and value (block_actions)', () => {
    const action = { actionId: 'approve', blockId: 'b1', value: 'order-7' };
    const { bot } = botEventOf({ ...chat, type: 'block_actions', action, text: 'order-7' });
    assert.equal(bot.eventType, 'block_actions');
    assert.equal(bot.text, 'order-7');
    assert.deepEqual(bot.slack?.action, action);
  });

  it('gives a postback its data (also as its text) and the LINE source, and no Slack fields', () => {
    const { bot } = botEventOf({ ...chat, type: 'postback', postback: { data: 'size=M' } });
    assert.equal(bot.eventType, 'postback');
    assert.equal(bot.text, 'size=M', 'its text is its data, as from LINE');
    assert.equal(bot.messageId, undefined);
    assert.deepEqual(bot.line, {
      source: { type: 'user', userId: 'sandbox-user' },
      postback: { data: 'size=M' },
    });
    assert.equal(bot.slack, undefined);
  });

  it('plays the style a message names: Slack by default, LINE when asked', () => {
    const slack = botEventOf({ ...chat, type: 'message', text: 'hello' }).bot;
    assert.deepEqual(slack.slack, { team: 'sandbox', channel: 'c1' });
    assert.equal(slack.line, undefined);
    const line = botEventOf({ ...chat, type: 'message', text: 'size', style: 'line' }).bot;
    assert.deepEqual(line.line, { source: { type: 'user', userId: 'sandbox-user' } });
    assert.equal(line.slack, undefined);
  });

  for (const [name, body] of [
    ['a command without its slash', { type: 'slash_command', command: 'weather', text: '' }],
    ['a click without an action id', { type: 'block_actions', action: { value: 'x' } }],
    ['a postback without data', { type: 'postback', postback: {} }],
    ['an unknown style', { type: 'message', text: 'hi', style: 'teams' }],
  ] as const) {
    it(`refuses ${name} (400 with zod issues)`, () => {
      assert.throws(() => botEventOf({ ...chat, ...body }), WebhookPayloadError);
    });
  }
});
