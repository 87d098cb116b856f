// The Slack provider: Slack's documented signature example, a valid request broken one thing at a
// time, the normalisation the default route and the Slack target rely on, and how a message
// addresses the bot.
import assert from 'node:assert/strict';
import { WebhookPayloadError, WebhookVerificationError } from '../../../src/providers/errors';
import { slackAddressing, slackProvider, verifySlackRequest } from '../../../src/providers/slack';
import { chatBusinessKey } from '../../../src/routes';
import { signSlackRequest } from '../../support/signers';
import { eventsOf, flipOneByte, requestContext } from './context';

const SECRET = 'slack-test-signing-secret';
const provider = slackProvider(SECRET);

function callback(event: Record<string, unknown>, envelope: Record<string, unknown> = {}) {
  return JSON.stringify({
    token: 'XXYYZZ',
    team_id: 'T123',
    api_app_id: 'A123',
    type: 'event_callback',
    event_id: 'Ev0001',
    event_time: 1_700_000_000,
    event,
    ...envelope,
  });
}

const userMessage = {
  type: 'message',
  channel: 'C42',
  user: 'U7',
  text: 'what are your opening hours?',
  ts: '1700000000.000100',
  event_ts: '1700000000.000100',
  channel_type: 'channel',
};

function parse(body: string, headers: Record<string, string> = {}) {
  return provider.parse(requestContext(body, { ...signSlackRequest(SECRET, body), ...headers }));
}

