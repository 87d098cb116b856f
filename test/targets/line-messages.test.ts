// The LINE target with a bot's own message objects, against a fake Messaging API over real HTTP: one
// answer is one request (reply, or the push standing in for it) carrying every object; a refused
// object is a permanent error that names it and never quotes the bot's text.
import assert from 'node:assert/strict';
import type { MessageBody, StepPlan } from '../../src/model';
import { lineProvider } from '../../src/providers/line';
import { prepareAnswer } from '../../src/responders/answer';
import { defaultPlans } from '../../src/routes';
import { TargetError } from '../../src/targets/errors';
import { lineTarget } from '../../src/targets/line';
import { FakeLine } from '../support/fakes/line';
import { uniqueId } from '../support/system';
import { eventsOf, requestContext } from '../unit/providers/context';
import { linePostbackRequest, QUICK_REPLY_AND_FLEX } from './harness';

describe('LINE target: message objects, one request per answer', function () {
  this.timeout(30_000);
  let line: FakeLine;
  let target: ReturnType<typeof lineTarget>;

  before(async () => {
    line = await new FakeLine().start();
    target = lineTarget({ channelAccessToken: line.channelAccessToken, apiUrl: line.url });
  });
  after(async () => {
    await line?.stop();
  });

  const step = (destination: Record<string, string>): StepPlan => ({
    name: 'reply',
    target: 'line',
    destination,
    content: { kind: 'reply' },
  });
  const send = (destination: Record<string, string>, body: MessageBody, attempt = 1) =>
    target.send({
      effectId: uniqueId('eff-'),
      step: step(destination),
      body,
      signal: new AbortController().signal,
      attempt,
    });
  const refusal = async (work: Promise<unknown>): Promise<TargetError> => {
    const err = await work.then(
      () => assert.fail('LINE should refuse'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof TargetError);
    return err;
  };

  it('replies with every message object of the answer in one request with the reply token', async () => {
    const to = uniqueId('U');
    const token = line.replyToken(to);
    const sent = await send({ to, ...token }, { line: QUICK_REPLY_AND_FLEX });
    const replies = line.replies().filter((r) => r.body.replyToken === token.replyToken);
    assert.equal(replies.length, 1);
    assert.deepEqual(replies[0]!.body.messages, QUICK_REPLY_AND_FLEX);
    assert.deepEqual(
      line.deliveredTo(to).map((d) => [d.via, d.messages.length]),
      [['reply', 2]],
    );
    assert.equal(sent.externalId, line.deliveredTo(to)[0]!.messageId);
  });

  it('pushes the same objects in one request under the retry key once the token is not fresh', async () => {
    const to = uniqueId('U');
    await send({ to, ...line.replyToken(to, 500) }, { line: QUICK_REPLY_AND_FLEX });
    const retried = uniqueId('U');
    await send({ to: retried, ...line.replyToken(retried) }, { line: QUICK_REPLY_AND_FLEX }, 2);
    for (const user of [to, retried]) {
      const pushes = line.pushes().filter((p) => p.body.to === user);
      assert.equal(pushes.length, 1);
      assert.deepEqual(pushes[0]!.body.messages, QUICK_REPLY_AND_FLEX);
      assert.ok(pushes[0]!.headers['x-line-retry-key']);
    }
  });

  it('still sends a plain text answer as one text message', async () => {
    const to = uniqueId('U');
    await send({ to, ...line.replyToken(to) }, { text: 'We are open 9:00-18:00.' });
    assert.deepEqual(line.deliveredTo(to)[0]!.messages, [{ type: 'text', text: 'We are open 9:00-18:00.' }]);
  });

  it('refuses more than five objects before sending anything: LINE would refuse them all', async () => {
    const to = uniqueId('U');
    const six = Array.from({ length: 6 }, (_, i) => ({ type: 'text', text: `part ${i}` }));
    const token = line.replyToken(to);
    const err = await refusal(send({ to, ...token }, { line: six }));
    assert.equal(err.errorClass, 'permanent');
    assert.match(err.details.fix ?? '', /at most 5/);
    assert.equal(
      line.requests.filter((r) => r.body.to === to || r.body.replyToken === token.replyToken).length,
      0,
    );
  });

  it('classifies a refused message object as permanent, naming it and not its text, and pushes nothing', async () => {
    const to = uniqueId('U');
    const secretText = 'my account number is 12345678';
    const token = line.replyToken(to);
    const bad = [
      { type: 'text', text: secretText },
      { type: 'flex', altText: '', contents: { type: 'bubble' } },
    ];
    const err = await refusal(send({ to, ...token }, { line: bad }));
    assert.equal(err.errorClass, 'permanent');
    assert.match(err.message, /message object was refused \(400\)/);
    assert.equal(
      err.details.fix,
      'fix the answer (docs/targets.md, LINE): messages[1].altText (a flex message): May not be empty',
    );
    assert.ok(!JSON.stringify([err.message, err.details]).includes(secretText));
    assert.equal(line.deliveredTo(to).length, 0);
    assert.equal(line.pushes().filter((p) => p.body.to === to).length, 0, 'not a reply-token problem');
  });

  it("leaves out LINE's reason when it repeats what the bot wrote", async () => {
    const to = uniqueId('U');
    const secretText = 'call me at 555-0100';
    line.next({
      status: 400,
      body: {
        message: 'The request body has 1 error(s)',
        details: [{ message: `Invalid text: ${secretText}`, property: 'messages[0].text' }],
      },
    });
    const err = await refusal(send({ to }, { text: secretText }));
    assert.equal(
      err.details.fix,
      'fix the answer (docs/targets.md, LINE): messages[0].text (a text message)',
    );
  });
});

describe("a LINE postback's rich answer, from the signed webhook to the fake LINE API", function () {
  this.timeout(30_000);
  const SECRET = 'line-channel-secret';
  let line: FakeLine;

  before(async () => {
    line = await new FakeLine().start();
  });
  after(async () => {
    await line?.stop();
  });

  it('sends a quick reply and a flex message as one reply request through the reply token', async () => {
    const to = uniqueId('U');
    const token = line.replyToken(to);
    const request = linePostbackRequest(SECRET, to, token.replyToken, {
      data: 'day=pick',
      params: { date: '2017-12-25' },
    });
    const provider = lineProvider(SECRET);
    const ctx = requestContext(request.body, request.headers);
    await provider.verify(ctx);
    const [event] = eventsOf(provider.parse(ctx));
    const [plan, ...more] = defaultPlans(event!);
    assert.equal(more.length, 0, 'one reply per postback');
    const step = plan!.steps[0]!;

    const prepared = prepareAnswer({ messages: QUICK_REPLY_AND_FLEX }, step.target);
    assert.equal(prepared.messages?.length, 1, 'one body: a reply token answers once');
    const target = lineTarget({ channelAccessToken: line.channelAccessToken, apiUrl: line.url });
    await target.send({
      effectId: uniqueId('eff-'),
      step,
      body: prepared.messages![0]!,
      signal: new AbortController().signal,
      attempt: 1,
    });

    const replies = line.replies().filter((r) => r.body.replyToken === token.replyToken);
    assert.equal(replies.length, 1);
    assert.deepEqual(replies[0]!.body.messages, QUICK_REPLY_AND_FLEX);
    assert.equal(line.pushes().filter((p) => p.body.to === to).length, 0);
  });
});
