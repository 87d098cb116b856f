// Traces (docs/runbook.md, "Traces"): one OpenTelemetry trace from a webhook's request through its
// workflow and activities to the target's HTTP call. Off unless OTEL_* turn it on (src/config.ts); off,
// nothing here loads the SDK, and what the receiver, worker and logger ask of this module is a no-op.
import * as otel from '@opentelemetry/api';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import type { TracesExport } from '../config';

/** A process's traces while they are on: what the receiver and the worker add to their Temporal parts. */
export interface Tracing {
  tracer: otel.Tracer;
  /** For the receiver's client: a StartWorkflow span, and the trace context in the start's headers. */
  clientInterceptors: WorkflowClientInterceptor[];
  /** For a worker: RunActivity spans, and the sink that exports the workflows' spans. */
  workerOptions: Pick<WorkerOptions, 'interceptors' | 'sinks'>;
  /** Exports what is still buffered and unregisters the tracer, the context and the propagation. */
  shutdown(): Promise<void>;
}

/** Registers tracing for this process as `settings` say; undefined (and nothing loaded) when traces are off. */
export function startTracing(settings: TracesExport | undefined): Tracing | undefined {
  if (!settings) return undefined;
  // Required here, not imported above: the SDK takes ~0.2 s to load, which a process with traces off
  // (and every CLI command) should not pay.
  const { tracingFor } = require('./sdk') as typeof import('./sdk');
  return tracingFor(settings);
}

/** The trace and span of the active span, for a log line written inside one; `{}` outside (and with traces off). */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const context = otel.trace.getActiveSpan()?.spanContext();
  if (!context || !otel.isSpanContextValid(context)) return {};
  return { trace_id: context.traceId, span_id: context.spanId };
}

/** The active trace's id, which `replyflow show` prints beside the work it started. */
export function activeTraceId(): string | undefined {
  return traceFields().trace_id;
}

/**
 * Runs `handle` in a server span `name` when traces are on (a `tracer`), so that what it starts (the
 * workflow) is its child; `handle` adds what the answer was. A throw marks the span failed, with the
 * error's class only: a bug's message may quote the request.
 */
export function inServerSpan<T>(
  tracer: otel.Tracer | undefined,
  name: string,
  attributes: otel.Attributes,
  handle: (span: otel.Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracer) return handle(undefined);
  return tracer.startActiveSpan(name, { kind: otel.SpanKind.SERVER, attributes }, async (span) => {
    try {
      return await handle(span);
    } catch (err) {
      span.setStatus({ code: otel.SpanStatusCode.ERROR, message: (err as Error)?.name });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Adds identifiers (never message text or secrets) to the active span; nothing with traces off. */
export function setSpanAttributes(attributes: otel.Attributes): void {
  otel.trace.getActiveSpan()?.setAttributes(attributes);
}
