// A bot's answer to a LINE event, prepared for the LINE target: message objects in one body (a reply
// token answers once, with up to five), and every problem LINE would refuse named at once, by path,
// without the bot's text.
import assert from 'node:assert/strict';
import { prepareAnswer } from '../../src/responders/answer';
import { PermanentResponderError } from '../../src/responders/errors';

const quickReply = (n: number) => ({
  items: Array.from({ length: n }, (_, i) => ({
    type: 'action',
    action: { type: 'message', label: `Option ${i}`, text: `option ${i}` },
  })),
});

const flex = {
  type: 'flex',
  altText: 'Opening hours',
  contents: { type: 'bubble', body: { type: 'box', layout: 'vertical', contents: [] } },
};

/** The problems prepareAnswer lists for an answer to LINE. */
function problemsOf(answer: unknown): string {
  try {
    prepareAnswer(answer, 'line');
  } catch (err) {
    assert.ok(err instanceof PermanentResponderError);
    return err.message;
  }
  return assert.fail('the answer should be refused');
}

describe('a LINE answer (prepareAnswer for the line target)', () => {
  it('prepares a quick reply and a flex message as one body of two LINE message objects', () => {
    const prepared = prepareAnswer([{ text: 'Pick one', quickReply: quickReply(2) }, flex], 'line');
    assert.deepEqual(prepared, {
      text: null,
      messages: [{ line: [{ type: 'text', text: 'Pick one', quickReply: quickReply(2) }, flex] }],
    });
  });

  it('keeps one plain text as it always was, and five objects as one body', () => {
    assert.deepEqual(prepareAnswer({ text: 'hi' }, 'line'), { text: 'hi' });
    const five = Array.from({ length: 5 }, (_, i) => ({ type: 'text', text: `part ${i}` }));
    assert.equal(prepareAnswer({ messages: five }, 'line').messages?.[0]?.line?.length, 5);
  });

  it('refuses six messages: more than one reply carries', () => {
    const six = Array.from({ length: 6 }, (_, i) => ({ type: 'text', text: `part ${i}` }));
    assert.match(
      problemsOf({ messages: six }),
      /messages: at most 5 messages per answer \(LINE's limit per reply\)/,
    );
    assert.match(problemsOf(six), /not a reply/);
  });

  it('lists every problem LINE would refuse at once, by path, without the text', () => {
    const secret = 'the code for the door is 4711';
    const message = problemsOf([
      { type: 'flex', altText: secret, contents: undefined },
      {
        type: 'image',
        originalContentUrl: 'http://example.com/a.png',
        previewImageUrl: 'https://example.com/p.png',
      },
      { type: 'sticker', packageId: '446' },
      { type: 'template', altText: 'x'.repeat(1501), template: { type: 'buttons' } },
      {
        text: secret,
        quickReply: {
          items: [
            { type: 'action', action: { type: 'bogus', label: 'a' } },
            {
              type: 'action',
              action: { type: 'message', label: 'a label longer than twenty', text: secret },
            },
          ],
        },
      },
    ]);
    for (const problem of [
      'messages.0: a flex message needs contents',
      'messages.1: originalContentUrl: must be an https URL',
      'messages.2: a sticker message needs stickerId',
      'messages.3: altText: Too big',
      'messages.4: quickReply.items.0.action.type: Invalid option',
      'messages.4: quickReply.items.1.action.label: Too big',
    ])
      assert.ok(message.includes(problem), `${problem} in ${message}`);
    assert.ok(!message.includes(secret));
  });

  it('refuses more than 13 quick reply items, and Slack fields', () => {
    problemsOf({ text: 'pick', quickReply: quickReply(14) });
    assert.match(problemsOf({ text: 'hi', blocks: [{ type: 'section' }] }), /blocks is a Slack field/);
  });
});
