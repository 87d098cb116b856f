// The workflow side of tracing (docs/runbook.md, "Traces"): a run whose start carried a trace context
// gets @temporalio/interceptors-opentelemetry's interceptors, a RunWorkflow span and a StartActivity
// span around each activity, as children of the receiver's. A run started without one (traces off,
// the default, and every run recorded before) gets none: no spans, no sink calls, the same commands.
//
// The package is required only by a traced run. A module a run loads is executed for that run alone
// (the SDK's reusable context keeps one module cache per run; ours are preloaded into the shared one,
// src/temporal/workflow-bundle.ts), and OpenTelemetry's modules are half of the bundle: loaded by every
// run, they cost 289 KiB of heap per cached workflow, against 65 KiB without them (docs/benchmarks.md,
// "What a cached workflow costs").
import type {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type {
  ActivityInput,
  ContinueAsNewInput,
  LocalActivityInput,
  Next,
  SignalInput,
  SignalWorkflowInput,
  UpdateInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The package's TRACE_HEADER (its instrumentation module would load @opentelemetry/api); a test keeps them equal. */
export const TRACE_HEADER = '_tracer-data';

/** Per run: the package's interceptors, made on the run's first activation only when its start was traced. */
class RunTracing {
  inbound?: OpenTelemetryInboundInterceptor;
  outbound?: OpenTelemetryOutboundInterceptor;
  internals?: OpenTelemetryInternalsInterceptor;

  /** The run's start headers are in its history, so a replay decides the same way. */
  decide(headers: WorkflowExecuteInput['headers']): void {
    if (!(TRACE_HEADER in headers)) return;
    // A require webpack bundles, run only here (an import would run it for every run).
    const otel: typeof import('@temporalio/interceptors-opentelemetry/lib/workflow') = require('@temporalio/interceptors-opentelemetry/lib/workflow');
    this.inbound = new otel.OpenTelemetryInboundInterceptor();
    this.outbound = new otel.OpenTelemetryOutboundInterceptor();
    this.internals = new otel.OpenTelemetryInternalsInterceptor();
  }
}

class TracedInbound implements WorkflowInboundCallsInterceptor {
  constructor(private readonly run: RunTracing) {}

  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
    this.run.decide(input.headers);
    return this.run.inbound ? this.run.inbound.execute(input, next) : next(input);
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) {
    return this.run.inbound ? this.run.inbound.handleSignal(input, next) : next(input);
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) {
    return this.run.inbound ? this.run.inbound.handleUpdate(input, next) : next(input);
  }
}

class TracedOutbound implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly run: RunTracing) {}

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return this.run.outbound ? this.run.outbound.scheduleActivity(input, next) : next(input);
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ) {
    return this.run.outbound ? this.run.outbound.scheduleLocalActivity(input, next) : next(input);
  }

  /** A traced run's next run (handleEvent hands on, the turns workflow rolls over) stays in the trace. */
  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) {
    return this.run.outbound ? this.run.outbound.continueAsNew(input, next) : next(input);
  }

  signalWorkflow(input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) {
    return this.run.outbound ? this.run.outbound.signalWorkflow(input, next) : next(input);
  }
}

export const interceptors = (): WorkflowInterceptors => {
  const run = new RunTracing();
  return {
    inbound: [new TracedInbound(run)],
    outbound: [new TracedOutbound(run)],
    internals: [
      {
        dispose(input, next) {
          return run.internals ? run.internals.dispose(input, next) : next(input);
        },
      },
    ],
  };
};
