// The thin path end to end on the real dev server and PostgreSQL: a signed sandbox webhook over HTTP
// becomes a workflow, the worker replies through the sandbox target (the receiver's own API), and the
// effect is recorded under its business key.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { signStandardWebhook } from '../../src/providers/standard-webhooks';
import { type ReceiverHandle, startReceiver } from '../../src/receiver';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { silentLogger, TEST_SANDBOX, testConfig, uniqueId, withWorker } from '../support/system';
import { effectRows } from '../support/workflows';

describe('thin path: sandbox webhook → workflow → sandbox reply (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(120_000);
  let receiver: ReceiverHandle;
  let temporal: TemporalClient;
  let client: Client;
  const config = testConfig();

  before(async () => {
    const [server, { pool }] = await Promise.all([devServer(), database()]);
    receiver = await startReceiver({
      config,
      pool,
      temporalAddress: server.address,
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      port: 0,
    });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    client = temporal.client;
  });
  after(async () => {
    await receiver?.stop();
    await temporal?.close();
  });

  const post = (eventId: string, body: object) => {
    const raw = JSON.stringify(body);
    return fetch(`${receiver.url}/webhooks/sandbox`, {
      method: 'POST',
      headers: signStandardWebhook(TEST_SANDBOX.webhookSecret, eventId, raw),
      body: raw,
    });
  };

  const conversation = async (id: string) =>
    (await (await fetch(`${receiver.url}/sandbox/api/conversations/${id}/messages`)).json()) as {
      messages: { author: string; text: string }[];
    };

  it('acknowledges after the workflow started, replies once, and answers a redelivery as duplicate', async () => {
    const conversationId = uniqueId('c');
    const eventId = uniqueId('evt_');
    const message = {
      type: 'message',
      conversationId,
      messageId: 'm1',
      text: 'what are your opening hours?',
      sentAt: new Date().toISOString(),
    };
    const server = await devServer();
    const result = await withWorker(
      { address: server.address, config: { ...config, SANDBOX_API_URL: `${receiver.url}/sandbox/api` } },
      async () => {
        const first = await post(eventId, message);
        assert.equal(first.status, 202);
        const accepted = (await first.json()) as { workflowId: string };
        assert.deepEqual(accepted, { status: 'accepted', workflowId: `webhook:sandbox:${eventId}` });
        const again = await post(eventId, message);
        assert.equal(again.status, 200);
        assert.deepEqual(await again.json(), {
          status: 'duplicate',
          workflowId: `webhook:sandbox:${eventId}`,
        });
        return client.workflow.getHandle(accepted.workflowId).result();
      },
    );
    assert.equal(result.state, 'succeeded');
    const [effect] = await effectRows(`chat:sandbox:${conversationId}:m1:answer`);
    assert.equal(effect.status, 'succeeded');
    const page = await conversation(conversationId);
    assert.deepEqual(
      page.messages.map((m: { author: string }) => m.author),
      ['bot'],
      'the webhook was sent directly, so only the bot reply is stored',
    );
    assert.match(page.messages[0]!.text, /open 9:00-18:00/);
  });

  it('rejects a bad signature with 401 and starts nothing', async () => {
    const eventId = uniqueId('evt_');
    const raw = JSON.stringify({
      type: 'message',
      conversationId: 'c1',
      messageId: 'm1',
      text: 'hi',
      sentAt: new Date().toISOString(),
    });
    const headers = signStandardWebhook(TEST_SANDBOX.webhookSecret, eventId, raw);
    const response = await fetch(`${receiver.url}/webhooks/sandbox`, {
      method: 'POST',
      headers,
      body: `${raw} `,
    });
    assert.equal(response.status, 401);
    await assert.rejects(client.workflow.getHandle(`webhook:sandbox:${eventId}`).describe(), /not found/i);
  });

  it('serves the sandbox page, whose message gets its reply', async () => {
    const conversationId = uniqueId('c');
    const server = await devServer();
    const page = await fetch(`${receiver.url}/sandbox`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /replyflow sandbox/);
    await withWorker(
      { address: server.address, config: { ...config, SANDBOX_API_URL: `${receiver.url}/sandbox/api` } },
      async () => {
        const sent = await fetch(`${receiver.url}/sandbox/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ conversationId, text: 'refund please' }),
        });
        assert.equal(sent.status, 202);
        const { receiver: ack } = (await sent.json()) as { receiver: { workflowId: string } };
        await client.workflow.getHandle(ack.workflowId).result();
      },
    );
    const { messages } = await conversation(conversationId);
    assert.deepEqual(
      messages.map((m: { author: string; text: string }) => [m.author, m.text]),
      [
        ['user', 'refund please'],
        ['bot', 'Refunds are processed within 5 business days of approval.'],
      ],
    );
  });
});
