// Where a reply's wait went, read from its event workflow's history: bench:fairness and bench:tenants
// print it for each first reply over the bound.
import { tsToMs } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { System } from './chaos/system';

/**
 * Where a reply's wait went, from its event workflow's history up to the reply (the server's clock;
 * one machine): from the webhook to the workflow's start, workflow tasks waiting in Temporal's queue
 * (scheduled → started; 0 for an eager first task) and running on the worker (started → completed:
 * the send, a local activity, runs inside one) or lost (started, then timed out or failed), timers (the gather window), activity tasks waiting and
 * running; `other` is the rest (the target's receipt after the task's send, clocks).
 */
export interface Phases {
  toStart: number;
  taskQueue: number;
  taskRun: number;
  /** Tasks that started and then timed out or failed: the worker took them and did not complete them. */
  taskLost: number;
  timers: number;
  activityQueue: number;
  activityRun: number;
  other: number;
}

export const noPhases = (): Phases => ({
  toStart: 0,
  taskQueue: 0,
  taskRun: 0,
  taskLost: 0,
  timers: 0,
  activityQueue: 0,
  activityRun: 0,
  other: 0,
});

const EventType = temporal.api.enums.v1.EventType;

export async function phasesOf(
  system: System,
  workflowId: string,
  wait: { sent: number; ms: number },
): Promise<Phases> {
  const history = await system.client.client.workflow.getHandle(workflowId).fetchHistory();
  const replied = wait.sent + wait.ms;
  const p = noPhases();
  const began = new Map<number, number>();
  let taskScheduled = 0;
  let taskStarted = 0;
  for (const event of history.events ?? []) {
    const at = tsToMs(event.eventTime);
    if (at > replied) break;
    const id = Number(event.eventId);
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        p.toStart = at - wait.sent;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
        taskScheduled = at;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        p.taskQueue += at - taskScheduled;
        taskStarted = at;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        p.taskRun += at - taskStarted;
        taskStarted = 0;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
      case EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
        // A timed-out task that never started (a sticky queue nobody polled) waited in the queue.
        if (taskStarted > 0) p.taskLost += at - taskStarted;
        else p.taskQueue += at - taskScheduled;
        taskStarted = 0;
        break;
      case EventType.EVENT_TYPE_TIMER_STARTED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        began.set(id, at);
        break;
      case EventType.EVENT_TYPE_TIMER_FIRED:
        p.timers += at - (began.get(Number(event.timerFiredEventAttributes?.startedEventId)) ?? at);
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
        const scheduledId = Number(event.activityTaskStartedEventAttributes?.scheduledEventId);
        p.activityQueue += at - (began.get(scheduledId) ?? at);
        began.set(-scheduledId, at);
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: {
        const scheduledId = Number(
          (
            event.activityTaskCompletedEventAttributes ??
            event.activityTaskFailedEventAttributes ??
            event.activityTaskTimedOutEventAttributes
          )?.scheduledEventId,
        );
        p.activityRun += at - (began.get(-scheduledId) ?? at);
        break;
      }
    }
  }
  // A task still running at the reply (its send reached the target before it completed).
  if (taskStarted > 0) p.taskRun += replied - taskStarted;
  p.other =
    wait.ms - (p.toStart + p.taskQueue + p.taskRun + p.taskLost + p.timers + p.activityQueue + p.activityRun);
  return p;
}

export const addPhases = (a: Phases, b: Phases): Phases =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v + b[k as keyof Phases]])) as unknown as Phases;

export const showPhases = (p: Phases) =>
  Object.entries(p)
    .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`)
    .join(', ');

/**
 * Each task the worker took and did not complete, from the history: which task, from which queue
 * (an eager first task comes with the start, no queue), how long after it was scheduled it started,
 * and how it ended: what tells a lost eager start from a sticky task behind a full cache.
 */
async function lostTasks(system: System, workflowId: string): Promise<string[]> {
  const history = await system.client.client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  const startedAt = tsToMs(events[0]?.eventTime);
  const lost: string[] = [];
  let task = 0;
  for (const event of events) {
    if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) task += 1;
    const ended = event.workflowTaskTimedOutEventAttributes ?? event.workflowTaskFailedEventAttributes;
    if (!ended) continue;
    const started = byId.get(Number(ended.startedEventId));
    const scheduled = byId.get(Number(ended.scheduledEventId));
    if (!started?.workflowTaskStartedEventAttributes) continue;
    const queue =
      scheduled?.workflowTaskScheduledEventAttributes?.taskQueue?.kind === 2 ? 'sticky' : 'normal';
    const startMs = tsToMs(started.eventTime);
    const eager = task === 1 && startMs - startedAt < 5 ? ', eager (started with the workflow)' : '';
    const how = event.workflowTaskFailedEventAttributes
      ? `failed (cause ${event.workflowTaskFailedEventAttributes.cause})`
      : 'timed out';
    lost.push(
      `task ${task} from the ${queue} queue${eager}, started ${startMs - tsToMs(scheduled?.eventTime)} ms after scheduled by ${started.workflowTaskStartedEventAttributes.identity}, ${how} ${tsToMs(event.eventTime) - startMs} ms later (at ${((startMs - startedAt) / 1000).toFixed(1)} s of the workflow)`,
    );
  }
  return lost;
}

/**
 * Prints where each wait over `bound` went, in the order sent: when it was sent (s after `began`), how
 * long it waited, its phases and its lost tasks. bench:system and bench:tenants print their late first
 * replies with it.
 */
export async function printLate(
  system: System,
  waits: { workflowId: string; sent: number; ms: number }[],
  bound: number,
  began: number,
): Promise<void> {
  const late = waits.filter((w) => w.ms > bound).sort((a, b) => a.sent - b.sent);
  if (late.length > 0) console.log('over the bound: sent at (s after the burst began) → waited, where (s)');
  for (const w of late) {
    console.log(
      `  ${((w.sent - began) / 1000).toFixed(0)} s → ${(w.ms / 1000).toFixed(1)} s: ${showPhases(await phasesOf(system, w.workflowId, w))} (${w.workflowId})`,
    );
    for (const lost of await lostTasks(system, w.workflowId)) console.log(`    lost: ${lost}`);
  }
}
