// mTLS to Temporal, for real: a TLS terminator that demands a client certificate from our own test CA
// stands in front of the dev server (as a proxy or Temporal Cloud does), and the receiver, the worker
// and the CLI's client all reach it through connectionSecurity() with TEMPORAL_TLS_* settings alone.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Config } from '../../src/config';
import { signStandardWebhook } from '../../src/providers/standard-webhooks';
import { startReceiver } from '../../src/receiver';
import { connectClient, connectionSecurity } from '../../src/temporal/client';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { silentLogger, TEST_SANDBOX, testConfig, uniqueId, withWorker } from '../support/system';
import { effectRows } from '../support/workflows';

const SERVER_NAME = 'temporal.test';
const CLIENT_NAME = 'replyflow-worker';

/** A throwaway CA, a server certificate for SERVER_NAME and a client certificate, made with openssl. */
function makeCertificates(dir: string) {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=replyflow test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  const issue = (name: string, usage: string, san: string) => {
    openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    writeFileSync(
      path.join(dir, `${name}.ext`),
      `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=${usage}\nsubjectAltName=${san}\n`,
    );
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      `${name}.pem`,
      '-extfile',
      `${name}.ext`,
    );
  };
  issue('server', 'serverAuth', `DNS:${SERVER_NAME}`);
  issue(CLIENT_NAME, 'clientAuth', `DNS:${CLIENT_NAME}`);
  const file = (name: string) => path.join(dir, name);
  return {
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file(`${CLIENT_NAME}.pem`),
    clientKey: file(`${CLIENT_NAME}.key`),
  };
}

describe('Temporal over mutual TLS (receiver, worker and client through a TLS terminator)', function () {
  this.timeout(120_000);
  let terminator: tls.Server;
  let config: Config;
  const clientNames: string[] = [];
  let refused = 0;

  before(async () => {
    const server = await devServer();
    const certs = makeCertificates(mkdtempSync(path.join(os.tmpdir(), 'replyflow-mtls-')));
    terminator = tls.createServer(
      {
        key: readFileSync(certs.serverKey),
        cert: readFileSync(certs.serverCert),
        ca: readFileSync(certs.ca),
        requestCert: true,
        rejectUnauthorized: true,
        ALPNProtocols: ['h2'],
      },
      (socket) => {
        clientNames.push(String(socket.getPeerCertificate().subject?.CN));
        const upstream = net.connect(server.port, '127.0.0.1');
        socket.pipe(upstream).pipe(socket);
        socket.on('error', () => upstream.destroy());
        upstream.on('error', () => socket.destroy());
      },
    );
    terminator.on('tlsClientError', () => {
      refused += 1;
    });
    await new Promise<void>((resolve) => terminator.listen(0, '127.0.0.1', resolve));
    const { port } = terminator.address() as net.AddressInfo;
    config = testConfig({
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
    });
  });

  after(async () => {
    terminator?.close();
  });

  it('takes a webhook through a TLS receiver and answers it through a TLS worker', async () => {
    const { pool } = await database();
    const address = config.TEMPORAL_ADDRESS!;
    const receiver = await startReceiver({
      config,
      pool,
      temporalAddress: address,
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      port: 0,
    });
    const temporal = await connectClient(address, 'default', TEST_ENCRYPTION_KEY, connectionSecurity(config));
    try {
      const conversationId = uniqueId('c');
      const eventId = uniqueId('evt_');
      const body = JSON.stringify({
        type: 'message',
        conversationId,
        messageId: 'm1',
        text: 'what are your opening hours?',
        sentAt: new Date().toISOString(),
      });
      const result = await withWorker(
        { address, config: { ...config, SANDBOX_API_URL: `${receiver.url}/sandbox/api` } },
        async () => {
          const answer = await fetch(`${receiver.url}/webhooks/sandbox`, {
            method: 'POST',
            headers: signStandardWebhook(TEST_SANDBOX.webhookSecret, eventId, body),
            body,
          });
          assert.equal(answer.status, 202);
          return temporal.client.workflow.getHandle(`webhook:sandbox:${eventId}`).result();
        },
      );
      assert.equal(result.state, 'succeeded');
      const [effect] = await effectRows(`chat:sandbox:${conversationId}:m1:answer`);
      assert.equal(effect.status, 'succeeded');
      assert.ok(clientNames.length >= 3, 'receiver, worker and client each connected through the terminator');
      assert.ok(clientNames.every((name) => name === CLIENT_NAME));
    } finally {
      await receiver.stop();
      await temporal.close();
    }
  });

  it('is refused without the client certificate', async () => {
    const { tls: settings } = connectionSecurity(config);
    assert.ok(settings);
    const before = refused;
    await assert.rejects(
      connectClient(config.TEMPORAL_ADDRESS!, 'default', TEST_ENCRYPTION_KEY, {
        tls: { ...settings, clientCertPair: undefined },
      }),
    );
    assert.ok(refused > before, 'the terminator refused the handshake');
  });
});
