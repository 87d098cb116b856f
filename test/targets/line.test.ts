// The LINE target through the whole event workflow (time-skipping server, real PostgreSQL) against a
// fake Messaging API over real HTTP: reply token while fresh, push with X-Line-Retry-Key otherwise,
// 409 as "already accepted", a reply-token request that may have been applied is never resent, and a
// postback (as the provider normalises it) is answered once through its reply token.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Config } from '../../src/config';
import { lineProvider } from '../../src/providers/line';
import type { InboundEvent } from '../../src/providers/types';
import { lineTarget } from '../../src/targets/line';
import type { TargetAdapter } from '../../src/targets/types';

import { FakeLine } from '../support/fakes/line';
import { operatorDecides, secondOperatorApproves } from '../support/operators';
import { timeSkipping } from '../support/servers';
import { startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows, startEvent, waitForState } from '../support/workflows';
import { eventsOf, requestContext } from '../unit/providers/context';
import { lineEvent, linePostbackRequest } from './harness';

describe('LINE target (reply token, then push with X-Line-Retry-Key) through the event workflow', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let line: FakeLine;
  let config: Config;
  let worker: { stop(): Promise<void> };

  before(async () => {
    env = await timeSkipping();
    line = await new FakeLine().start();
    config = testConfig({ LINE_CHANNEL_ACCESS_TOKEN: line.channelAccessToken, LINE_API_URL: line.url });
    worker = await startTestWorker({ address: env.address, config });
  });
  after(async () => {
    await worker?.stop();
    await line?.stop();
  });

  const start = (event: InboundEvent) => startEvent(env.client, config.TEMPORAL_TASK_QUEUE, event);
  const rowFor = async (event: InboundEvent) => {
    const rows = await effectRows(`chat:line:${event.conversation!.id}:${event.message!.id}:`);
    assert.equal(rows.length, 1, 'one effect row per business key');
    return rows[0];
  };
  const pushesTo = (to: string) => line.pushes().filter((p) => p.body.to === to);
  const repliesWith = (token: string) => line.replies().filter((r) => r.body.replyToken === token);
  /** A user and a reply token that is already too close to expiry to use. */
  const staleToken = (to: string) => line.replyToken(to, 500);

  it('replies with a fresh reply token and pushes nothing', async () => {
    const to = uniqueId('U');
    const token = line.replyToken(to);
    const event = lineEvent(to, 'm1', token);
    assert.equal((await (await start(event)).result()).state, 'succeeded');
    assert.deepEqual(
      line.deliveredTo(to).map((d) => d.via),
      ['reply'],
    );
    assert.equal(pushesTo(to).length, 0);
    assert.equal(repliesWith(token.replyToken)[0]!.headers['x-line-retry-key'], undefined);
    assert.equal((await rowFor(event)).external_id, line.deliveredTo(to)[0]!.messageId);
  });

  it('answers a postback (a button press) once through its reply token', async () => {
    const to = uniqueId('U');
    const token = line.replyToken(to);
    const request = linePostbackRequest('secret', to, token.replyToken, { data: 'opening hours' });
    const [event] = eventsOf(lineProvider('secret').parse(requestContext(request.body, request.headers)));
    assert.equal((await (await start(event!)).result()).state, 'succeeded');
    assert.equal(repliesWith(token.replyToken).length, 1);
    assert.deepEqual(
      line.deliveredTo(to).map((d) => [d.via, d.text]),
      [['reply', 'We are open 9:00-18:00 JST, Monday to Friday.']],
    );
    assert.equal(pushesTo(to).length, 0);
    assert.equal((await rowFor(event!)).external_id, line.deliveredTo(to)[0]!.messageId);
  });

  it('pushes with the effect id as X-Line-Retry-Key once the reply token is no longer fresh', async () => {
    const to = uniqueId('U');
    const event = lineEvent(to, 'm1', staleToken(to));
    assert.equal((await (await start(event)).result()).state, 'succeeded');
    const row = await rowFor(event);
    assert.equal(
      line.replies().filter((r) => r.body.replyToken === event.replyTo!.destination.replyToken).length,
      0,
    );
    assert.deepEqual(
      pushesTo(to).map((p) => p.headers['x-line-retry-key']),
      [row.id],
    );
    assert.equal(line.deliveredTo(to).length, 1);
  });

  it('falls back to push when LINE answers 400 Invalid reply token', async () => {
    const to = uniqueId('U');
    const token = line.replyToken(to);
    line.spend(token.replyToken);
    const event = lineEvent(to, 'm1', token);
    assert.equal((await (await start(event)).result()).state, 'succeeded');
    assert.equal(repliesWith(token.replyToken).length, 1);
    assert.deepEqual(
      line.deliveredTo(to).map((d) => d.via),
      ['push'],
    );
  });

  it('resends a lost push with the same retry key, and 409 "already accepted" settles it', async () => {
    const to = uniqueId('U');
    const event = lineEvent(to, 'm1', staleToken(to));
    line.next('accept-then-drop');
    assert.equal((await (await start(event)).result()).state, 'succeeded');
    const row = await rowFor(event);
    const keys = pushesTo(to).map((p) => p.headers['x-line-retry-key']);
    assert.deepEqual(keys, [row.id, row.id]);
    assert.equal(line.deliveredTo(to).length, 1);
    assert.equal(row.external_id, line.deliveredTo(to)[0]!.messageId, 'the 409 names the accepted message');
  });

  it('resends a push that hung past the attempt timeout, with the same key, once', async () => {
    const to = uniqueId('U');
    const event = lineEvent(to, 'm1', staleToken(to));
    line.next('hang');
    assert.equal((await (await start(event)).result()).state, 'succeeded');
    const row = await rowFor(event);
    assert.deepEqual(
      pushesTo(to).map((p) => p.headers['x-line-retry-key']),
      [row.id, row.id],
    );
    assert.equal(line.deliveredTo(to).length, 1);
  });

  it('resends after a 500 with the same key and after a 429 once Retry-After passed: one message each', async () => {
    const first = uniqueId('U');
    line.next({ status: 500 });
    assert.equal(
      (await (await start(lineEvent(first, 'm1', staleToken(first)))).result()).state,
      'succeeded',
    );
    const second = uniqueId('U');
    line.next({ status: 429, retryAfter: '3' });
    assert.equal(
      (await (await start(lineEvent(second, 'm1', staleToken(second)))).result()).state,
      'succeeded',
    );
    for (const to of [first, second]) {
      assert.equal(pushesTo(to).length, 2, 'one refused, one accepted; the SDK added none');
      assert.equal(line.deliveredTo(to).length, 1);
    }
  });

  it('holds a reply-token request whose answer was lost instead of resending it, and an approved resend pushes', async () => {
    const to = uniqueId('U');
    const token = line.replyToken(to);
    const event = lineEvent(to, 'm1', token);
    line.next('accept-then-drop');
    const handle = await start(event);
    const held = await waitForState(handle, 'held');
    assert.equal(held.lastErrorClass, 'unknown');
    assert.match(held.recommendedAction ?? '', /cannot be asked/);
    assert.equal(repliesWith(token.replyToken).length, 1);
    assert.equal(pushesTo(to).length, 0, 'no push behind the reply it may duplicate');
    await operatorDecides(handle, 'resolve', {
      action: 'resend',
      reason: 'user says nothing came',
    });
    await waitForState(handle, 'awaiting_approval');
    await secondOperatorApproves(handle, 'checked with the user');
    assert.equal((await handle.result()).state, 'succeeded');
    const row = await rowFor(event);
    assert.deepEqual(
      pushesTo(to).map((p) => p.headers['x-line-retry-key']),
      [row.id],
    );
  });

  describe('when the worker dies after LINE accepted the request', () => {
    let crashing: { stop(): Promise<void> };
    let crashConfig: Config;
    let wake: () => void = () => {};

    /** The first send reaches LINE, then its worker stalls and reports nothing until woken. */
    const diesAfterWrite = (target: TargetAdapter): TargetAdapter => {
      let crashes = 1;
      return {
        ...target,
        async send(request) {
          const sent = await target.send(request);
          if (crashes-- <= 0) return sent;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          throw new Error('the stalled attempt woke up');
        },
      };
    };

    beforeEach(async () => {
      crashConfig = testConfig({
        LINE_CHANNEL_ACCESS_TOKEN: line.channelAccessToken,
        LINE_API_URL: line.url,
      });
      const real = lineTarget({ channelAccessToken: line.channelAccessToken, apiUrl: line.url });
      crashing = await startTestWorker({
        address: env.address,
        config: crashConfig,
        deps: { targets: new Map([['line', diesAfterWrite(real)]]) },
      });
    });
    afterEach(async () => {
      wake();
      await crashing.stop();
    });

    it('holds a reply-token request: the retry cannot know whether it was delivered', async () => {
      const to = uniqueId('U');
      const token = line.replyToken(to);
      const handle = await startEvent(
        env.client,
        crashConfig.TEMPORAL_TASK_QUEUE,
        lineEvent(to, 'm1', token),
      );
      await waitForState(handle, 'held');
      wake();
      assert.equal(repliesWith(token.replyToken).length, 1);
      assert.equal(pushesTo(to).length, 0);
      assert.equal(line.deliveredTo(to).length, 1);
      await operatorDecides(handle, 'resolve', {
        action: 'mark-sent',
        reason: 'user got it',
        externalId: 'x',
      });
      assert.equal((await handle.result()).state, 'succeeded');
    });

    it('resends a push with the same retry key, and LINE answers 409: one message', async () => {
      const to = uniqueId('U');
      const handle = await startEvent(env.client, crashConfig.TEMPORAL_TASK_QUEUE, lineEvent(to, 'm1'));
      assert.equal((await handle.result()).state, 'succeeded');
      const keys = pushesTo(to).map((p) => p.headers['x-line-retry-key']);
      assert.equal(keys.length, 2);
      assert.equal(keys[0], keys[1]);
      assert.equal(line.deliveredTo(to).length, 1);
    });
  });
});
