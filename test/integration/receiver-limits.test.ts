// What a client may hold of the receiver, over real sockets: a slowloris client trickling its headers
// or its body, an idle keep-alive connection, and more connections than the cap. Each is closed within
// its configured bound (small values here), and a well-behaved sender is still answered.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { Config } from '../../src/config';
import { type ReceiverHandle, serverLimits } from '../../src/receiver';
import { eventually } from '../support/eventually';
import { startTestReceiver } from '../support/receiver';
import { devServer } from '../support/servers';
import { testConfig } from '../support/system';

/** Room for a loaded 2-core machine between the server's check and the client seeing the close. */
const SLACK_MS = 1000;

/** A raw client connection that records what the server sent and when it closed the connection. */
class RawClient {
  readonly socket: net.Socket;
  readonly opened = Date.now();
  received = '';
  readonly closed: Promise<number>;
  private trickle?: NodeJS.Timeout;

  constructor(receiver: ReceiverHandle) {
    this.socket = net.connect(receiver.port, '127.0.0.1');
    this.socket.on('data', (chunk: Buffer) => {
      this.received += chunk.toString('latin1');
    });
    this.socket.on('error', () => {});
    this.closed = new Promise((resolve) =>
      this.socket.once('close', () => {
        clearInterval(this.trickle);
        resolve(Date.now() - this.opened);
      }),
    );
  }

  connected(): Promise<void> {
    return new Promise((resolve) => this.socket.once('connect', () => resolve()));
  }

  /** Sends `head` now, then one byte of `drip` every `everyMs` for as long as the connection stays. */
  slowloris(head: string, drip: string, everyMs = 50): void {
    this.socket.write(head);
    this.trickle = setInterval(() => this.socket.write(drip), everyMs);
  }

  /** The time the server took to close it; fails if it is still open after `withinMs`. */
  async closedWithin(withinMs: number): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still open after ${withinMs} ms`)), withinMs);
    });
    try {
      return await Promise.race([this.closed, late]);
    } finally {
      clearTimeout(timer);
      this.socket.destroy();
    }
  }
}

const HEALTHZ = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n';

/**
 * A GET on a connection of its own that closes after the answer (`agent: false`), so that it holds no
 * idle connection afterwards (fetch would keep one open, which counts against the cap).
 */
function getOnce(receiver: ReceiverHandle, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${receiver.url}${path}`, { agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** The receiver's count of connections it closed at the cap (a label-less counter). */
async function droppedConnections(receiver: ReceiverHandle): Promise<number> {
  const { body } = await getOnce(receiver, '/metrics');
  return Number(/^replyflow_receiver_connections_dropped_total (\d+)$/m.exec(body)?.[1] ?? Number.NaN);
}

describe('receiver limits on what a client may hold (real sockets)', function () {
  this.timeout(60_000);

  describe('timeouts', () => {
    let config: Config;
    let receiver: ReceiverHandle;
    /** How much after its timeout the server may cut a client: its check interval, and slack. */
    let grace: number;
    before(async () => {
      config = testConfig({
        RECEIVER_HEADERS_TIMEOUT: '500ms',
        RECEIVER_REQUEST_TIMEOUT: '1500ms',
        RECEIVER_KEEP_ALIVE_TIMEOUT: '400ms',
      });
      receiver = await startTestReceiver({ config, temporalAddress: (await devServer()).address });
      grace = serverLimits(config).connectionsCheckingInterval! + SLACK_MS;
    });
    after(() => receiver?.stop());

    it('closes a connection whose headers trickle in, within RECEIVER_HEADERS_TIMEOUT', async () => {
      const client = new RawClient(receiver);
      await client.connected();
      client.slowloris('POST /webhooks/sandbox HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'x');
      const heldMs = await client.closedWithin(config.RECEIVER_HEADERS_TIMEOUT + grace);
      assert.ok(heldMs >= config.RECEIVER_HEADERS_TIMEOUT - 50, `closed by the timeout, after ${heldMs} ms`);
      assert.match(client.received, /^HTTP\/1\.1 408 /);
    });

    it('closes a connection whose body trickles in, within RECEIVER_REQUEST_TIMEOUT', async () => {
      const client = new RawClient(receiver);
      await client.connected();
      client.slowloris(
        'POST /webhooks/sandbox HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
        ' ',
      );
      const heldMs = await client.closedWithin(config.RECEIVER_REQUEST_TIMEOUT + grace);
      assert.ok(heldMs >= config.RECEIVER_REQUEST_TIMEOUT - 50, `closed by the timeout, after ${heldMs} ms`);
      assert.match(client.received, /^HTTP\/1\.1 408 /);
    });

    it('closes a connection that opens and sends nothing, within RECEIVER_HEADERS_TIMEOUT', async () => {
      const client = new RawClient(receiver);
      await client.connected();
      await client.closedWithin(config.RECEIVER_HEADERS_TIMEOUT + grace);
    });

    it('closes an idle keep-alive connection after its answer, within RECEIVER_KEEP_ALIVE_TIMEOUT', async () => {
      const client = new RawClient(receiver);
      await client.connected();
      client.socket.write(HEALTHZ);
      await eventually('the answer arrives', () => client.received.includes('\r\n\r\n'));
      const answeredAt = Date.now() - client.opened;
      assert.match(client.received, /^HTTP\/1\.1 200 /);
      const heldMs = await client.closedWithin(config.RECEIVER_KEEP_ALIVE_TIMEOUT + grace);
      assert.ok(heldMs - answeredAt < config.RECEIVER_KEEP_ALIVE_TIMEOUT + grace);
    });
  });

  describe('the connection cap', () => {
    let config: Config;
    let receiver: ReceiverHandle;
    before(async () => {
      // Idle connections stay long here, so that only the cap can close one.
      config = testConfig({ RECEIVER_KEEP_ALIVE_TIMEOUT: '30s', RECEIVER_MAX_CONNECTIONS: '4' });
      receiver = await startTestReceiver({ config, temporalAddress: (await devServer()).address });
    });
    after(() => receiver?.stop());

    it('closes connections beyond RECEIVER_MAX_CONNECTIONS as they arrive, and serves again below it', async () => {
      const droppedBefore = await droppedConnections(receiver);
      // Each holds a connection the server has surely accepted: it answered a request on it.
      const held = Array.from({ length: config.RECEIVER_MAX_CONNECTIONS }, () => new RawClient(receiver));
      for (const client of held) {
        await client.connected();
        client.socket.write(HEALTHZ);
      }
      await eventually('every held connection was answered', () =>
        held.every((client) => client.received.startsWith('HTTP/1.1 200 ')),
      );
      const extra = new RawClient(receiver);
      await extra.connected();
      extra.socket.write(HEALTHZ);
      await extra.closedWithin(SLACK_MS);
      assert.equal(extra.received, '', 'no answer beyond the cap');

      for (const client of held) client.socket.destroy();
      await Promise.all(held.map((client) => client.closed));
      const served = await eventually('a connection is served again', () => getOnce(receiver, '/healthz'));
      assert.equal(served.status, 200);
      assert.equal((await droppedConnections(receiver)) - droppedBefore, 1);
    });
  });
});
