// URL placeholders of an HTTP endpoint are filled from webhook data, so they may not steer the request:
// a value of `.` or `..` (a path step that encoding leaves alone) or an empty one (`//`) is refused,
// and a template that puts a placeholder in the scheme, host or port is refused, before anything is
// sent. A real HTTP server records what arrives.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StepPlan } from '../../src/model';
import { TargetError } from '../../src/targets/errors';
import { type HttpEndpoint, httpTarget } from '../../src/targets/http';

describe('HTTP target URL placeholders (real HTTP server)', () => {
  const received: string[] = [];
  let server: http.Server;
  let base = '';
  before(async () => {
    server = http.createServer((req, res) => {
      received.push(req.url ?? '');
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"x1"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    received.length = 0;
  });

  const endpoint = (url: string): HttpEndpoint => ({
    url,
    method: 'POST',
    headers: { authorization: 'Bearer endpoint-credential' },
    idempotency: { header: 'Idempotency-Key', format: 'quoted', honoured: true },
    idField: 'id',
    consistencyDelayMs: 0,
  });
  const send = (url: string, destination: Record<string, string>) =>
    httpTarget('orders', endpoint(url)).send({
      effectId: 'eff-1',
      step: { name: 'confirm', target: 'http:orders', destination, content: { kind: 'reply' } } as StepPlan,
      body: { text: 'confirmed' },
      signal: AbortSignal.timeout(5000),
    } as Parameters<ReturnType<typeof httpTarget>['send']>[0]);

  const refusedPermanently = (err: unknown) => err instanceof TargetError && err.errorClass === 'permanent';

  it('fills a placeholder with the value, encoded, in the path', async () => {
    await send(`${base}/api/orders/{orderId}/confirm`, { orderId: 'o/17?x' });
    assert.deepEqual(received, ['/api/orders/o%2F17%3Fx/confirm']);
  });

  for (const value of ['..', '.']) {
    it(`refuses "${value}", which would walk the path (/api/orders/${value}/confirm), and sends nothing`, async () => {
      await assert.rejects(
        send(`${base}/api/orders/{orderId}/confirm`, { orderId: value }),
        refusedPermanently,
      );
      assert.deepEqual(received, []);
    });
  }

  it('refuses an empty value, which would make an empty path step (/api/orders//confirm), and sends nothing', async () => {
    await assert.rejects(
      send(`${base}/api/orders/{orderId}/confirm`, { orderId: '' }),
      (err: unknown) => refusedPermanently(err) && /\{orderId\} is empty/.test((err as TargetError).message),
    );
    assert.deepEqual(received, []);
  });

  for (const template of [
    'http://{host}/api/confirm',
    '{scheme}://127.0.0.1/api',
    'http://127.0.0.1:{port}/api',
  ]) {
    it(`refuses a placeholder in the scheme, host or port (${template}) and sends nothing`, async () => {
      await assert.rejects(
        send(template, { host: base.slice(7), scheme: 'http', port: base.split(':')[2]! }),
        refusedPermanently,
      );
      assert.deepEqual(received, []);
    });
  }

  it('refuses a placeholder named like an Object member that the destination does not have', async () => {
    await assert.rejects(send(`${base}/api/{constructor}`, {}), refusedPermanently);
    assert.deepEqual(received, []);
  });
});
