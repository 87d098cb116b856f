// What a workflow run cost Temporal, read from its event history: the server transactions (workflow
// tasks, activity tasks and their retries, signals, timers, starts, updates), the history events, the
// search-attribute upserts, and the Temporal Cloud Actions by Temporal's published counting rules
// (https://docs.temporal.io/cloud/actions, docs/benchmarks.md says which rule counts what). Used by
// the cost budget test on recorded histories and by `npm run bench:system` on live ones.
import type { temporal } from '@temporalio/proto';

export interface HistoryCost {
  historyEvents: number;
  workflowTasks: number;
  /** Activity task attempts: each retry is another task. */
  activityTasks: number;
  /** Local activities: markers in the history, run by the worker inside a workflow task. */
  localActivities: number;
  /** Signals this run sent to other workflows. */
  signalsSent: number;
  /** Signals this run received (from a client or another workflow). */
  signalsReceived: number;
  timers: number;
  updates: number;
  /** Workflow starts (this run). */
  starts: number;
  upserts: number;
  /** Patch markers (with the SDK's TemporalChangeVersion upsert each). */
  patches: number;
  cloudActions: number;
}

export const NO_COST: HistoryCost = {
  historyEvents: 0,
  workflowTasks: 0,
  activityTasks: 0,
  localActivities: 0,
  signalsSent: 0,
  signalsReceived: 0,
  timers: 0,
  updates: 0,
  starts: 0,
  upserts: 0,
  patches: 0,
  cloudActions: 0,
};

const EventType = {
  started: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
  taskScheduled: 'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
  taskCompleted: 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
  activityStarted: 'EVENT_TYPE_ACTIVITY_TASK_STARTED',
  marker: 'EVENT_TYPE_MARKER_RECORDED',
  signalSent: 'EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
  signalReceived: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
  timer: 'EVENT_TYPE_TIMER_STARTED',
  update: 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
  upsert: 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
} as const;

/** The event type's name, whether the history came from JSON (a name) or from the API (a number). */
function typeName(event: temporal.api.history.v1.IHistoryEvent, names: Record<number, string>): string {
  const type = event.eventType as unknown;
  return typeof type === 'number' ? (names[type] ?? String(type)) : String(type);
}

/**
 * The cost of one run. `eventTypeNames` maps the API's numeric event types to names
 * (`temporal.api.enums.v1.EventType`), for histories fetched rather than read from JSON.
 */
export function historyCost(
  history: temporal.api.history.v1.IHistory,
  eventTypeNames: Record<number, string> = {},
): HistoryCost {
  const cost = { ...NO_COST };
  const events = history.events ?? [];
  // Local activities bill once per workflow task that ran any (the markers follow its completion).
  const tasksWithLocalActivities = new Set<number>();
  let lastTaskCompleted = 0;
  cost.historyEvents = events.length;
  for (const event of events) {
    switch (typeName(event, eventTypeNames)) {
      case EventType.started:
        cost.starts += 1;
        break;
      case EventType.taskScheduled:
        cost.workflowTasks += 1;
        break;
      case EventType.taskCompleted:
        lastTaskCompleted = Number(event.eventId);
        break;
      case EventType.activityStarted:
        cost.activityTasks += event.activityTaskStartedEventAttributes?.attempt ?? 1;
        break;
      case EventType.marker: {
        const name = event.markerRecordedEventAttributes?.markerName;
        if (name === 'core_patch') cost.patches += 1;
        else {
          cost.localActivities += 1;
          tasksWithLocalActivities.add(lastTaskCompleted);
        }
        break;
      }
      case EventType.signalSent:
        cost.signalsSent += 1;
        break;
      case EventType.signalReceived:
        cost.signalsReceived += 1;
        break;
      case EventType.timer:
        cost.timers += 1;
        break;
      case EventType.update:
        cost.updates += 1;
        break;
      case EventType.upsert:
        cost.upserts += 1;
        break;
    }
  }
  // Signals from other workflows are billed to their sender; from clients, here.
  const clientSignals = events.filter(
    (e) =>
      typeName(e, eventTypeNames) === EventType.signalReceived &&
      !e.workflowExecutionSignaledEventAttributes?.externalWorkflowExecution?.workflowId,
  ).length;
  cost.cloudActions =
    cost.starts +
    cost.activityTasks +
    tasksWithLocalActivities.size +
    cost.signalsSent +
    clientSignals +
    cost.timers +
    cost.updates +
    cost.upserts +
    cost.patches;
  return cost;
}

export function addCosts(a: HistoryCost, b: HistoryCost): HistoryCost {
  return Object.fromEntries(
    Object.keys(a).map((k) => [k, a[k as keyof HistoryCost] + b[k as keyof HistoryCost]]),
  ) as unknown as HistoryCost;
}

/** Server transactions: what the engine persists and dispatches, each a round trip through it. */
export function transactions(cost: HistoryCost): number {
  return (
    cost.starts + cost.workflowTasks + cost.activityTasks + cost.signalsSent + cost.timers + cost.updates
  );
}
