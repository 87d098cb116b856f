// The slack-response target (src/targets/slack-response.ts) against a real HTTP server standing in
// for a response_url: what it posts, where it refuses to post, and how each answer is classified.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MessageBody, StepPlan } from '../../src/model';
import { TargetError } from '../../src/targets/errors';
import { slackResponseTarget } from '../../src/targets/slack-response';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

describe('slack-response target', () => {
  let server: Server;
  let base: string;
  let handler: Handler;
  const received: { path: string; contentType?: string; body: string }[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        received.push({ path: req.url ?? '', contentType: req.headers['content-type'], body });
        handler(req, res, body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    received.length = 0;
    handler = (_req, res) => res.writeHead(200).end('ok');
  });

  const target = () => slackResponseTarget({ apiUrl: `${base}/api/` });
  const step = (responseUrl: string): StepPlan => ({
    name: 'reply',
    target: 'slack-response',
    destination: { responseUrl, channel: 'C1' },
    content: { kind: 'reply' },
  });
  const send = (body: MessageBody, url = `${base}/commands/T1/1/x`) =>
    target().send({
      effectId: 'eff-1',
      step: step(url),
      body,
      signal: new AbortController().signal,
      attempt: 1,
    });
  const failure = async (promise: Promise<unknown>): Promise<TargetError> => {
    try {
      await promise;
    } catch (err) {
      assert.ok(err instanceof TargetError, String(err));
      return err;
    }
    return assert.fail('the send should have failed');
  };

  it('promises no idempotency key and no lookup, so an unknown outcome is held for a person', () => {
    assert.deepEqual(target().capabilities, { idempotencyKey: false, lookup: false, consistencyDelayMs: 0 });
    assert.equal(target().lookup, undefined);
  });

  it("posts the message as JSON: text, blocks, response_type and replace_original from Slack's fields", async () => {
    const blocks = [{ type: 'section', text: { type: 'mrkdwn', text: '*Approved*' } }];
    const sent = await send({
      text: 'Approved',
      slack: { blocks, response_type: 'in_channel', replace_original: true, where: 'thread' },
    });
    assert.equal(sent.externalId, 'response-for-eff-1');
    assert.equal(received.length, 1);
    assert.equal(received[0]!.path, '/commands/T1/1/x');
    assert.equal(received[0]!.contentType, 'application/json');
    assert.deepEqual(JSON.parse(received[0]!.body), {
      text: 'Approved',
      blocks,
      response_type: 'in_channel',
      replace_original: true,
    });
  });

  it('posts a plain answer as text alone (Slack makes it ephemeral)', async () => {
    await send({ text: 'We are open 9-18' });
    assert.deepEqual(JSON.parse(received[0]!.body), { text: 'We are open 9-18' });
  });

  it('refuses, without a request, a URL that is neither hooks.slack.com nor SLACK_API_URL', async () => {
    for (const url of ['https://evil.example/commands/x', 'http://hooks.slack.com/commands/x', 'not a url']) {
      const err = await failure(send({ text: 'hi' }, url));
      assert.equal(err.errorClass, 'permanent', url);
      assert.match(err.details.fix ?? '', /hooks\.slack\.com/);
    }
    assert.equal(received.length, 0);
  });

  it('accepts hooks.slack.com (the URL is checked, not fetched, here)', async () => {
    const controller = new AbortController();
    controller.abort();
    const err = await failure(
      target().send({
        effectId: 'e',
        step: step('https://hooks.slack.com/commands/T1/1/x'),
        body: { text: 'hi' },
        signal: controller.signal,
        attempt: 1,
      }),
    );
    assert.doesNotMatch(err.message, /not a Slack response URL/);
  });

  it('classifies a spent or expired URL as permanent with a fix, a server error as unknown', async () => {
    const cases: [Handler, string, RegExp][] = [
      [(_q, s) => s.writeHead(404).end('expired_url'), 'permanent', /30 minutes/],
      [(_q, s) => s.writeHead(410).end(), 'permanent', /30 minutes/],
      [
        (_q, s) =>
          s.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":false,"error":"used_url"}'),
        'permanent',
        /used 5 times/,
      ],
      [(_q, s) => s.writeHead(400).end('invalid_blocks'), 'permanent', /blocks/],
      [(_q, s) => s.writeHead(500).end(), 'unknown', /./],
      [(_q, s) => s.writeHead(503).end(), 'retryable', /./],
      [(q) => q.socket.destroy(), 'unknown', /./],
    ];
    for (const [answer, errorClass, fixOrMessage] of cases) {
      handler = answer;
      const err = await failure(send({ text: 'hi' }));
      assert.equal(err.errorClass, errorClass, err.message);
      assert.match(err.details.fix ?? err.message, fixOrMessage, err.message);
      assert.doesNotMatch(err.message, /commands\/T1/, 'the capability URL is not in the error');
    }
  });

  it('classifies a refused connection as retryable: nothing was written', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = await failure(
      slackResponseTarget({ apiUrl: `http://127.0.0.1:${port}/api/` }).send({
        effectId: 'e',
        step: step(`http://127.0.0.1:${port}/commands/x`),
        body: { text: 'hi' },
        signal: new AbortController().signal,
        attempt: 1,
      }),
    );
    assert.equal(err.errorClass, 'retryable');
  });
});
