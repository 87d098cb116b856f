// `npm run bench:fairness`: does a burst into one conversation (one team's channel, one customer's
// chat) delay the first reply in another? The system as `npm start` runs it (bench/chaos/system.ts:
// one `replyflow start` process, embedded PostgreSQL, the dev server on its file store, the sandbox
// target): `--single` events into one conversation at concurrency `--concurrency`, while a second
// sender writes one message a second, each into a conversation of its own, until the burst is
// answered. Each of those is timed from its webhook to the target's receipt and compared with the
// unloaded latency + 1 s (the issues' bound). Measured twice in one run, with Temporal's task queue
// fairness off and on (src/receiver/start-event.ts gives each conversation its own fairness key).
// For each reply over the bound it prints where the time went, from its workflow's history.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { tsToMs } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { System } from './chaos/system';
import { Bench, envOption, spread } from './system';

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

interface Result {
  fairness: string;
  unloadedP50: number;
  others: number[];
  /** Those sent while the burst was still being acknowledged, and those sent after. */
  duringAcks: number[];
  afterAcks: number[];
  burstS: number;
  acksPerSecond: number;
  /** Those over the bound: seconds after the first of them was sent, how long each waited, and where. */
  slow: { atS: number; ms: number; phases: Phases }[];
  /** The same sums over those within the bound, for comparison. */
  withinPhases: Phases;
}

/**
 * Where a reply's wait went, from its event workflow's history up to the reply (the server's clock;
 * one machine): from the webhook to the workflow's start, workflow tasks waiting in Temporal's queue
 * (scheduled → started; 0 for an eager first task) and running on the worker (started → completed:
 * the send, a local activity, runs inside one), timers (the gather window), activity tasks waiting and
 * running; `other` is the rest (the target's receipt after the task's send, clocks).
 */
interface Phases {
  toStart: number;
  taskQueue: number;
  taskRun: number;
  timers: number;
  activityQueue: number;
  activityRun: number;
  other: number;
}

const noPhases = (): Phases => ({
  toStart: 0,
  taskQueue: 0,
  taskRun: 0,
  timers: 0,
  activityQueue: 0,
  activityRun: 0,
  other: 0,
});

const EventType = temporal.api.enums.v1.EventType;

async function phasesOf(
  system: System,
  wait: { conversationId: string; sent: number; ms: number },
): Promise<Phases> {
  const history = await system.client.client.workflow
    .getHandle(`webhook:sandbox:evt_${wait.conversationId}`)
    .fetchHistory();
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
      case EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
      case EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
        p.taskRun += at - taskStarted;
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
  p.other = wait.ms - (p.toStart + p.taskQueue + p.taskRun + p.timers + p.activityQueue + p.activityRun);
  return p;
}

const addPhases = (a: Phases, b: Phases): Phases =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v + b[k as keyof Phases]])) as unknown as Phases;

