// Who may use the sandbox: its target API only the workers (the API token), its page and the page's
// API only this machine unless SANDBOX_ALLOW_REMOTE, and only where it is switched on. The page's
// message ids cannot be guessed ahead. Real receiver, PostgreSQL and HTTP.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { ReceiverHandle } from '../../src/receiver';
import { fromLoopback, pageMessageId } from '../../src/sandbox/api';
import { startTestReceiver } from '../support/receiver';
import { database, devServer } from '../support/servers';
import { TEST_SANDBOX, testConfig, uniqueId } from '../support/system';

/** The status of a request with the given Host header (fetch does not let a caller set Host). */
function statusFor(receiver: ReceiverHandle, path: string, init: RequestInit, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${receiver.url}${path}`,
      { method: init.method ?? 'GET', headers: { ...(init.headers as Record<string, string>), host } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.once('error', reject);
    request.end(init.body as string | undefined);
  });
}

describe('sandbox access (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(120_000);
  const receivers: ReceiverHandle[] = [];
  const start = async (env: Record<string, string> = {}) => {
    const receiver = await startTestReceiver({
      config: testConfig(env),
      temporalAddress: (await devServer()).address,
    });
    receivers.push(receiver);
    return receiver;
  };
  after(async () => {
    for (const r of receivers) await r.stop();
  });
  const botMessages = async (conversationId: string) =>
    Number(
      (
        await (
          await database()
        ).pool.query(
          `SELECT count(*) AS n FROM sandbox_messages WHERE conversation_id = $1 AND author = 'bot'`,
          [conversationId],
        )
      ).rows[0].n,
    );

  describe('the target API serves the workers only', () => {
    const reply = (conversationId: string) =>
      JSON.stringify({ conversationId, text: 'a bot reply', reference: uniqueId('ref-'), mode: 'sandbox' });

    for (const [name, authorization] of [
      ['no token', undefined],
      ['another token', 'Bearer not-the-sandbox-token-at-all'],
      ['the token without Bearer', TEST_SANDBOX.apiToken],
    ] as const) {
      it(`refuses a reply with ${name} (401) and posts nothing into the conversation`, async () => {
        const receiver = await start();
        const conversationId = uniqueId('c');
        const response = await fetch(`${receiver.url}/sandbox/api/replies`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
          body: reply(conversationId),
        });
        assert.equal(response.status, 401);
        assert.equal(await botMessages(conversationId), 0);
        const lookup = await fetch(`${receiver.url}/sandbox/api/replies?reference=x`, {
          headers: authorization ? { authorization } : {},
        });
        assert.equal(lookup.status, 401);
      });
    }

    it('takes a reply with the token', async () => {
      const receiver = await start();
      const conversationId = uniqueId('c');
      const response = await fetch(`${receiver.url}/sandbox/api/replies`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_SANDBOX.apiToken}` },
        body: reply(conversationId),
      });
      assert.equal(response.status, 201);
      assert.equal(await botMessages(conversationId), 1);
    });
  });

  describe('the page serves this machine only, unless SANDBOX_ALLOW_REMOTE', () => {
    const pageRequests = (conversationId: string): [string, RequestInit][] => [
      ['/sandbox', {}],
      [`/sandbox/api/conversations/${conversationId}/messages`, {}],
      [
        '/sandbox/messages',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ conversationId, text: 'hi' }),
        },
      ],
      [
        '/sandbox/api/faults',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ conversationId, fault: 'error-500' }),
        },
      ],
    ];

    it('answers 404 to a request for another host name (what a page rebinding its name to us sends)', async () => {
      const receiver = await start();
      const conversationId = uniqueId('c');
      for (const [path, init] of pageRequests(conversationId))
        assert.equal(await statusFor(receiver, path, init, 'sandbox.example.com'), 404, path);
      for (const [path, init] of pageRequests(uniqueId('c')).slice(0, 2))
        assert.equal(await statusFor(receiver, path, init, receiver.url.replace('http://', '')), 200, path);
      const { rowCount } = await (await database()).pool.query(
        'SELECT 1 FROM sandbox_messages WHERE conversation_id = $1',
        [conversationId],
      );
      assert.equal(rowCount, 0, 'nothing was posted');
    });

    it('counts only loopback peers as this machine', () => {
      const request = (remoteAddress: string, host = '127.0.0.1:3000') =>
        ({ socket: { remoteAddress }, headers: { host } }) as unknown as Parameters<typeof fromLoopback>[0];
      assert.equal(fromLoopback(request('127.0.0.1')), true);
      assert.equal(fromLoopback(request('::1', '[::1]:3000')), true);
      assert.equal(fromLoopback(request('::ffff:127.0.0.1', 'localhost:3000')), true);
      assert.equal(fromLoopback(request('203.0.113.7')), false);
      assert.equal(fromLoopback(request('::ffff:192.0.2.1')), false);
    });

    it('serves the page to any host with SANDBOX_ALLOW_REMOTE=true', async () => {
      const receiver = await start({ SANDBOX_ALLOW_REMOTE: 'true' });
      assert.equal(await statusFor(receiver, '/sandbox', {}, 'sandbox.example.com'), 200);
    });
  });

  it("gives the page's messages ids that cannot be guessed from the previous one", async () => {
    const receiver = await start();
    const conversationId = uniqueId('c');
    const send = async () => {
      const response = await fetch(`${receiver.url}/sandbox/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ conversationId, text: 'what are your opening hours?' }),
      });
      assert.equal(response.status, 202);
      return ((await response.json()) as { messageId: string }).messageId;
    };
    const [first, second] = [await send(), await send()];
    const row = (id: string) => /^m(\d+)-[\w-]{22}$/.exec(id)?.[1];
    assert.ok(row(first) && row(second), `${first}, ${second}`);
    assert.notEqual(second, `m${Number(row(first)) + 1}`);
    // Derivable with the secret only.
    assert.equal(second, pageMessageId(TEST_SANDBOX.webhookSecret, conversationId, row(second)!));
    assert.notEqual(
      second,
      pageMessageId('whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldA==', conversationId, row(second)!),
    );
  });

  it('does not exist for a receiver whose sandbox is not switched on (replyflow receiver by default)', async () => {
    const receiver = await start({ SANDBOX_ENABLED: 'false' });
    for (const path of ['/sandbox', '/webhooks/sandbox', '/sandbox/api/replies'])
      assert.equal(
        (await fetch(`${receiver.url}${path}`, { method: path === '/sandbox' ? 'GET' : 'POST' })).status,
        404,
        path,
      );
  });
});
