// Traces (docs/runbook.md, "Traces"): a signed webhook into a real receiver, its workflow and its send
// activity on a real worker, the send's HTTP call to a fake target: one trace, each span the child of
// the one before, read from an in-memory exporter in this process. The log lines written inside it
// carry its id, and `replyflow show` prints it. The shared dev server and PostgreSQL.
import assert from 'node:assert/strict';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { Worker } from '@temporalio/worker';
import type { ReceiverHandle } from '../../src/receiver';
import { connectClient, dataConverter, type TemporalClient } from '../../src/temporal/client';
import type { Tracing } from '../../src/tracing';
import { tracingWith } from '../../src/tracing/sdk';
import { TRACE_HEADER as WORKFLOW_TRACE_HEADER } from '../../workflows/otel-interceptors';
import { cli } from '../cli/harness';
import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import { testOperator } from '../support/operators';
import { capturedLogger, post, sandboxRequest, startTestReceiver } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY, workflowBundle } from '../support/servers';
import { startTestWorker, testConfig } from '../support/system';

describe('traces (dev server, PostgreSQL, a receiver, a worker, a fake target, an in-memory exporter)', function () {
  this.timeout(60_000);
  const exporter = new InMemorySpanExporter();
  const logs = capturedLogger('info');
  const config = testConfig();
  let tracing: Tracing;
  let fake: FakeTarget;
  let receiver: ReceiverHandle;
  let worker: { stop(): Promise<void> };
  let temporal: TemporalClient;

  before(async () => {
    const [server] = await Promise.all([devServer(), database()]);
    tracing = tracingWith(new SimpleSpanProcessor(exporter), 'replyflow-test');
    fake = await new FakeTarget().start();
    const traced = { ...config, SANDBOX_API_URL: fake.url };
    receiver = await startTestReceiver({
      config: traced,
      temporalAddress: server.address,
      logger: logs.logger,
      tracing,
    });
    worker = await startTestWorker({ address: server.address, config: traced, logger: logs.logger, tracing });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
  });
  after(async () => {
    await temporal?.close();
    await worker?.stop();
    await receiver?.stop();
    await fake?.stop();
    // Unregisters the tracer, the context and the propagation: later suites run untraced.
    await tracing?.shutdown();
  });

  it('follows a webhook to its reply in one trace: request → start → workflow → activity → HTTP call, and the run replays', async () => {
    const request = sandboxRequest(config, { text: 'a question nobody may read in a span' });
    const answer = await post(receiver, request);
    assert.equal(answer.status, 202);
    const { workflowId } = (await answer.json()) as { workflowId: string };

    // The workflow's span ends with the run; the workflow's spans reach the exporter through its sink.
    const root = await eventually('the request span is exported', () =>
      exporter
        .getFinishedSpans()
        .find(
          (s) =>
            s.name === 'POST /webhooks/:provider' && s.attributes['replyflow.workflow_id'] === workflowId,
        ),
    );
    const { traceId } = root.spanContext();
    const inTrace = () => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const run = await eventually('the run ended and its span was exported', () =>
      inTrace().find((s) => s.name === 'RunWorkflow:handleEvent'),
    );
    const http = await eventually('the send reached the fake target', () =>
      inTrace().find((s) => s.attributes['server.port'] === Number(new URL(fake.url).port)),
    );
    assert.equal(fake.deliveredTo(request.conversationId).length, 1);

    const spans = inTrace();
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const parentOf = (span: ReadableSpan) => {
      const parent = span.parentSpanId && byId.get(span.parentSpanId);
      assert.ok(parent, `${span.name} has its parent in the trace`);
      return parent;
    };

    assert.equal(root.parentSpanId, undefined, 'the request starts the trace');
    assert.equal(root.attributes['http.response.status_code'], 202);
    assert.equal(root.attributes['replyflow.provider'], 'sandbox');
    const start = parentOf(run);
    assert.equal(start.name, 'StartWorkflow:handleEvent');
    assert.equal(parentOf(start), root);

    const runActivity = parentOf(http);
    assert.match(runActivity.name, /^RunActivity:/);
    assert.equal(runActivity.attributes.temporalWorkflowId, workflowId);
    const startActivity = parentOf(runActivity);
    assert.equal(startActivity.name, runActivity.name.replace('RunActivity', 'StartActivity'));
    assert.equal(parentOf(startActivity), run);

    assert.equal(http.name, 'POST');
    assert.deepEqual(
      { ...http.attributes },
      {
        'http.request.method': 'POST',
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(fake.url).port),
        'url.scheme': 'http',
        'http.response.status_code': 201,
      },
      'method, host and status: no URL path or query, no body',
    );

    const everything = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events]));
    assert.ok(!everything.includes('nobody may read'), 'no message text in any span');
    assert.ok(!everything.includes(config.SANDBOX_API_TOKEN!), 'no secret in any span');

    const traced = logs.lines().filter((line) => line.trace_id === traceId);
    assert.ok(
      traced.some((line) => line.msg === 'webhook answered' && line.workflowId === workflowId),
      `the receiver's line carries the trace id: ${logs.raw()}`,
    );

    assert.ok(
      traced.some((line) => line.msg === 'sent'),
      `the send activity's line carries the trace id: ${logs.raw()}`,
    );

    // The run's interceptors were chosen by its start's headers, which its history holds: a worker
    // that evicted it (or restarted) makes the same commands when it replays.
    const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
    await Worker.runReplayHistory(
      {
        workflowBundle: await workflowBundle(),
        dataConverter: dataConverter(TEST_ENCRYPTION_KEY),
        sinks: tracing.workerOptions.sinks,
      },
      history,
      workflowId,
    );

    const viewer = await testOperator(['view']);
    const shown = await cli(['show', workflowId], { as: viewer });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^trace id {2,}${traceId}$`, 'm'));
  });

  it("decides a run is traced by the package's own header name (the workflow side keeps a copy of it)", () => {
    assert.equal(WORKFLOW_TRACE_HEADER, TRACE_HEADER);
  });

  it('leaves a run untraced when its receiver has traces off: no trace context in its start, no trace id', async () => {
    const server = await devServer();
    const untraced = await startTestReceiver({
      config: { ...config, SANDBOX_API_URL: fake.url },
      temporalAddress: server.address,
    });
    try {
      const request = sandboxRequest(config);
      const answer = await post(untraced, request);
      assert.equal(answer.status, 202);
      const { workflowId } = (await answer.json()) as { workflowId: string };
      const handle = temporal.client.workflow.getHandle(workflowId);
      await handle.result();
      assert.equal(fake.deliveredTo(request.conversationId).length, 1);
      const started = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
      assert.deepEqual(Object.keys(started?.header?.fields ?? {}), []);
      assert.equal((await handle.describe()).memo?.traceId, undefined);
      const spans = exporter.getFinishedSpans();
      assert.ok(!spans.some((s) => s.attributes['replyflow.workflow_id'] === workflowId), 'no request span');
      assert.ok(
        !spans.some((s) => s.attributes.temporalWorkflowId === workflowId),
        'no activity span either, on this traced worker',
      );
    } finally {
      await untraced.stop();
    }
  });
});
