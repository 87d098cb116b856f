// What operators watch: /healthz, /readyz per dependency (503 when Temporal or PostgreSQL is down),
// /metrics counters by provider and outcome with the ack latency histogram, and a correlation id
// that travels from the request into the workflow's memo and search attributes.
import assert from 'node:assert/strict';
import type { Pool } from '../../src/db/pool';
import type { ReceiverHandle } from '../../src/receiver';
import { startDevServer } from '../../src/temporal/dev-server';
import { CorrelationId } from '../../workflows/search-attributes';
import {
  counterValue,
  metricsOf,
  post,
  receiverSuite,
  STD_SECRET,
  STD_SOURCE,
  sandboxRequest,
  standardRequest,
  startTestReceiver,
  unreachablePool,
} from '../support/receiver';
import { devServer } from '../support/servers';
import { testConfig, uniqueId } from '../support/system';

const readiness = async (receiver: ReceiverHandle) => {
  const response = await fetch(`${receiver.url}/readyz`);
  return { status: response.status, body: await response.json() };
};

describe('receiver: operations endpoints and correlation ids (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(120_000);
  const config = testConfig({ STANDARD_WEBHOOKS_SECRETS: `${STD_SOURCE}=${STD_SECRET}` });
  const suite = receiverSuite(config);

  it('answers /healthz and reports both dependencies ready', async () => {
    const health = await fetch(`${suite.receiver.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    assert.deepEqual(await readiness(suite.receiver), {
      status: 200,
      body: { status: 'ready', checks: { temporal: 'up', postgres: 'up', searchAttributes: 'up' } },
    });
  });

  describe('with a dependency down', () => {
    const stopped: (() => Promise<unknown>)[] = [];
    after(async () => {
      for (const stop of stopped) await stop();
    });

    it('reports Temporal down (its server stopped), answers webhooks 503 and counts them unavailable', async () => {
      const own = await startDevServer({ port: 0 });
      await own.stop();
      const alone = await startTestReceiver({ config, temporalAddress: own.address });
      stopped.push(() => alone.stop());
      assert.deepEqual(await readiness(alone), {
        status: 503,
        body: {
          status: 'unavailable',
          checks: { temporal: 'down', postgres: 'up', searchAttributes: 'down' },
        },
      });
      const response = await post(alone, sandboxRequest(config));
      assert.equal(response.status, 503);
      assert.ok(response.headers.get('retry-after'));
      const metrics = await metricsOf(alone);
      assert.equal(
        counterValue(metrics, 'replyflow_webhook_requests_total', {
          provider: 'sandbox',
          outcome: 'unavailable',
        }),
        1,
      );
    });

    it('reports PostgreSQL down', async () => {
      const pool: Pool = unreachablePool();
      stopped.push(() => pool.end());
      const alone = await startTestReceiver({
        config,
        temporalAddress: (await devServer()).address,
        pool,
      });
      stopped.push(() => alone.stop());
      assert.deepEqual(await readiness(alone), {
        status: 503,
        body: { status: 'unavailable', checks: { temporal: 'up', postgres: 'down', searchAttributes: 'up' } },
      });
    });
  });

  it('counts requests by provider and outcome, and observes ack latency', async () => {
    const before = await metricsOf(suite.receiver);
    const accepted = standardRequest();
    assert.equal((await post(suite.receiver, accepted)).status, 202);
    assert.equal((await post(suite.receiver, accepted)).status, 200);
    assert.equal(
      (await post(suite.receiver, standardRequest({ secret: config.SANDBOX_WEBHOOK_SECRET }))).status,
      401,
    );
    assert.equal((await post(suite.receiver, standardRequest({ body: '{"type": 1' }))).status, 400);
    assert.equal(
      (await post(suite.receiver, { ...standardRequest(), path: '/webhooks/nonesuch' })).status,
      404,
    );

    const response = await fetch(`${suite.receiver.url}/metrics`);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
    const after = await response.text();
    const moved = (provider: string, outcome: string, name = 'replyflow_webhook_requests_total') =>
      counterValue(after, name, { provider, outcome }) - counterValue(before, name, { provider, outcome });
    assert.deepEqual(
      {
        accepted: moved('std', 'accepted'),
        duplicate: moved('std', 'duplicate'),
        rejected_signature: moved('std', 'rejected_signature'),
        invalid: moved('std', 'invalid'),
        unknown: moved('unknown', 'invalid'),
      },
      { accepted: 1, duplicate: 1, rejected_signature: 1, invalid: 1, unknown: 1 },
    );
    assert.equal(moved('std', 'accepted', 'replyflow_webhook_ack_seconds_count'), 1);
    assert.match(
      after,
      /^replyflow_webhook_ack_seconds_bucket\{le="0\.1",provider="std",outcome="accepted"\} \d+$/m,
    );
    assert.match(after, /^# TYPE replyflow_webhook_ack_seconds histogram$/m);
  });

  it('carries the X-Request-Id into the workflow memo and the CorrelationId search attribute', async () => {
    const requestId = uniqueId('req-');
    const request = sandboxRequest(config);
    const response = await post(suite.receiver, request, { 'x-request-id': requestId });
    assert.equal(response.status, 202);
    assert.equal(response.headers.get('x-request-id'), requestId);
    const { workflowId } = (await response.json()) as { workflowId: string };
    const description = await suite.client.workflow.getHandle(workflowId).describe();
    assert.deepEqual(description.memo, { correlationId: requestId });
    assert.equal(description.typedSearchAttributes.get(CorrelationId), requestId);
  });

  for (const [name, given] of [
    ['missing', undefined],
    ['unsafe', 'two words; DROP'],
    ['too long', 'x'.repeat(101)],
  ] as const) {
    it(`generates a correlation id when X-Request-Id is ${name}`, async () => {
      const response = await post(
        suite.receiver,
        sandboxRequest(config),
        given === undefined ? {} : { 'x-request-id': given },
      );
      assert.equal(response.status, 202);
      const generated = response.headers.get('x-request-id') ?? '';
      assert.match(generated, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const { workflowId } = (await response.json()) as { workflowId: string };
      const description = await suite.client.workflow.getHandle(workflowId).describe();
      assert.deepEqual(description.memo, { correlationId: generated });
      assert.equal(description.typedSearchAttributes.get(CorrelationId), generated);
    });
  }
});