describe('Slack provider', () => {
  describe('signature', () => {
    it("matches the example in Slack's documentation", () => {
      const secret = '8f742231b10e8888abcd99yyyzzz85a5';
      const body =
        'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
      const expected = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
      const at = new Date(1531420618 * 1000);
      assert.equal(signSlackRequest(secret, body, at)['x-slack-signature'], expected);
      verifySlackRequest(
        secret,
        requestContext(
          body,
          { 'x-slack-request-timestamp': '1531420618', 'x-slack-signature': expected },
          { receivedAt: at },
        ),
      );
    });

    const body = callback(userMessage);
    // One fixed arrival time, so that the window's edges do not depend on when a second ticks over.
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const at = (offsetMs: number) => new Date(now.getTime() + offsetMs);
    const arriving = (raw: string | Buffer, headers: Record<string, string>) =>
      requestContext(raw, headers, { receivedAt: now });
    const valid = () => signSlackRequest(SECRET, body, now);

    it('accepts a valid request, also at the edges of the 300 s window', () => {
      verifySlackRequest(SECRET, arriving(body, valid()));
      for (const offset of [-300_000, 300_000]) {
        verifySlackRequest(SECRET, arriving(body, signSlackRequest(SECRET, body, at(offset))));
      }
    });

    const broken: [string, () => ReturnType<typeof requestContext>][] = [
      ['a changed body byte', () => arriving(flipOneByte(body), valid())],
      ['another secret', () => arriving(body, signSlackRequest('another-secret', body, now))],
      ['a timestamp too old', () => arriving(body, signSlackRequest(SECRET, body, at(-301_000)))],
      ['a timestamp too new', () => arriving(body, signSlackRequest(SECRET, body, at(301_000)))],
      [
        'a timestamp other than the signed one',
        () => arriving(body, { ...valid(), 'x-slack-request-timestamp': String(now.getTime() / 1000 - 1) }),
      ],
      [
        'a timestamp that is not a number',
        () => arriving(body, { ...valid(), 'x-slack-request-timestamp': 'soon' }),
      ],
      [
        'a missing signature header',
        () => arriving(body, { 'x-slack-request-timestamp': valid()['x-slack-request-timestamp']! }),
      ],
      [
        'a missing timestamp header',
        () => arriving(body, { 'x-slack-signature': valid()['x-slack-signature']! }),
      ],
      ['a signature of another length', () => arriving(body, { ...valid(), 'x-slack-signature': 'v0=00' })],
    ];
    for (const [name, make] of broken) {
      it(`rejects ${name}`, () => {
        assert.throws(() => verifySlackRequest(SECRET, make()), WebhookVerificationError);
      });
    }
  });

  describe('normalisation', () => {
    it('answers url_verification with the challenge and starts nothing', () => {
      const result = parse(JSON.stringify({ token: 't', type: 'url_verification', challenge: 'c-123' }));
      assert.deepEqual(result, { kind: 'answer', status: 200, body: { challenge: 'c-123' } });
    });

    it('turns a user message into an event with a threaded reply', () => {
      const [event] = eventsOf(parse(callback(userMessage)));
      assert.equal(event!.provider, 'slack');
      assert.equal(event!.eventId, 'Ev0001');
      assert.equal(event!.workflowId, 'webhook:slack:Ev0001');
      assert.equal(event!.eventType, 'message');
      assert.equal(event!.occurredAt, '2023-11-14T22:13:20.000Z');
      assert.equal(event!.redelivery, undefined);
      assert.deepEqual(event!.conversation, { id: 'T123:C42', version: '1700000000.000100' });
      assert.deepEqual(event!.message, {
        id: '1700000000.000100',
        text: 'what are your opening hours?',
        user: 'U7',
      });
      assert.deepEqual(event!.replyTo, {
        target: 'slack',
        kind: 'answer',
        destination: { channel: 'C42', threadTs: '1700000000.000100', tenant: 'slack:T123' },
      });
      assert.equal(event!.tenant, 'slack:T123');
      assert.equal((event!.payload as { api_app_id: string }).api_app_id, 'A123');
    });

    it('names the installation that answers: the workspace, or the organisation for an org-wide install', () => {
      const grid = { enterprise_id: 'E9' };
      const orgWide = { ...grid, authorizations: [{ team_id: 'T123', is_enterprise_install: true }] };
      const workspace = { ...grid, authorizations: [{ team_id: 'T123', is_enterprise_install: false }] };
      const tenantOf = (envelope: Record<string, unknown>) => {
        const [event] = eventsOf(parse(callback(userMessage, envelope)));
        return [event!.tenant, event!.replyTo?.destination.tenant];
      };
      assert.deepEqual(tenantOf(orgWide), ['slack:E9', 'slack:E9']);
      assert.deepEqual(tenantOf(workspace), ['slack:T123', 'slack:T123']);
      assert.deepEqual(tenantOf(grid), ['slack:T123', 'slack:T123']);
    });

    it('answers in the existing thread of a threaded message', () => {
      const [event] = eventsOf(parse(callback({ ...userMessage, thread_ts: '1699999999.000001' })));
      assert.deepEqual(event!.replyTo?.destination, {
        channel: 'C42',
        threadTs: '1699999999.000001',
        tenant: 'slack:T123',
      });
    });

    it('gives the message and app_mention events of one mention the same business key', () => {
      const [message] = eventsOf(parse(callback(userMessage, { event_id: 'EvMessage' })));
      const [mention] = eventsOf(
        parse(
          callback(
            {
              type: 'app_mention',
              channel: 'C42',
              user: 'U7',
              text: '<@UBOT> what are your opening hours?',
              ts: '1700000000.000100',
              event_ts: '1700000000.000100',
            },
            { event_id: 'EvMention' },
          ),
        ),
      );
      assert.notEqual(message!.workflowId, mention!.workflowId);
      assert.equal(mention!.eventType, 'app_mention');
      assert.equal(chatBusinessKey(message!, 'answer'), 'chat:slack:T123:C42:1700000000.000100:answer');
      assert.equal(chatBusinessKey(mention!, 'answer'), chatBusinessKey(message!, 'answer'));
      assert.deepEqual(mention!.replyTo, message!.replyTo);
    });

    it('records the sender retry number and reason', () => {
      const [event] = eventsOf(
        parse(callback(userMessage), { 'x-slack-retry-num': '2', 'x-slack-retry-reason': 'http_timeout' }),
      );
      assert.deepEqual(event!.redelivery, { retryNum: 2, retryReason: 'http_timeout' });
    });

    const noReply: [string, Record<string, unknown>][] = [
      ['an edited message (subtype)', { ...userMessage, subtype: 'message_changed' }],
      ['a bot message', { ...userMessage, bot_id: 'B1' }],
      ['a bot mention', { ...userMessage, type: 'app_mention', bot_id: 'B1' }],
      ['a reaction', { type: 'reaction_added', user: 'U7', reaction: 'thumbsup', event_ts: '1.2' }],
    ];
    for (const [name, payload] of noReply) {
      it(`records ${name} without asking for a reply`, () => {
        const [event] = eventsOf(parse(callback(payload)));
        assert.equal(event!.workflowId, 'webhook:slack:Ev0001');
        assert.equal(event!.eventType, payload.type);
        assert.equal(event!.message, undefined);
        assert.equal(event!.replyTo, undefined);
      });
    }
  });

  describe('how a message addresses the bot (slackAddressing, what the default route decides on)', () => {
    const bot = {
      enterprise_id: null,
      team_id: 'T123',
      user_id: 'UBOT',
      is_bot: true,
      is_enterprise_install: false,
    };
    /** The event in an envelope whose other fields are `envelope` (by default: delivered for the bot UBOT). */
    const addressing = (
      event: Record<string, unknown>,
      envelope: Record<string, unknown> = { authorizations: [bot] },
    ) => slackAddressing(JSON.parse(callback(event, envelope)));

    it('reads an app_mention as a mention, whoever the envelope names', () => {
      const mention = { ...userMessage, type: 'app_mention', text: '<@UBOT> hours?' };
      assert.deepEqual(addressing(mention, { authorizations: [] }), { channel: 'C42', kind: 'mention' });
    });

    it("reads a message that names the envelope's bot user as a mention, in either of Slack's forms", () => {
      for (const text of ['<@UBOT> hours?', 'so, <@UBOT|replyflow>, hours?'])
        assert.deepEqual(addressing({ ...userMessage, text }), { channel: 'C42', kind: 'mention' }, text);
    });

    it('does not read a mention of someone else, or of a user who is not the bot, as a mention', () => {
      assert.equal(addressing({ ...userMessage, text: '<@UOTHER> lunch?' })?.kind, 'channel');
      assert.equal(addressing({ ...userMessage, text: '<@UBOTX> lunch?' })?.kind, 'channel');
      const person = { ...bot, user_id: 'U7', is_bot: false };
      assert.equal(
        addressing({ ...userMessage, text: '<@U7> lunch?' }, { authorizations: [person] })?.kind,
        'channel',
      );
    });

    it('reads a message without usable authorizations by its other fields', () => {
      for (const envelope of [
        {},
        { authorizations: 'none' },
        { authorizations: [null, { user_id: 5, is_bot: true }] },
      ])
        assert.equal(addressing({ ...userMessage, text: '<@UBOT> hours?' }, envelope)?.kind, 'channel');
    });

    it('reads channel_type im as a direct message', () => {
      assert.deepEqual(addressing({ ...userMessage, channel: 'D42', channel_type: 'im' }), {
        channel: 'D42',
        kind: 'direct',
      });
    });

    it('reads a thread reply with its parent, and whether the bot posted the parent', () => {
      const reply = { ...userMessage, ts: '1700000000.000200', thread_ts: '1700000000.000100' };
      assert.deepEqual(addressing({ ...reply, parent_user_id: 'U7' }), {
        channel: 'C42',
        kind: 'thread',
        threadTs: '1700000000.000100',
        parentIsBot: false,
      });
      assert.deepEqual(addressing({ ...reply, parent_user_id: 'UBOT' }), {
        channel: 'C42',
        kind: 'thread',
        threadTs: '1700000000.000100',
        parentIsBot: true,
      });
    });

    it("reads a thread's parent (thread_ts = ts) as a plain channel message", () => {
      assert.equal(addressing({ ...userMessage, thread_ts: userMessage.ts })?.kind, 'channel');
    });

    it("reads nothing in what is not a person's message", () => {
      assert.equal(addressing({ ...userMessage, bot_id: 'B1', text: '<@UBOT>' }), undefined);
      assert.equal(addressing({ ...userMessage, subtype: 'message_changed' }), undefined);
      assert.equal(
        addressing({ type: 'reaction_added', user: 'U7', reaction: 'x', event_ts: '1.2' }),
        undefined,
      );
      assert.equal(slackAddressing({ type: 'event_callback' }), undefined);
      assert.equal(slackAddressing('not an envelope'), undefined);
    });
  });

  describe('deliveries that carry no event (acknowledged, nothing started)', () => {
    it('acknowledges app_rate_limited, which Slack sends when it stops delivering for a minute', () => {
      const notice = {
        token: 't',
        type: 'app_rate_limited',
        team_id: 'T123',
        minute_rate_limited: 1518467820,
        api_app_id: 'A1',
      };
      assert.deepEqual(parse(JSON.stringify(notice)), { kind: 'ignored', reason: 'app_rate_limited' });
    });

    it('acknowledges an envelope type Slack adds later', () => {
      assert.deepEqual(parse(JSON.stringify({ type: 'app_future_notice', team_id: 'T1' })), {
        kind: 'ignored',
        reason: 'unknown_envelope_type',
      });
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

    it('rejects an event without event_id', () => {
      const body = JSON.parse(callback(userMessage));
      delete body.event_id;
      rejects(JSON.stringify(body), ['event_id']);
    });

    it('rejects an event id that cannot be part of a workflow id', () => {
      rejects(callback(userMessage, { event_id: 'Ev 1/../x' }), ['event_id']);
    });

    it('rejects an envelope without a type', () => {
      rejects(JSON.stringify({ team_id: 'T123', text: 'opening hours' }), ['type']);
    });

    it('rejects an event_time past the last date (9007199254740991), instead of failing on it', () => {
      rejects(callback(userMessage, { event_time: Number.MAX_SAFE_INTEGER }), ['event_time']);
    });

    it('rejects a body that is not JSON', () => {
      rejects('{"event": "opening hours"', ['']);
    });

    it('rejects an event_callback without an event', () => {
      rejects(JSON.stringify({ type: 'event_callback', team_id: 'T1', event_id: 'Ev1', event_time: 1 }), [
        'event',
      ]);
    });
  });
});
