// The reply contract as published: the committed JSON Schemas are what src/bot.ts generates, a JSON
// Schema validator (Ajv, draft 2020-12) agrees with prepareAnswer on what an answer may be, and the
// event a bot is given (toBotEvent) is what schema/bot-event.schema.json describes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import type { z } from 'zod';
import type { BotEvent, botEventSchema } from '../../src/bot';
import { botSchemaFiles } from '../../src/bot-schema';
import type { InboundEvent } from '../../src/providers/types';
import { prepareAnswer } from '../../src/responders/answer';
import { toBotEvent } from '../../src/responders/bot-event';
import { PermanentResponderError } from '../../src/responders/errors';

// The interface bots import and the schema the JSON Schema comes from describe the same object.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Schema = z.infer<typeof botEventSchema>;
type Keys<T> = keyof NonNullable<T>;
const sameShape: [
  Same<BotEvent, Schema>,
  Same<Keys<BotEvent>, Keys<Schema>>,
  Same<Keys<BotEvent['slack']>, Keys<Schema['slack']>>,
  Same<Keys<BotEvent['line']>, Keys<Schema['line']>>,
  Same<Keys<BotEvent['github']>, Keys<Schema['github']>>,
] = [true, true, true, true, true];

const ROOT = path.resolve(__dirname, '../..');
const committed = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as object;

describe('The reply contract (src/bot.ts, schema/)', () => {
  const files = botSchemaFiles();
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const validReply = ajv.compile(committed('schema/bot-reply.schema.json'));
  const validEvent = ajv.compile(committed('schema/bot-event.schema.json'));

  it('commits the JSON Schemas src/bot.ts generates (npm run generate:bot-schema)', () => {
    assert.ok(sameShape);
    for (const [file, schema] of Object.entries(files)) assert.deepEqual(committed(file), schema, file);
  });

  const answers: [string, unknown, string][] = [
    ['no reply', null, 'slack'],
    ['one text', { text: 'hi' }, 'slack'],
    ['blocks in the channel', { text: 'hi', blocks: [{ type: 'section' }], where: 'channel' }, 'slack'],
    ['an array', [{ text: 'a' }, { text: 'b' }], 'github'],
    ['messages', { messages: [{ text: 'a' }] }, 'sandbox'],
    [
      'a LINE quick reply and a flex message',
      [
        {
          text: 'Pick one',
          quickReply: { items: [{ type: 'action', action: { type: 'message', label: 'S', text: 'S' } }] },
        },
        { type: 'flex', altText: 'card', contents: { type: 'bubble' } },
      ],
      'line',
    ],
  ];
  for (const [what, answer, target] of answers) {
    it(`accepts ${what}, as the schema does`, () => {
      assert.ok(validReply(answer), JSON.stringify(validReply.errors));
      prepareAnswer(answer, target);
    });
  }

  const refused: [string, unknown][] = [
    ['a text that is not a string', { text: 42 }],
    ['messages that are not a list', { messages: 'hello' }],
    ['six messages', Array.from({ length: 6 }, () => ({ text: 'x' }))],
    ['an unknown thread choice', { text: 'x', where: 'dm' }],
    ['a bare string', 'hello'],
  ];
  for (const [what, answer] of refused) {
    it(`refuses ${what}, as the schema does, naming where and never quoting the text`, () => {
      assert.equal(validReply(answer), false);
      assert.throws(
        () => prepareAnswer(answer, 'slack'),
        (err: Error) => err instanceof PermanentResponderError && !/hello/.test(err.message),
      );
    });
  }

  it('prepares one plain text as before, several messages one body each, LINE’s in one request', () => {
    assert.deepEqual(prepareAnswer({ text: 'hi' }, 'slack'), { text: 'hi' });
    assert.deepEqual(prepareAnswer({ text: '' }, 'slack'), { text: null });
    assert.deepEqual(prepareAnswer([{ text: 'a' }, { text: 'b', where: 'channel' }], 'slack'), {
      text: null,
      messages: [
        { text: 'a', slack: {} },
        { text: 'b', slack: { where: 'channel' } },
      ],
    });
    assert.deepEqual(
      prepareAnswer([{ text: 'a' }, { type: 'sticker', packageId: '1', stickerId: '2' }], 'line'),
      {
        text: null,
        messages: [
          {
            line: [
              { text: 'a', type: 'text' },
              { type: 'sticker', packageId: '1', stickerId: '2' },
            ],
          },
        ],
      },
    );
  });

  it('refuses what the target cannot send: blocks to GitHub, Slack fields to LINE', () => {
    assert.throws(
      () => prepareAnswer({ text: 'x', blocks: [{ type: 'section' }] }, 'github'),
      /blocks is not/,
    );
    assert.throws(() => prepareAnswer({ text: 'x', where: 'channel' }, 'line'), /where is a Slack field/);
  });

  const base = {
    workflowId: 'w',
    receivedAt: '2026-12-01T00:00:00.000Z',
    correlationId: 'c',
    occurredAt: '2026-12-01T00:00:00.000Z',
  };
  const events: [string, InboundEvent][] = [
    [
      'Slack',
      {
        ...base,
        provider: 'slack',
        eventId: 'Ev1',
        eventType: 'app_mention',
        conversation: { id: 'T1:C1' },
        message: { id: '1.2', text: 'hi', user: 'U1' },
        replyTo: { target: 'slack', kind: 'answer', destination: { channel: 'C1', threadTs: '1.2' } },
        payload: { type: 'event_callback', team_id: 'T1', event: { type: 'app_mention', channel: 'C1' } },
      },
    ],
    [
      'LINE',
      {
        ...base,
        provider: 'line',
        eventId: 'E1',
        eventType: 'message',
        payload: { destination: 'U0', events: [{ type: 'message', source: { type: 'user', userId: 'U9' } }] },
      },
    ],
    [
      'GitHub',
      {
        ...base,
        provider: 'github',
        eventId: 'g',
        eventType: 'issues.opened',
        payload: { repository: { full_name: 'o/r' }, issue: { number: 7 } },
      },
    ],
  ];
  for (const [provider, event] of events) {
    it(`gives a bot a ${provider} event the schema describes`, () => {
      const bot = toBotEvent(event);
      assert.ok(validEvent(JSON.parse(JSON.stringify(bot))), JSON.stringify(validEvent.errors));
    });
  }
  it('gives the bot Slack’s own event, the channel and the thread', () => {
    const bot = toBotEvent(events[0]![1]);
    assert.deepEqual(bot.slack, { team: 'T1', channel: 'C1', threadTs: '1.2' });
    assert.deepEqual(bot.raw, { type: 'app_mention', channel: 'C1' });
    assert.equal(toBotEvent(events[2]![1]).github?.issue, 7);
    assert.equal(toBotEvent(events[1]![1]).line?.source.userId, 'U9');
  });
});
