// Nothing listens beyond this machine unless told to: HOST defaults to 127.0.0.1 for the receiver and
// the worker's metrics alike, what is reported as bound is what the socket is bound to, and only the
// image opens 0.0.0.0.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { launch } from '../../src/launcher';
import { freePort } from '../../src/ports';
import { createWorkerMetrics, serveWorkerMetrics } from '../../src/worker-metrics';
import { startTestReceiver } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { silentLogger, testConfig } from '../support/system';

describe('listening addresses (HOST)', function () {
  this.timeout(120_000);

  it('defaults to 127.0.0.1', () => {
    assert.equal(loadConfig({}).HOST, '127.0.0.1');
  });

  it('binds the receiver to 127.0.0.1 by default, and to every interface only when HOST=0.0.0.0', async () => {
    const address = (await devServer()).address;
    const local = await startTestReceiver({ config: testConfig(), temporalAddress: address });
    const open = await startTestReceiver({
      config: testConfig({ HOST: '0.0.0.0' }),
      temporalAddress: address,
    });
    try {
      assert.equal(local.listening, `127.0.0.1:${local.port}`);
      assert.equal(open.listening, `0.0.0.0:${open.port}`);
      // Reached from this machine on loopback either way.
      for (const receiver of [local, open])
        assert.equal((await fetch(`${receiver.url}/healthz`)).status, 200);
    } finally {
      await local.stop();
      await open.stop();
    }
  });

  it("binds the worker's metrics to HOST (127.0.0.1 by default)", async () => {
    const { pool } = await database();
    const server = await serveWorkerMetrics({
      port: await freePort(),
      host: testConfig().HOST,
      metrics: createWorkerMetrics(pool),
      logger: silentLogger,
    });
    try {
      assert.match(server.listening, /^127\.0\.0\.1:\d+$/);
      assert.equal((await fetch(server.url)).status, 200);
    } finally {
      await server.stop();
    }
  });

  it('reports the address `replyflow receiver` really listens on', async () => {
    const running = await launch(
      loadConfig({
        PORT: String(await freePort()),
        TEMPORAL_ADDRESS: (await devServer()).address,
        DATABASE_URL: (await database()).url,
        REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        LOG_LEVEL: 'silent',
      }),
      silentLogger,
      'receiver',
    );
    try {
      assert.equal(running.urls.receiverListening, new URL(running.urls.receiver).host);
      assert.match(running.urls.receiverListening ?? '', /^127\.0\.0\.1:\d+$/);
      assert.equal(running.urls.sandbox, undefined, 'no sandbox for replyflow receiver by default');
    } finally {
      await running.stop();
    }
  });

  it('opens every interface only in the image (the Dockerfile sets HOST=0.0.0.0)', () => {
    const dockerfile = readFileSync(path.resolve(__dirname, '..', '..', 'Dockerfile'), 'utf8');
    const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    assert.match(runtime, /^\s*HOST=0\.0\.0\.0\b/m);
  });
});
