// The LINE provider: the signature vector, a valid request broken one thing at a time, the verify
// request, several events in one request, and the normalisation the LINE target relies on.
import assert from 'node:assert/strict';
import { validateSignature } from '@line/bot-sdk';
import { WebhookPayloadError, WebhookVerificationError } from '../../../src/providers/errors';
import { lineProvider, verifyLineRequest } from '../../../src/providers/line';
import { toBotEvent } from '../../../src/responders/bot-event';
import { answersByDefault, chatBusinessKey, defaultPlans } from '../../../src/routes';
import { signLineRequest } from '../../support/signers';
import { eventsOf, flipOneByte, requestContext } from './context';

const SECRET = 'test-channel-secret';
const provider = lineProvider(SECRET);
const DESTINATION = 'U00000000000000000000000000000000';

function textMessage(overrides: Record<string, unknown> = {}) {
  return {
    type: 'message',
    mode: 'active',
    timestamp: 1_700_000_000_000,
    source: { type: 'user', userId: 'Uuser1' },
    webhookEventId: '01HZZZZZZZZZZZZZZZZZZZZZZ1',
    deliveryContext: { isRedelivery: false },
    replyToken: 'reply-token-1',
    message: {
      id: '468789577898262530',
      type: 'text',
      quoteToken: 'q',
      text: 'what are your opening hours?',
    },
    ...overrides,
  };
}

function postback(postbackContent: Record<string, unknown>, overrides: Record<string, unknown> = {}) {
  return {
    type: 'postback',
    mode: 'active',
    timestamp: 1_700_000_000_000,
    source: { type: 'user', userId: 'Uuser1' },
    webhookEventId: '01HZZZZZZZZZZZZZZZZZZZZZPB',
    deliveryContext: { isRedelivery: false },
    replyToken: 'reply-token-pb',
    postback: postbackContent,
    ...overrides,
  };
}

const bodyOf = (...events: object[]) => JSON.stringify({ destination: DESTINATION, events });
const parse = (body: string) => provider.parse(requestContext(body, signLineRequest(SECRET, body)));

