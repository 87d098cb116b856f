// The sandbox takes a bot's answer in either provider's shape (it shows both), one shape per message,
// and prepares the bodies its target sends: Slack's fields, or one LINE message object.
import assert from 'node:assert/strict';
import { prepareAnswer, targetFamily } from '../../src/responders/answer';
import { PermanentResponderError } from '../../src/responders/errors';

const blocks = [
  { type: 'section', text: { type: 'mrkdwn', text: '*Hello*' } },
  {
    type: 'actions',
    elements: [{ type: 'button', action_id: 'wave', text: { type: 'plain_text', text: 'Wave' } }],
  },
];
const quickReply = {
  items: [{ type: 'action', action: { type: 'postback', label: 'S', data: 'size=S' } }],
};

describe('answers for the sandbox (Slack-style and LINE-style both)', () => {
  it('is its own family in every flavour', () => {
    for (const target of ['sandbox', 'sandbox-lookup', 'sandbox-blind'])
      assert.equal(targetFamily(target), 'sandbox');
  });

  it('prepares a Slack-style message with its blocks', () => {
    assert.deepEqual(prepareAnswer({ text: 'Hello', blocks }, 'sandbox'), {
      text: null,
      messages: [{ text: 'Hello', slack: { blocks } }],
    });
  });

  it('prepares a LINE-style message as one LINE message object with its quick reply', () => {
    assert.deepEqual(prepareAnswer({ type: 'text', text: 'Pick a size', quickReply }, 'sandbox-lookup'), {
      text: null,
      messages: [{ text: 'Pick a size', line: [{ type: 'text', text: 'Pick a size', quickReply }] }],
    });
  });

  it('sends several messages as several bodies, plain text as text alone', () => {
    assert.deepEqual(prepareAnswer([{ text: 'one' }, { text: 'two', blocks }], 'sandbox'), {
      text: null,
      messages: [{ text: 'one' }, { text: 'two', slack: { blocks } }],
    });
    assert.deepEqual(prepareAnswer({ text: 'plain' }, 'sandbox'), { text: 'plain' });
  });

  for (const [name, answer, problem] of [
    ['Slack and LINE fields in one message', { text: 'x', blocks, quickReply }, /not both/],
    ['a LINE text message without text', { type: 'text', quickReply }, /a text message needs text/],
    ['a Slack message with neither text nor blocks', { where: 'channel' }, /needs text or blocks/],
  ] as const) {
    it(`refuses ${name}, naming the message`, () => {
      assert.throws(
        () => prepareAnswer(answer, 'sandbox'),
        (err: unknown) =>
          err instanceof PermanentResponderError &&
          /messages\.0: /.test(err.message) &&
          problem.test(err.message),
      );
    });
  }
});
