// The HTTP client spans of src/tracing/http-client-spans.ts: one per request made inside a span, by
// fetch and by node:http (the Slack SDK's axios), with method, host, port and status, never the path
// or the query; a failed request is a failed span; a request outside any span starts none.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Tracing } from '../../src/tracing';
import { tracingWith } from '../../src/tracing/sdk';

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .once('error', reject);
  });
}

describe('HTTP client spans (src/tracing/http-client-spans.ts)', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let server: http.Server;
  let origin: string;
  let closedPort: number;

  before(async () => {
    tracing = tracingWith(new SimpleSpanProcessor(exporter), 'test');
    server = http.createServer((req, res) => {
      res.statusCode = req.url?.startsWith('/missing') ? 404 : 200;
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await tracing.shutdown();
  });
  beforeEach(() => exporter.reset());

  /** Runs `fn` in a parent span; @returns the spans of its requests, children of that parent. */
  async function inParent(fn: () => Promise<unknown>): Promise<ReadableSpan[]> {
    const parentId = await tracing.tracer.startActiveSpan('parent', async (parent) => {
      await fn();
      parent.end();
      return parent.spanContext().spanId;
    });
    const spans = exporter.getFinishedSpans().filter((s) => s.name !== 'parent');
    for (const span of spans) assert.equal(span.parentSpanId, parentId, `${span.name} is the parent's child`);
    return spans;
  }

  it('names method, host, port and status of a fetch and of a node:http request, and nothing of the URL after the host', async () => {
    const spans = await inParent(async () => {
      await (await fetch(`${origin}/replies?reference=secret-ish`, { method: 'POST', body: '{}' })).text();
      assert.equal(await get(`${origin}/missing/item?q=1`), 404);
    });
    const port = Number(new URL(origin).port);
    assert.deepEqual(
      spans.map((s) => ({ name: s.name, attributes: { ...s.attributes }, failed: s.status.code === 2 })),
      [
        {
          name: 'POST',
          attributes: {
            'http.request.method': 'POST',
            'server.address': '127.0.0.1',
            'server.port': port,
            'url.scheme': 'http',
            'http.response.status_code': 200,
          },
          failed: false,
        },
        {
          name: 'GET',
          attributes: {
            'http.request.method': 'GET',
            'server.address': '127.0.0.1',
            'server.port': port,
            'url.scheme': 'http',
            'http.response.status_code': 404,
          },
          failed: true,
        },
      ],
    );
  });

  it('ends a request that failed to connect as a failed span with the error code only', async () => {
    const spans = await inParent(() => assert.rejects(get(`http://127.0.0.1:${closedPort}/x?token=t`)));
    assert.equal(spans.length, 1);
    assert.equal(spans[0]!.attributes['error.type'], 'ECONNREFUSED');
    assert.equal(spans[0]!.status.code, 2);
  });

  it('starts no span for a request made outside any span', async () => {
    await (await fetch(`${origin}/healthz`)).text();
    assert.equal(await get(`${origin}/healthz`), 200);
    assert.deepEqual(exporter.getFinishedSpans(), []);
  });
});
