// The HTTP responder (e.g. an LLM gateway) through the event workflow: its answer is written once and
// sent; a responder that refuses parks the effect as failed at prepareReply, and reprocess asks again;
// a responder that chooses not to reply (204, null, an empty text) ends the event succeeded, nothing sent.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { httpResponder } from '../../src/responders/http';

import { FakeTarget } from '../support/fake-target';
import { operatorDecides } from '../support/operators';
import { timeSkipping } from '../support/servers';
import { sandboxEvent, startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows, historyInputBytes, startEvent, waitForState } from '../support/workflows';

/** What the responder says to a message whose text is one of these: no reply, in each way it may. */
const QUIET: Record<string, { status: number; body?: string }> = {
  'quiet:204': { status: 204 },
  'quiet:null': { status: 200, body: 'null' },
  'quiet:empty': { status: 200, body: '{"text":""}' },
};

/** A responder service that answers, or refuses with the status it is told. */
async function fakeResponder() {
  const asked: { text: string; authorization?: string; rawBytes: number }[] = [];
  let refuseWith: number | undefined;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as { text: string; raw?: unknown };
      asked.push({
        text: body.text,
        authorization: req.headers.authorization,
        rawBytes: JSON.stringify(body.raw ?? null).length,
      });
      if (refuseWith) {
        res.writeHead(refuseWith, { 'content-type': 'application/json' }).end('{"error":"no"}');
        return;
      }
      const quiet = QUIET[body.text];
      if (quiet) {
        res.writeHead(quiet.status, { 'content-type': 'application/json' }).end(quiet.body);
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ text: `gateway answer to: ${body.text}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`,
    asked,
    refuse(status: number | undefined) {
      refuseWith = status;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('HTTP responder through the event workflow (time-skipping server)', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let fake: FakeTarget;
  let responder: Awaited<ReturnType<typeof fakeResponder>>;
  let worker: { stop(): Promise<void> };
  const config = testConfig();

  before(async () => {
    env = await timeSkipping();
    fake = await new FakeTarget().start();
    responder = await fakeResponder();
    const withFake = { ...config, SANDBOX_API_URL: fake.url };
    worker = await startTestWorker({
      address: env.address,
      config: withFake,
      deps: { responder: httpResponder({ url: responder.url, timeoutMs: 5000, token: 'gw-token' }) },
    });
  });
  after(async () => {
    await worker?.stop();
    await fake?.stop();
    await responder?.stop();
  });

  it('sends the answer the responder wrote, asking it once', async () => {
    const conv = uniqueId('c');
    const handle = await startEvent(
      env.client,
      config.TEMPORAL_TASK_QUEUE,
      sandboxEvent({ conversationId: conv, messageId: 'm1', text: 'where is my parcel?' }),
    );
    assert.equal((await handle.result()).state, 'succeeded');
    assert.deepEqual(
      fake.deliveredTo(conv).map((d) => d.text),
      ['gateway answer to: where is my parcel?'],
    );
    assert.deepEqual(
      responder.asked.filter((a) => a.text === 'where is my parcel?').map((a) => a.authorization),
      ['Bearer gw-token'],
    );
  });

  it('posts the whole event to the responder, and its history holds the event once', async () => {
    const conv = uniqueId('c');
    const event = sandboxEvent({ conversationId: conv, messageId: 'm1', text: 'a long one' });
    // A message with a large attachment: the event is 200 kB.
    event.payload = { ...(event.payload as object), attachment: 'x'.repeat(200_000) };
    const handle = await startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
    assert.equal((await handle.result()).state, 'succeeded');
    const [asked] = responder.asked.filter((a) => a.text === 'a long one');
    assert.ok(asked && asked.rawBytes > 200_000, 'the responder is posted the raw payload');
    const inputs = await historyInputBytes(handle);
    assert.ok(inputs.run > 200_000);
    // The responder's task reads the event from the run (activities/run-event.ts).
    assert.equal(inputs.tasks.prepareReply?.length, 1);
    assert.ok(
      inputs.tasks.prepareReply[0]! < 5_000,
      `prepareReply input: ${inputs.tasks.prepareReply[0]} bytes`,
    );
  });

  it('parks a refused answer as failed at prepareReply, sends nothing, and reprocess asks again', async () => {
    const conv = uniqueId('c');
    responder.refuse(401);
    const handle = await startEvent(
      env.client,
      config.TEMPORAL_TASK_QUEUE,
      sandboxEvent({ conversationId: conv, messageId: 'm1', text: 'refund?' }),
    );
    const failed = await waitForState(handle, 'failed');
    assert.equal(failed.step, 'prepareReply');
    assert.equal(failed.lastErrorClass, 'responder');
    assert.match(failed.recommendedAction ?? '', /RESPONDER_URL/);
    assert.equal(fake.deliveredTo(conv).length, 0);
    const [row] = await effectRows(`chat:sandbox:${conv}:m1:answer`);
    assert.equal(row.status, 'failed');

    responder.refuse(undefined);
    await operatorDecides(handle, 'reprocess', { reason: 'gateway key rotated' });
    assert.equal((await handle.result()).state, 'succeeded');
    assert.deepEqual(
      fake.deliveredTo(conv).map((d) => d.text),
      ['gateway answer to: refund?'],
    );
  });

  for (const [text, answer] of Object.entries(QUIET)) {
    it(`ends succeeded with nothing sent when the responder chooses not to reply (${answer.status} ${answer.body ?? 'no body'})`, async () => {
      const conv = uniqueId('c');
      const quiet = await startEvent(
        env.client,
        config.TEMPORAL_TASK_QUEUE,
        sandboxEvent({ conversationId: conv, messageId: 'm1', text }),
      );
      const result = await quiet.result();
      assert.deepEqual(
        [result.state, result.reason],
        ['succeeded', 'skipped: the responder chose not to reply'],
      );
      const [row] = await effectRows(`chat:sandbox:${conv}:m1:answer`);
      assert.equal(row.status, 'skipped');
      assert.equal(fake.deliveredTo(conv).length, 0, 'nothing sent');
      // The skipped message holds nothing back: the next one of the conversation is answered.
      const next = await startEvent(
        env.client,
        config.TEMPORAL_TASK_QUEUE,
        sandboxEvent({ conversationId: conv, messageId: 'm2', text: 'and now?' }),
      );
      assert.equal((await next.result()).state, 'succeeded');
      assert.deepEqual(
        fake.deliveredTo(conv).map((d) => d.text),
        ['gateway answer to: and now?'],
      );
    });
  }
});
