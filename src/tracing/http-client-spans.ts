// A client span for each outbound HTTP request made inside a span (a target's send in its RunActivity
// span): method, host, port and status only. Built on Node's diagnostics channels for fetch (undici)
// and node:http (the Slack SDK's axios), so both are seen without patching modules at load time. The
// contrib instrumentations record the full URL, query included, which may carry a webhook's values.
import diagnostics from 'node:diagnostics_channel';
import * as otel from '@opentelemetry/api';

/** What an undici request and a node:http ClientRequest have in common, as their channels give them. */
interface UndiciRequest {
  method: string;
  origin: string;
}
interface NodeRequest {
  method: string;
  host: string;
  protocol: string;
  getHeader(name: string): unknown;
}
type Message = { request: object; response?: { statusCode?: number }; error?: unknown };

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** Subscribes to the channels; the function it returns unsubscribes. */
export function traceHttpClients(tracer: otel.Tracer): () => void {
  const spans = new WeakMap<object, otel.Span>();

  const start = (
    request: object,
    method: string,
    url: { hostname: string; port: string; protocol: string },
  ) => {
    // Only inside a trace: a request nothing traced asked for (a health probe) starts none.
    if (!otel.trace.getActiveSpan()) return;
    const port = Number(url.port) || DEFAULT_PORTS[url.protocol];
    spans.set(
      request,
      tracer.startSpan(method, {
        kind: otel.SpanKind.CLIENT,
        attributes: {
          'http.request.method': method,
          'server.address': url.hostname,
          ...(port ? { 'server.port': port } : {}),
          'url.scheme': url.protocol.replace(/:$/, ''),
        },
      }),
    );
  };
  const answered = ({ request, response }: Message) => {
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    const status = response?.statusCode ?? 0;
    span.setAttribute('http.response.status_code', status);
    if (status >= 400) span.setStatus({ code: otel.SpanStatusCode.ERROR });
    span.end();
  };
  const failed = ({ request, error }: Message) => {
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    // The class or code only: a transport error's message may name the URL.
    const type = (error as NodeJS.ErrnoException)?.code ?? (error as Error)?.name ?? 'Error';
    span.setAttribute('error.type', type);
    span.setStatus({ code: otel.SpanStatusCode.ERROR, message: type });
    span.end();
  };

  const handlers: [string, (message: unknown) => void][] = [
    [
      'undici:request:create',
      (message) => {
        const request = (message as { request: UndiciRequest }).request;
        if (URL.canParse(request.origin)) start(request, request.method, new URL(request.origin));
      },
    ],
    ['undici:request:headers', (message) => answered(message as Message)],
    ['undici:request:error', (message) => failed(message as Message)],
    [
      'http.client.request.start',
      (message) => {
        const request = (message as { request: NodeRequest }).request;
        // The Host header carries the port; `host` is the name alone.
        const header = request.getHeader('host');
        const authority = typeof header === 'string' ? header : request.host;
        const url = URL.canParse(`${request.protocol}//${authority}`)
          ? new URL(`${request.protocol}//${authority}`)
          : { hostname: request.host, port: '', protocol: request.protocol };
        start(request, request.method, url);
      },
    ],
    ['http.client.response.finish', (message) => answered(message as Message)],
    ['http.client.request.error', (message) => failed(message as Message)],
  ];
  for (const [name, handler] of handlers) diagnostics.subscribe(name, handler);
  return () => {
    for (const [name, handler] of handlers) diagnostics.unsubscribe(name, handler);
  };
}
