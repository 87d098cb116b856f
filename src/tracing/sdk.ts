// The OpenTelemetry 1.x SDK behind src/tracing/index.ts, loaded only when traces are on: a tracer
// provider with the exporter OTEL_* name, W3C trace-context propagation (the Temporal interceptors
// carry the context in workflow and activity headers) and an AsyncLocalStorage context, so that a
// target's HTTP call finds its activity's span.
import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import type { TracesExport } from '../config';
import { traceHttpClients } from './http-client-spans';
import type { Tracing } from './index';

/** The name our spans' instrumentation scope carries (the Temporal interceptors name their own). */
const SCOPE = 'replyflow';

export function tracingFor(settings: TracesExport): Tracing {
  const exporter =
    settings.exporter === 'console'
      ? new ConsoleSpanExporter()
      : new OTLPTraceExporter({ url: settings.url, headers: settings.headers });
  return tracingWith(new BatchSpanProcessor(exporter), settings.serviceName);
}

/**
 * Registers a tracer provider that hands every span to `spanProcessor` (tests pass one around an
 * in-memory exporter) and makes what the receiver and the worker need from it.
 */
export function tracingWith(spanProcessor: SpanProcessor, serviceName: string): Tracing {
  const resource = new Resource({ 'service.name': serviceName });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register({
    contextManager: new AsyncLocalStorageContextManager(),
    propagator: new W3CTraceContextPropagator(),
  });
  const tracer = provider.getTracer(SCOPE);
  const untraceHttp = traceHttpClients(tracer);
  return {
    tracer,
    clientInterceptors: [new OpenTelemetryWorkflowClientInterceptor()],
    workerOptions: {
      interceptors: {
        activity: [
          (ctx) => {
            const traced = new OpenTelemetryActivityInboundInterceptor(ctx);
            return {
              // Only for a traced run (its workflow passed the context on): an untraced one's
              // activities would each start a trace of their own.
              inbound: {
                execute: (input, next) =>
                  TRACE_HEADER in input.headers ? traced.execute(input, next) : next(input),
              },
              outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
            };
          },
        ],
      },
      sinks: { exporter: makeWorkflowExporter(spanProcessor, resource) },
    },
    async shutdown() {
      untraceHttp();
      await provider.shutdown();
      otel.trace.disable();
      otel.context.disable();
      otel.propagation.disable();
    },
  };
}