const showPhases = (p: Phases) =>
  Object.entries(p)
    .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`)
    .join(', ');

async function measure(
  fairness: boolean,
  single: number,
  concurrency: number,
  env: Record<string, string>,
): Promise<Result> {
  const system = await System.start({
    combined: 1,
    receivers: 0,
    workers: 0,
    temporalStore: 'file',
    temporalDynamicConfig: { 'matching.enableFairness': fairness },
    env,
  });
  try {
    const bench = new Bench(system);
    const unloaded = await bench.unloaded(10);
    const burst = spread('o', single, 1);
    const {
      result: flood,
      waits,
      duringAcks,
    } = await bench.othersBeside(
      bench.flood(burst.ids, burst.messages, concurrency),
      (flood) => flood.ackedAt,
    );
    const sorted = (list: { ms: number }[]) => list.map((w) => w.ms).sort((a, b) => a - b);
    const firstSent = Math.min(...waits.map((w) => w.sent));
    const bound = unloaded.p50 + 1000;
    const slow = [];
    for (const w of waits.filter((w) => w.ms > bound))
      slow.push({ atS: (w.sent - firstSent) / 1000, ms: w.ms, phases: await phasesOf(system, w) });
    let withinPhases = noPhases();
    const within = waits.filter((w) => w.ms <= bound);
    for (const w of within) withinPhases = addPhases(withinPhases, await phasesOf(system, w));
    return {
      fairness: fairness ? 'on' : 'off',
      unloadedP50: unloaded.p50,
      others: sorted(waits),
      duringAcks: sorted(waits.filter(duringAcks)),
      afterAcks: sorted(waits.filter((w) => !duringAcks(w))),
      burstS: flood.allRepliedS,
      acksPerSecond: flood.acksPerSecond,
      slow: slow.sort((a, b) => a.atS - b.atS),
      withinPhases: Object.fromEntries(
        Object.entries(withinPhases).map(([k, v]) => [k, v / Math.max(1, within.length)]),
      ) as unknown as Phases,
    };
  } finally {
    await system.stop();
    system.remove();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      single: { type: 'string', default: '1500' },
      concurrency: { type: 'string', default: '32' },
      modes: { type: 'string', default: 'off,on' },
      env: { type: 'string', multiple: true, default: [] },
    },
  });
  // `--env NAME=value` (repeatable): a setting for the replyflow start, e.g. DATABASE_POOL_SIZE=50.
  const env = envOption(values.env);
  const single = Number(values.single);
  const concurrency = Number(values.concurrency);
  console.log(
    `machine: ${os.cpus().length} CPUs, node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const results: Result[] = [];
  for (const mode of values.modes.split(',')) {
    console.log(`fairness ${mode}: ${single} events into one conversation, one a second into others…`);
    results.push(await measure(mode === 'on', single, concurrency, env));
  }
  console.log('');
  console.log(
    'fairness  unloaded p50  others: n  p50       p99       max       within unloaded + 1 s  burst answered in  burst acks',
  );
  for (const r of results) {
    const bound = r.unloadedP50 + 1000;
    const within = r.others.filter((ms) => ms <= bound).length;
    console.log(
      [
        r.fairness.padEnd(8),
        `${r.unloadedP50.toFixed(0)} ms`.padEnd(12),
        String(r.others.length).padStart(9),
        `${percentile(r.others, 50).toFixed(0)} ms`.padEnd(9),
        `${percentile(r.others, 99).toFixed(0)} ms`.padEnd(9),
        `${(r.others.at(-1) ?? Number.NaN).toFixed(0)} ms`.padEnd(9),
        `${within} of ${r.others.length}`.padEnd(22),
        `${r.burstS.toFixed(1)} s`.padEnd(17),
        `${r.acksPerSecond.toFixed(0)} /s`,
      ].join(' '),
    );
  }
  console.log('');
  console.log('by when they were sent: while the burst was being acknowledged / after');
  for (const r of results) {
    const bound = r.unloadedP50 + 1000;
    const part = (list: number[]) =>
      `${list.filter((ms) => ms <= bound).length} of ${list.length} within, p99 ${percentile(list, 99).toFixed(0)} ms`;
    console.log(`${r.fairness.padEnd(8)} ${part(r.duringAcks)} / ${part(r.afterAcks)}`);
  }
  console.log('');
  console.log('over the bound: sent at (s after the first) → waited');
  for (const r of results)
    console.log(
      `${r.fairness.padEnd(8)} ${r.slow.map((w) => `${w.atS.toFixed(0)} s → ${(w.ms / 1000).toFixed(1)} s`).join(', ') || 'none'}`,
    );
  console.log('');
  console.log('where the time went (s): within the bound, the mean; over it, each (sent at → phases)');
  for (const r of results) {
    console.log(`${r.fairness.padEnd(8)} within: ${showPhases(r.withinPhases)}`);
    for (const w of r.slow) console.log(`${''.padEnd(8)} ${w.atS.toFixed(0)} s: ${showPhases(w.phases)}`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