describe('LINE provider', () => {
  describe('signature', () => {
    const vectorBody = `{"destination":"${DESTINATION}","events":[]}`;
    const vectorSignature = '2kBoHxgh5VtBwf8Xo0g7EZleXTRAUAlsOmhia5o/Mto=';

    it('matches the computed vector, and agrees with @line/bot-sdk', () => {
      assert.equal(signLineRequest(SECRET, vectorBody)['x-line-signature'], vectorSignature);
      assert.ok(validateSignature(vectorBody, SECRET, vectorSignature));
      verifyLineRequest(SECRET, requestContext(vectorBody, { 'x-line-signature': vectorSignature }));
    });

    const body = bodyOf(textMessage());
    const valid = () => signLineRequest(SECRET, body);
    const withSignature = (change: (signature: string) => string) =>
      requestContext(body, { 'x-line-signature': change(valid()['x-line-signature']!) });
    /** 32 bytes take 43 base64 digits and 2 spare bits; a decoder ignores them, an exact compare does not. */
    const setUnusedBits = (signature: string) => {
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
      const last = alphabet.indexOf(signature[42]!);
      return `${signature.slice(0, 42)}${alphabet[last | 0b11]}=`;
    };

    it('accepts a valid request', () => {
      verifyLineRequest(SECRET, requestContext(body, valid()));
    });

    const broken: [string, () => ReturnType<typeof requestContext>][] = [
      ['a changed body byte', () => requestContext(flipOneByte(body), valid())],
      ['another secret', () => requestContext(body, signLineRequest('another-secret', body))],
      ['a missing signature header', () => requestContext(body, { 'content-type': 'application/json' })],
      ['an empty signature', () => requestContext(body, { 'x-line-signature': '' })],
      ['a hex signature instead of base64', () => requestContext(body, { 'x-line-signature': 'd9' })],
      // @line/bot-sdk decodes the header with Buffer.from(…, 'base64'), which skips what is not base64:
      // each of these decodes to the right digest and passes validateSignature, but not LINE's Python
      // SDK, which compares the header with the encoded digest exactly.
      ['the signature with junk appended', () => withSignature((s) => `${s}junk`)],
      ['the signature with another base64 block appended', () => withSignature((s) => `${s}AAAA`)],
      ['the signature without its padding', () => withSignature((s) => s.replace(/=$/, ''))],
      ['the signature with a space in front', () => withSignature((s) => ` ${s}`)],
      [
        'the signature with a line break inside',
        () => withSignature((s) => `${s.slice(0, 20)}\n${s.slice(20)}`),
      ],
      ['the signature in base64url', () => withSignature((s) => s.replace(/\+/g, '-').replace(/\//g, '_'))],
      ['the signature with unused low bits set', () => withSignature(setUnusedBits)],
    ];
    it('rejects only what @line/bot-sdk alone would pass (so these cases test our check)', () => {
      for (const [name, make] of broken.slice(-7)) {
        const ctx = make();
        const signature = ctx.headers['x-line-signature'] as string;
        assert.ok(validateSignature(body, SECRET, signature), `@line/bot-sdk accepts ${name}`);
      }
    });
    for (const [name, make] of broken) {
      it(`rejects ${name}`, () => {
        assert.throws(() => verifyLineRequest(SECRET, make()), WebhookVerificationError);
      });
    }
  });

  describe('normalisation', () => {
    it("answers the console's verify request (no events) with 200 {} and starts nothing", () => {
      assert.deepEqual(parse(bodyOf()), { kind: 'answer', status: 200, body: {} });
    });

    it('turns a 1:1 text message into an event with a reply token and its expiry', () => {
      const [event] = eventsOf(parse(bodyOf(textMessage())));
      assert.equal(event!.provider, 'line');
      assert.equal(event!.eventId, '01HZZZZZZZZZZZZZZZZZZZZZZ1');
      assert.equal(event!.workflowId, 'webhook:line:01HZZZZZZZZZZZZZZZZZZZZZZ1');
      assert.equal(event!.eventType, 'message');
      assert.equal(event!.occurredAt, '2023-11-14T22:13:20.000Z');
      assert.deepEqual(event!.redelivery, { isRedelivery: false });
      assert.deepEqual(event!.conversation, { id: `${DESTINATION}:Uuser1`, version: '1700000000000' });
      assert.deepEqual(event!.message, {
        id: '468789577898262530',
        text: 'what are your opening hours?',
        user: 'Uuser1',
      });
      assert.deepEqual(event!.replyTo, {
        target: 'line',
        kind: 'answer',
        destination: {
          to: 'Uuser1',
          tenant: `line:${DESTINATION}`,
          replyToken: 'reply-token-1',
          replyTokenExpiresAt: '2023-11-14T22:14:20.000Z',
        },
      });
      assert.equal(
        chatBusinessKey(event!, 'answer'),
        `chat:line:${DESTINATION}:Uuser1:468789577898262530:answer`,
      );
    });

    it('answers a group message in the group, and keeps who wrote it', () => {
      const [event] = eventsOf(
        parse(bodyOf(textMessage({ source: { type: 'group', groupId: 'Cgroup1', userId: 'Uuser1' } }))),
      );
      assert.equal(event!.conversation?.id, `${DESTINATION}:Cgroup1`);
      assert.equal(event!.message?.user, 'Uuser1');
      assert.equal(event!.replyTo?.destination.to, 'Cgroup1');
    });

    it('answers a room message in the room', () => {
      const [event] = eventsOf(parse(bodyOf(textMessage({ source: { type: 'room', roomId: 'Rroom1' } }))));
      assert.equal(event!.conversation?.id, `${DESTINATION}:Rroom1`);
      assert.equal(event!.message?.user, undefined);
      assert.equal(event!.replyTo?.destination.to, 'Rroom1');
    });

    it('gives a message without text (a sticker) an empty text', () => {
      const [event] = eventsOf(
        parse(
          bodyOf(textMessage({ message: { id: 'm2', type: 'sticker', packageId: '1', stickerId: '2' } })),
        ),
      );
      assert.deepEqual(event!.message, { id: 'm2', text: '', user: 'Uuser1' });
    });

    it('records a redelivery', () => {
      const [event] = eventsOf(parse(bodyOf(textMessage({ deliveryContext: { isRedelivery: true } }))));
      assert.deepEqual(event!.redelivery, { isRedelivery: true });
    });

    it('makes one event per event in the request, each with its own workflow id', () => {
      const events = eventsOf(
        parse(
          bodyOf(
            textMessage({ webhookEventId: 'EVT1' }),
            textMessage({ webhookEventId: 'EVT2', message: { id: 'm2', type: 'text', text: 'second' } }),
            {
              type: 'follow',
              mode: 'active',
              timestamp: 1_700_000_000_500,
              source: { type: 'user', userId: 'Uuser2' },
              webhookEventId: 'EVT3',
              deliveryContext: { isRedelivery: false },
              replyToken: 'reply-token-3',
            },
          ),
        ),
      );
      assert.deepEqual(
        events.map((e) => [e.workflowId, e.eventType, e.message?.id]),
        [
          ['webhook:line:EVT1', 'message', '468789577898262530'],
          ['webhook:line:EVT2', 'message', 'm2'],
          ['webhook:line:EVT3', 'follow', undefined],
        ],
      );
      assert.equal(events[2]!.replyTo, undefined);
      assert.deepEqual(events[1]!.payload, {
        destination: DESTINATION,
        events: [
          textMessage({ webhookEventId: 'EVT2', message: { id: 'm2', type: 'text', text: 'second' } }),
        ],
      });
    });

    it('records a message in standby mode without asking for a reply', () => {
      const [event] = eventsOf(parse(bodyOf(textMessage({ mode: 'standby', replyToken: undefined }))));
      assert.equal(event!.workflowId, 'webhook:line:01HZZZZZZZZZZZZZZZZZZZZZZ1');
      assert.equal(event!.replyTo, undefined);
    });
  });

  describe('postbacks (a button, quick reply, rich menu or date picker)', () => {
    const slack = { replyTo: 'mentions' as const, allIn: [] };
    const nothingAnswered = async () => false;

    it('answers a postback like a message: its event id as message id, its data as text, the reply token', async () => {
      const [event] = eventsOf(parse(bodyOf(postback({ data: 'action=buy&item=111' }))));
      assert.equal(event!.eventType, 'postback');
      assert.deepEqual(event!.conversation, { id: `${DESTINATION}:Uuser1`, version: '1700000000000' });
      assert.deepEqual(event!.message, {
        id: '01HZZZZZZZZZZZZZZZZZZZZZPB',
        text: 'action=buy&item=111',
        user: 'Uuser1',
      });
      assert.deepEqual(event!.replyTo, {
        target: 'line',
        kind: 'answer',
        destination: {
          to: 'Uuser1',
          tenant: `line:${DESTINATION}`,
          replyToken: 'reply-token-pb',
          replyTokenExpiresAt: '2023-11-14T22:14:20.000Z',
        },
      });
      assert.equal(await answersByDefault(event!, slack, nothingAnswered), true);
      const plans = defaultPlans(event!);
      assert.deepEqual(
        plans.map((p) => [p.businessKey, p.steps.map((s) => [s.target, s.destination.replyToken])]),
        [[`chat:line:${DESTINATION}:Uuser1:01HZZZZZZZZZZZZZZZZZZZZZPB:answer`, [['line', 'reply-token-pb']]]],
      );
    });

    it('answers each press once: two presses of the same button are two answers', () => {
      const events = eventsOf(
        parse(
          bodyOf(
            postback({ data: 'more' }, { webhookEventId: 'PB1' }),
            postback({ data: 'more' }, { webhookEventId: 'PB2' }),
          ),
        ),
      );
      const keys = events.map((e) => chatBusinessKey(e, 'answer'));
      assert.equal(new Set(keys).size, 2);
    });

    it('answers a postback in a group in the group', () => {
      const [event] = eventsOf(
        parse(bodyOf(postback({ data: 'x' }, { source: { type: 'group', groupId: 'Cg', userId: 'Uu' } }))),
      );
      assert.equal(event!.replyTo?.destination.to, 'Cg');
      assert.equal(event!.message?.user, 'Uu');
    });

    it('records a postback in standby mode without asking for a reply', () => {
      const [event] = eventsOf(
        parse(bodyOf(postback({ data: 'x' }, { mode: 'standby', replyToken: undefined }))),
      );
      assert.equal(event!.replyTo, undefined);
    });

    it("gives the bot the postback's data and the date picker's or rich menu's params", () => {
      const cases: [Record<string, unknown>, unknown][] = [
        [{ data: 'plain' }, { data: 'plain' }],
        [
          { data: 'when', params: { date: '2017-12-25' } },
          { data: 'when', params: { date: '2017-12-25' } },
        ],
        [
          { data: 'at', params: { time: '01:00' } },
          { data: 'at', params: { time: '01:00' } },
        ],
        [
          { data: 'dt', params: { datetime: '2017-12-25T01:00' } },
          { data: 'dt', params: { datetime: '2017-12-25T01:00' } },
        ],
        [
          { data: 'menu', params: { newRichMenuAliasId: 'richmenu-alias-b', status: 'SUCCESS' } },
          { data: 'menu', params: { newRichMenuAliasId: 'richmenu-alias-b', status: 'SUCCESS' } },
        ],
      ];
      for (const [content, expected] of cases) {
        const bot = toBotEvent(eventsOf(parse(bodyOf(postback(content))))[0]!);
        assert.deepEqual(bot.line, { source: { type: 'user', userId: 'Uuser1' }, postback: expected });
        assert.equal(bot.eventType, 'postback');
        assert.equal(bot.text, content.data);
        assert.equal(bot.messageId, undefined, 'a postback carries no message');
        assert.equal((bot.raw as { type: string }).type, 'postback');
      }
    });

    it('gives the bot a message event with its message id and no postback', () => {
      const bot = toBotEvent(eventsOf(parse(bodyOf(textMessage())))[0]!);
      assert.equal(bot.messageId, '468789577898262530');
      assert.deepEqual(bot.line, { source: { type: 'user', userId: 'Uuser1' } });
    });
  });

  describe('malformed bodies (400, no echo of the payload)', () => {
    const rejects = (body: string, paths: string[]) =>
      assert.throws(
        () => parse(body),
        (err: unknown) => {
          assert.ok(err instanceof WebhookPayloadError);
          assert.deepEqual(err.issues.map((i) => i.path.join('.')).sort(), paths);
          assert.ok(!JSON.stringify([err.message, err.issues]).includes('opening hours'));
          return true;
        },
      );

    it('rejects the whole request when one event has no webhookEventId', () => {
      rejects(bodyOf(textMessage({ webhookEventId: 'EVT1' }), textMessage({ webhookEventId: undefined })), [
        'events.1.webhookEventId',
      ]);
    });

    it('rejects an event id that cannot be part of a workflow id', () => {
      rejects(bodyOf(textMessage({ webhookEventId: 'a/b c' })), ['events.0.webhookEventId']);
    });

    it('rejects a body without destination or events', () => {
      rejects(JSON.stringify({ text: 'opening hours' }), ['destination', 'events']);
    });

    it('rejects an event without a timestamp', () => {
      rejects(bodyOf(textMessage({ timestamp: 'yesterday' })), ['events.0.timestamp']);
    });

    it('rejects a timestamp past the last date (9007199254740991), instead of failing on it', () => {
      rejects(bodyOf(textMessage({ timestamp: Number.MAX_SAFE_INTEGER })), ['events.0.timestamp']);
    });

    it('rejects a body that is not JSON', () => {
      rejects('opening hours', ['']);
    });
  });
});
