// The chaos run's verdict: waits until the system is quiet, then reconciles what the senders got
// acknowledged against Temporal, the effects table and what the sandbox target received, traces
// every held item to the injected fault that explains it, every 503 to a disruption, and every workflow
// task a killed `replyflow start` had started eagerly to the process that took it over.
import { type WorkflowExecutionInfo, WorkflowNotFoundError } from '@temporalio/client';
import type { SandboxMode } from '../../src/model';
import { reconcile } from '../../src/operator/reconcile';
import type { SandboxFault } from '../../src/sandbox/api';
import { ReplyState } from '../../workflows/search-attributes';
import type { InjectorAction } from './injector';
import type { Plan } from './plan';
import type { SenderReport } from './sender';
import type { System, TemporalServerKind } from './system';

/** States in which an event workflow has its outcome: finished, or waiting for a person. */
const SETTLED = new Set([
  'succeeded',
  'duplicate',
  'stale',
  'discarded',
  'failed',
  'held',
  'awaiting_approval',
]);
const AWAITING_OPERATOR = ['held', 'failed', 'awaiting_approval'];

/** Which flavours must hold when a fault hits their send: the target can then neither dedupe nor find it. */
const HOLDS_ON: Record<SandboxFault, SandboxMode[]> = {
  'drop-after-commit': ['sandbox-blind'],
  'error-500': ['sandbox-blind', 'sandbox-lookup'],
  slow: ['sandbox-blind'],
  'unavailable-503': [],
  'rate-limit-429': [],
};
/** A send cut off by a crash holds only where the target cannot dedupe on our key. */
const CRASH_HOLDS_ON: SandboxMode[] = ['sandbox-blind', 'sandbox-lookup'];

interface HeldItem {
  businessKey: string;
  workflowId: string;
  flavour: SandboxMode | 'unknown';
  lastError: string | null;
  /** What the injector did that explains it; undefined when nothing does. */
  explanation?: string;
}

/** A 503 answer and the disruption it fell in, if any. */
interface UnavailableAnswer {
  atMs: number;
  /** Which process answered: `replyflow start N` or `receiver N`. */
  receiver: string;
  explanation?: string;
  /** The kind of that disruption. */
  during?: Disruption['kind'];
}

/**
 * A workflow task that a `replyflow start` had started eagerly (its receiver started the workflow,
 * its worker took the first task) and that was still in flight when the process was SIGKILLed.
 */
interface EagerTakeover {
  workflowId: string;
  killedPid: number;
  /**
   * Who completed the workflow's next task: a `replyflow start` (with one, the one started again), a
   * worker, or nobody.
   */
  takenOverBy: 'replyflow start' | 'worker' | 'none';
  /** Whether the workflow has its outcome (finished, or waits for a person). */
  settled: boolean;
}

/** How far back from a kill of a `replyflow start` to look for workflows it started (gather + send). */
const EAGER_LOOKBACK_MS = 20_000;

/**
 * How long after a disruption ends (its component serving again and the last shard move it caused),
 * besides the receivers' start deadline, a 503 still counts as its doing: a Temporal client whose
 * connection broke backs off a few seconds before it reconnects.
 */
const RECONNECT_GRACE_MS = 5_000;

export interface ChaosReport {
  /** On a cluster a 503 must fall in a disruption; the dev server's run only reports it. */
  server: TemporalServerKind;
  sent: number;
  acked: number;
  deliveries: number;
  requests: number;
  answers: Record<string, number>;
  notAcked: { eventId: string; why: string }[];
  workflows: number;
  workflowStates: Record<string, number>;
  effects: Record<string, number>;
  deliveredTwice: { businessKey: string; replies: number }[];
  ackedWithoutOutcome: { eventId: string; why: string }[];
  succeededNotAtTarget: string[];
  messagesWithoutEffect: string[];
  /** Faults that must end in held (the target could neither dedupe nor be asked) but nothing was held. */
  guessedUnknowns: { conversationId: string; fault: SandboxFault }[];
  faultsNotTaken: { conversationId: string; fault: string }[];
  held: HeldItem[];
  unavailable: UnavailableAnswer[];
  /** Requests that got no answer (refused, reset, timed out); of them, while a `replyflow start` was down. */
  transportFailures: { total: number; whileCombinedDown: number };
  eagerTakeovers: EagerTakeover[];
  failed: { businessKey: string; lastError: string | null }[];
  crashes: System['crashes'];
  failedStarts: System['failedStarts'];
  replyflowReconcileConsistent: boolean;
  injector: InjectorAction[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const UNSETTLED_QUERY = `WorkflowType = "handleEvent" AND ExecutionStatus = "Running" AND ReplyState NOT IN (${AWAITING_OPERATOR.map((s) => `"${s}"`).join(', ')})`;

/**
 * Polls Temporal until no event workflow is still working (every one finished or waits for an
 * operator) twice in a row, and at least `expected` event workflows exist.
 */
export async function waitUntilQuiet(
  system: System,
  expected: number,
  timeoutMs: number,
  progress: (line: string) => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quietPolls = 0;
  let lastLine = 0;
  while (Date.now() < deadline) {
    const counts = await Promise.all([
      system.client.client.workflow.count(UNSETTLED_QUERY),
      system.client.client.workflow.count('WorkflowType = "handleEvent"'),
    ]).catch(() => undefined);
    const [unsettled, all] = counts ? [counts[0].count, counts[1].count] : [-1, -1];
    quietPolls = unsettled === 0 && all >= expected ? quietPolls + 1 : 0;
    if (quietPolls >= 2) return;
    if (Date.now() - lastLine > 10_000) {
      lastLine = Date.now();
      progress(
        `waiting for quiet: ${unsettled} event workflows still working, ${all} of ${expected} started`,
      );
    }
    await sleep(2000);
  }
  throw new Error(`the system did not become quiet within ${timeoutMs / 1000}s`);
}

async function eventWorkflows(system: System): Promise<Map<string, WorkflowExecutionInfo>> {
  const byId = new Map<string, WorkflowExecutionInfo>();
  for await (const info of system.client.client.workflow.list({ query: 'WorkflowType = "handleEvent"' }))
    byId.set(info.workflowId, info);
  return byId;
}

export async function reconcileRun(input: {
  system: System;
  plan: Plan;
  sender: SenderReport;
  injector: InjectorAction[];
  startAt: number;
  /** WEBHOOK_START_DEADLINE_MS of the receivers: a start begun inside a disruption answers up to this later. */
  startDeadlineMs: number;
}): Promise<ChaosReport> {
  const { system, plan, sender, injector, startAt } = input;
  const graceMs = input.startDeadlineMs + RECONNECT_GRACE_MS;
  const { pool } = system;
  const flavourOf = new Map(plan.conversations.map((c) => [c.id, c.flavour]));
  const ackedIds = Object.entries(sender.events)
    .filter(([, t]) => t.acked)
    .map(([id]) => id);
  const answers: Record<string, number> = {};
  for (const tally of Object.values(sender.events))
    for (const [answer, n] of Object.entries(tally.answers)) answers[answer] = (answers[answer] ?? 0) + n;

  const workflows = await eventWorkflows(system);
  const workflowStates: Record<string, number> = {};
  for (const info of workflows.values()) {
    const state = info.typedSearchAttributes.get(ReplyState) ?? '(none)';
    workflowStates[state] = (workflowStates[state] ?? 0) + 1;
  }

  const events = await pool.query<{ event_id: string; outcome: string | null }>(
    `SELECT event_id, outcome FROM events WHERE provider = 'sandbox'`,
  );
  const outcomeOf = new Map(events.rows.map((r) => [r.event_id, r.outcome]));
  const ackedWithoutOutcome: ChaosReport['ackedWithoutOutcome'] = [];
  for (const eventId of ackedIds) {
    const info = workflows.get(`webhook:sandbox:${eventId}`);
    const state = info?.typedSearchAttributes.get(ReplyState);
    const why = !info
      ? 'no workflow'
      : !outcomeOf.has(eventId)
        ? 'no row in the event ledger'
        : !state || !SETTLED.has(state)
          ? `workflow still in state ${state ?? '(none)'}`
          : info.status.name !== 'RUNNING' && !outcomeOf.get(eventId)
            ? `workflow ${info.status.name.toLowerCase()} without an outcome in the ledger`
            : info.status.name === 'RUNNING' && !AWAITING_OPERATOR.includes(state)
              ? `workflow running in state ${state}`
              : undefined;
    if (why) ackedWithoutOutcome.push({ eventId, why });
  }

  const effectCounts = await pool.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM effects GROUP BY status',
  );
  const deliveredTwice = await pool.query<{ business_key: string; replies: number }>(
    `SELECT coalesce(e.business_key, '(no effect) ' || m.reference) AS business_key, count(*)::int AS replies
       FROM sandbox_messages m LEFT JOIN effects e ON e.id::text = m.reference
      WHERE m.author = 'bot' GROUP BY 1 HAVING count(*) > 1`,
  );
  const notAtTarget = await pool.query<{ business_key: string }>(
    `SELECT business_key FROM effects e WHERE status = 'succeeded'
        AND NOT EXISTS (SELECT 1 FROM sandbox_messages m WHERE m.reference = e.id::text AND m.author = 'bot')`,
  );
  const effectKeys = await pool.query<{ business_key: string }>('SELECT business_key FROM effects');
  const keys = new Set(effectKeys.rows.map((r) => r.business_key));
  const ackedSet = new Set(ackedIds);
  const messagesWithoutEffect = [
    ...new Set(
      plan.events
        .filter((e) => ackedSet.has(e.eventId))
        .map((e) => `chat:sandbox:${e.conversationId}:${e.messageId}:answer`)
        .filter((key) => !keys.has(key)),
    ),
  ];

  const heldRows = await pool.query<{
    business_key: string;
    workflow_id: string;
    conversation_id: string;
    last_error: string | null;
    created_at: Date;
    updated_at: Date;
  }>(
    `SELECT business_key, workflow_id, conversation_id, last_error, created_at, updated_at
       FROM effects WHERE status = 'held' ORDER BY created_at`,
  );
  const held: HeldItem[] = heldRows.rows.map((row) => {
    const flavour = flavourOf.get(row.conversation_id) ?? 'unknown';
    const window = { from: row.created_at.getTime() - startAt, to: row.updated_at.getTime() - startAt };
    return {
      businessKey: row.business_key,
      workflowId: row.workflow_id,
      flavour,
      lastError: row.last_error,
      explanation: explain(row.conversation_id, flavour, window, injector),
    };
  });
  const remainingFaults = await pool.query<{ conversation_id: string; fault: string }>(
    'SELECT conversation_id, fault FROM sandbox_faults',
  );
  const notTaken = new Set(remainingFaults.rows.map((r) => `${r.conversation_id}/${r.fault}`));
  const heldConversations = new Set(heldRows.rows.map((r) => r.conversation_id));
  const guessedUnknowns = injector.flatMap((action) =>
    action.kind === 'arm-fault' &&
    HOLDS_ON[action.fault].includes(flavourOf.get(action.conversationId)!) &&
    !notTaken.has(`${action.conversationId}/${action.fault}`) &&
    !heldConversations.has(action.conversationId)
      ? [{ conversationId: action.conversationId, fault: action.fault }]
      : [],
  );
  const failedRows = await pool.query<{ business_key: string; last_error: string | null }>(
    `SELECT business_key, last_error FROM effects WHERE status = 'failed'`,
  );
  const eagerTakeovers = await takeovers(system, plan, injector, workflows);
  const combinedDown = disruptionWindows(injector).filter((w) => w.kind === 'kill-combined');
  const replyflowReconcile = await reconcile({
    client: system.client.client,
    pool,
    namespace: 'default',
    graceMs: 60_000,
  });

  return {
    server: system.cluster ? 'cluster' : 'dev-server',
    unavailable: sender.unavailable.map(({ at, receiver }) => ({
      atMs: at - startAt,
      // The receiver URLs list the `replyflow start` processes first.
      receiver:
        receiver < system.combined.length
          ? `replyflow start ${receiver}`
          : `receiver ${receiver - system.combined.length}`,
      ...explainUnavailable(at - startAt, injector, graceMs),
    })),
    transportFailures: {
      total: sender.failedAt.length,
      whileCombinedDown: sender.failedAt.filter((at) =>
        combinedDown.some((w) => at - startAt >= w.from && at - startAt <= w.to),
      ).length,
    },
    eagerTakeovers,
    sent: Object.keys(sender.events).length,
    acked: ackedIds.length,
    deliveries: sender.deliveries,
    requests: sender.requests,
    answers,
    notAcked: Object.entries(sender.events)
      .filter(([, t]) => !t.acked)
      .map(([eventId, t]) => ({ eventId, why: t.finalFailure ?? 'never answered' })),
    workflows: workflows.size,
    workflowStates,
    effects: Object.fromEntries(effectCounts.rows.map((r) => [r.status, r.n])),
    deliveredTwice: deliveredTwice.rows.map((r) => ({ businessKey: r.business_key, replies: r.replies })),
    ackedWithoutOutcome,
    succeededNotAtTarget: notAtTarget.rows.map((r) => r.business_key),
    messagesWithoutEffect,
    guessedUnknowns,
    faultsNotTaken: remainingFaults.rows.map((r) => ({ conversationId: r.conversation_id, fault: r.fault })),
    held,
    failed: failedRows.rows.map((r) => ({ businessKey: r.business_key, lastError: r.last_error })),
    crashes: system.crashes,
    failedStarts: system.failedStarts,
    replyflowReconcileConsistent: replyflowReconcile.consistent,
    injector,
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** What disrupts acknowledgements for a while: Temporal or PostgreSQL away, or a `replyflow start` down. */
const DISRUPTIONS = [
  'restart-temporal',
  'restart-postgres',
  'kill-temporal-node',
  'restart-temporal-node',
  'kill-combined',
] as const;
type Disruption = Extract<InjectorAction, { kind: (typeof DISRUPTIONS)[number] }>;

function describeDisruption(action: Disruption): string {
  const span = `${seconds(action.atMs)}–${seconds(action.upAtMs)}`;
  switch (action.kind) {
    case 'restart-temporal':
      return `Temporal dev server restarted (${span})`;
    case 'restart-postgres':
      return `PostgreSQL restarted (${span})`;
    case 'kill-temporal-node':
      return `Temporal node ${action.node} SIGKILLed and started again (${span})`;
    case 'restart-temporal-node':
      return `Temporal node ${action.node} restarted (${span})`;
    case 'kill-combined':
      return `replyflow start ${action.slot} (pid ${action.pid}) SIGKILLed and serving again (${span})`;
  }
}

/**
 * Every disruption with the time its effects last: until its component served again or, when later,
 * the last shard move observed before the next disruption began.
 */
function disruptionWindows(
  injector: InjectorAction[],
): { from: number; to: number; what: string; kind: Disruption['kind'] }[] {
  const disruptions = injector
    .filter((a): a is Disruption => (DISRUPTIONS as readonly string[]).includes(a.kind))
    .sort((a, b) => a.atMs - b.atMs);
  return disruptions.map((action, i) => {
    const next = disruptions[i + 1]?.atMs ?? Number.POSITIVE_INFINITY;
    const lastMove = Math.max(
      ...injector
        .filter((a) => a.kind === 'shards-moved' && a.atMs >= action.atMs && a.atMs < next)
        .map((a) => a.atMs),
    );
    return {
      from: action.atMs,
      to: Math.max(action.upAtMs, lastMove),
      what: describeDisruption(action),
      kind: action.kind,
    };
  });
}

/**
 * The disruption a 503 at `atMs` fell in (with its grace period), the one that began last when they
 * overlap, or nothing when none. A `replyflow start` down is one like Temporal's: its receiver comes
 * back while its own worker and connections warm up, and the other receivers share the machine with
 * its restart.
 */
export function explainUnavailable(
  atMs: number,
  injector: InjectorAction[],
  graceMs: number,
): Pick<UnavailableAnswer, 'explanation' | 'during'> {
  const window = disruptionWindows(injector)
    .reverse()
    .find((w) => atMs >= w.from && atMs <= w.to + graceMs);
  return window
    ? { explanation: `${window.what}; settled by ${seconds(window.to)}`, during: window.kind }
    : {};
}

/**
 * The workflow tasks each killed `replyflow start` had started eagerly and still had in flight, read
 * from the histories of the workflows whose first delivery went to it shortly before the kill: the
 * first task started by that pid, a task started by it that timed out (nobody completed it), and who
 * completed the next one.
 */
async function takeovers(
  system: System,
  plan: Plan,
  injector: InjectorAction[],
  workflows: Map<string, WorkflowExecutionInfo>,
): Promise<EagerTakeover[]> {
  const firstTo = new Map<string, Plan['deliveries'][number]>();
  for (const d of plan.deliveries) if (!firstTo.has(d.eventId)) firstTo.set(d.eventId, d);
  const found: EagerTakeover[] = [];
  for (const kill of injector) {
    if (kill.kind !== 'kill-combined') continue;
    const candidates = [...firstTo.values()].filter(
      (d) => d.receiver === kill.slot && d.atMs <= kill.atMs && d.atMs >= kill.atMs - EAGER_LOOKBACK_MS,
    );
    for (let i = 0; i < candidates.length; i += 20) {
      const batch = await Promise.all(
        candidates.slice(i, i + 20).map((d) => cutOffTask(system, `webhook:sandbox:${d.eventId}`, kill.pid)),
      );
      for (const takeover of batch)
        if (takeover) {
          const state = workflows.get(takeover.workflowId)?.typedSearchAttributes.get(ReplyState);
          found.push({ ...takeover, settled: state !== undefined && SETTLED.has(state) });
        }
    }
  }
  return found;
}

async function cutOffTask(
  system: System,
  workflowId: string,
  killedPid: number,
): Promise<Omit<EagerTakeover, 'settled'> | undefined> {
  const history = await system.client.client.workflow
    .getHandle(workflowId)
    .fetchHistory()
    .catch((err) => {
      // An event whose deliveries were all refused has no workflow, so no task to cut off.
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
  const events = history?.events ?? [];
  const onKilled = new Set<number>();
  let cutOff = false;
  let takenOverBy: EagerTakeover['takenOverBy'] = 'none';
  for (const event of events) {
    const started = event.workflowTaskStartedEventAttributes;
    if (started) {
      if (started.identity?.startsWith(`${killedPid}@`)) onKilled.add(Number(event.eventId));
      // Its first task ran elsewhere: it was not started eagerly there.
      else if (onKilled.size === 0) return undefined;
    }
    const timedOut = event.workflowTaskTimedOutEventAttributes;
    if (timedOut && onKilled.has(Number(timedOut.startedEventId))) cutOff = true;
    const completed = event.workflowTaskCompletedEventAttributes;
    if (cutOff && completed) {
      // Only workers and `replyflow start` processes poll the task queue.
      const by = system.spawned.get(Number(completed.identity?.split('@')[0]));
      takenOverBy = by?.role === 'start' ? 'replyflow start' : 'worker';
      break;
    }
  }
  return cutOff ? { workflowId, killedPid, takenOverBy } : undefined;
}

const killed = (action: { kind: string; pid: number }) =>
  `${action.kind === 'kill-combined' ? 'replyflow start' : 'worker'} pid ${action.pid}`;

/** The injected action that explains a held effect, most specific first. */
function explain(
  conversationId: string,
  flavour: SandboxMode | 'unknown',
  window: { from: number; to: number },
  injector: InjectorAction[],
): string | undefined {
  const open = (atMs: number) => atMs >= window.from - 1000 && atMs <= window.to + 1000;
  const crashHolds = flavour !== 'unknown' && CRASH_HOLDS_ON.includes(flavour);
  for (const action of injector) {
    if (
      (action.kind === 'kill-in-flight' || action.kind === 'kill-combined') &&
      action.conversationId === conversationId &&
      crashHolds
    )
      return `its send was in flight (reply committed, answer held) when ${killed(action)} was SIGKILLed at ${seconds(action.atMs)}`;
  }
  for (const action of injector) {
    if (
      action.kind === 'arm-fault' &&
      action.conversationId === conversationId &&
      flavour !== 'unknown' &&
      HOLDS_ON[action.fault].includes(flavour)
    )
      return `fault ${action.fault} armed on its conversation at ${seconds(action.atMs)}`;
  }
  for (const action of injector) {
    // A kill aimed at another conversation's send takes every send in flight on that worker with it.
    if (
      (action.kind === 'kill-worker' ||
        action.kind === 'kill-in-flight' ||
        action.kind === 'kill-combined') &&
      crashHolds &&
      open(action.atMs)
    )
      return `${killed(action)} SIGKILLed at ${seconds(action.atMs)} while this effect was open`;
    if (
      (action.kind === 'restart-postgres' ||
        action.kind === 'restart-temporal' ||
        action.kind === 'kill-temporal-node' ||
        action.kind === 'restart-temporal-node') &&
      crashHolds &&
      action.atMs <= window.to + 1000 &&
      action.upAtMs >= window.from - 1000
    )
      return `${describeDisruption(action)} while this effect was open`;
  }
  return undefined;
}

/** The rows that must be 0, with their values: the run fails when any is not. */
export function mustBeZero(report: ChaosReport): [string, number][] {
  return [
    ['effects delivered twice', report.deliveredTwice.length],
    ['acked events with no outcome', report.ackedWithoutOutcome.length],
    ['succeeded effects the target never received', report.succeededNotAtTarget.length],
    ['acked messages with no effect', report.messagesWithoutEffect.length],
    ['holding faults taken with nothing held (guessed)', report.guessedUnknowns.length],
    ['held items no injected fault explains', report.held.filter((h) => !h.explanation).length],
    ['processes that crashed on their own', report.crashes.length],
    [
      'eager tasks of a killed replyflow start never taken over',
      report.eagerTakeovers.filter((t) => t.takenOverBy === 'none' || !t.settled).length,
    ],
    ...(report.server === 'cluster'
      ? ([['503 answers outside a disruption', report.unavailable.filter((u) => !u.explanation).length]] as [
          string,
          number,
        ][])
      : []),
  ];
}

export function passed(report: ChaosReport): boolean {
  return mustBeZero(report).every(([, n]) => n === 0);
}

export function formatReport(report: ChaosReport, title: string): string {
  const states = Object.entries(report.workflowStates)
    .sort((a, b) => b[1] - a[1])
    .map(([s, n]) => `${s} ${n}`)
    .join(', ');
  const answers = Object.entries(report.answers)
    .sort((a, b) => b[1] - a[1])
    .map(([a, n]) => `${a}×${n}`)
    .join(', ');
  const inside = report.unavailable.filter((u) => u.during);
  const outside = report.unavailable.filter((u) => !u.during);
  const rows: [string, string][] = [
    ['events sent by the senders (distinct event ids)', String(report.sent)],
    ['events acked (2xx at least once)', String(report.acked)],
    ['deliveries / HTTP requests (answers)', `${report.deliveries} / ${report.requests} (${answers})`],
    ['workflows', `${report.workflows} (${states})`],
    ['effects succeeded', String(report.effects.succeeded ?? 0)],
    ['effects held', String(report.effects.held ?? 0)],
    ['effects failed', String(report.effects.failed ?? 0)],
    ...mustBeZero(report).map(([name, n]): [string, string] => [`${name} (must be 0)`, String(n)]),
    ['503 answers inside a disruption (by disruption)', countBy(inside, (u) => DISRUPTION_LABEL[u.during!])],
    ...(report.server === 'cluster'
      ? []
      : ([
          ['503 answers outside a disruption (on a cluster: must be 0)', countBy(outside, (u) => u.receiver)],
        ] as [string, string][])),
    ...combinedRows(report),
    [
      'restarts that exited while starting, started again',
      countBy(report.failedStarts, (f) => (f.role === 'start' ? 'replyflow start' : 'worker')),
    ],
    ['replyflow reconcile', report.replyflowReconcileConsistent ? 'consistent' : 'INCONSISTENT'],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = [title, ...rows.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`)];
  if (report.held.length > 0) {
    lines.push('', 'held items and the injected fault that explains each:');
    for (const h of report.held)
      lines.push(
        `  ${h.businessKey} (${h.flavour}): ${h.explanation ?? 'UNEXPLAINED'}`,
        `      last error: ${h.lastError ?? '(none)'}`,
      );
  }
  const problems: string[] = [
    ...report.deliveredTwice.map((d) => `delivered ${d.replies}×: ${d.businessKey}`),
    ...report.ackedWithoutOutcome.map((a) => `acked, no outcome: ${a.eventId} (${a.why})`),
    ...report.succeededNotAtTarget.map((k) => `succeeded but not at the target: ${k}`),
    ...report.messagesWithoutEffect.map((k) => `acked message without an effect: ${k}`),
    ...report.guessedUnknowns.map((g) => `${g.fault} taken on ${g.conversationId}, nothing held`),
    ...report.crashes.map((c) => `${c.role} ${c.slot} (pid ${c.pid}) exited ${c.code}:\n${c.logTail}`),
    ...report.failed.map((f) => `failed: ${f.businessKey} (${f.lastError})`),
    ...report.notAcked.map((n) => `not acked: ${n.eventId} (${n.why})`),
    ...bursts(outside).map(
      (b) =>
        `503 × ${b.length} outside every disruption at ${seconds(b[0]!.atMs)}–${seconds(b.at(-1)!.atMs)} (${countBy(b, (u) => u.receiver)})`,
    ),
    ...report.faultsNotTaken.map((f) => `fault ${f.fault} on ${f.conversationId} was never taken`),
    ...report.failedStarts.map(
      (f) =>
        `${f.role === 'start' ? 'replyflow start' : 'worker'} ${f.slot} (pid ${f.pid}) could not start (${f.logTail.split('\n').at(-1)}); started again`,
    ),
    ...report.eagerTakeovers
      .filter((t) => t.takenOverBy === 'none' || !t.settled)
      .map(
        (t) => `eager task of ${t.workflowId} cut off by the kill of pid ${t.killedPid}, never taken over`,
      ),
  ];
  if (problems.length > 0) lines.push('', 'details:', ...problems.slice(0, 50).map((p) => `  ${p}`));
  return lines.join('\n');
}

const DISRUPTION_LABEL: Record<Disruption['kind'], string> = {
  'restart-temporal': 'Temporal restart',
  'kill-temporal-node': 'Temporal node kill',
  'restart-temporal-node': 'Temporal node restart',
  'restart-postgres': 'PostgreSQL restart',
  'kill-combined': 'replyflow start down',
};

/** `n (a 3, b 2)`: how many, and how many of each label. */
function countBy<T>(items: T[], label: (item: T) => string): string {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(label(item), (counts.get(label(item)) ?? 0) + 1);
  const parts = [...counts].map(([name, n]) => `${name}: ${n}`).join(', ');
  return parts ? `${items.length} (${parts})` : '0';
}

/** Answers in runs with less than a second between neighbours, so that a burst is one line. */
function bursts(answers: UnavailableAnswer[]): UnavailableAnswer[][] {
  const runs: UnavailableAnswer[][] = [];
  for (const answer of [...answers].sort((a, b) => a.atMs - b.atMs)) {
    const last = runs.at(-1);
    if (last && answer.atMs - last.at(-1)!.atMs < 1000) last.push(answer);
    else runs.push([answer]);
  }
  return runs;
}

/** The kills of `replyflow start` processes, what they cut off, and the deliveries they refused. */
function combinedRows(report: ChaosReport): [string, string][] {
  const kills = report.injector.filter((a) => a.kind === 'kill-combined');
  const aimed = (pick: (a: (typeof kills)[number]) => unknown) => kills.filter(pick).length;
  if (kills.length === 0) return [];
  const by = (who: EagerTakeover['takenOverBy']) =>
    report.eagerTakeovers.filter((t) => t.takenOverBy === who).length;
  return [
    [
      'replyflow start SIGKILLs (aimed at an eager task / a send in flight)',
      `${kills.length} (${aimed((a) => a.eagerWorkflowId)} / ${aimed((a) => a.conversationId)})`,
    ],
    [
      'eager tasks cut off by them (next task done by a replyflow start / a worker)',
      `${report.eagerTakeovers.length} (${by('replyflow start')} / ${by('worker')})`,
    ],
    [
      'requests without an answer, retried (of them while a replyflow start was down)',
      `${report.transportFailures.total} (${report.transportFailures.whileCombinedDown})`,
    ],
  ];
}

export function formatInjectorLog(actions: InjectorAction[]): string {
  return actions
    .slice()
    .sort((a, b) => a.atMs - b.atMs)
    .map((a) => {
      const at = seconds(a.atMs).padStart(8);
      switch (a.kind) {
        case 'arm-fault':
          return `${at}  armed ${a.fault} on ${a.conversationId}`;
        case 'kill-worker':
          return `${at}  SIGKILL worker ${a.slot} (pid ${a.pid})`;
        case 'kill-in-flight':
          return `${at}  SIGKILL worker ${a.slot} (pid ${a.pid}) with the send of ${a.conversationId} in flight`;
        case 'in-flight-missed':
          return `${at}  no in-flight send seen for ${a.conversationId}: ${a.why}`;
        case 'worker-started':
          return `${at}  worker ${a.slot} started again (pid ${a.pid})`;
        case 'kill-combined': {
          const aim = a.eagerWorkflowId
            ? ` with the eagerly started task of ${a.eagerWorkflowId} in flight`
            : a.conversationId
              ? ` with the send of ${a.conversationId} in flight`
              : '';
          return `${at}  SIGKILL replyflow start ${a.slot} (pid ${a.pid})${aim}; serving again at ${seconds(a.upAtMs)} (pid ${a.newPid})`;
        }
        case 'eager-kill-missed':
          return `${at}  replyflow start ${a.slot}: ${a.why}`;
        case 'shards-moved':
          return `${at}  history shards per node now ${Object.entries(a.owners)
            .map(([node, n]) => `${node === '0' ? 'unknown owner' : `node ${node}`}: ${n}`)
            .join(', ')}`;
        default:
          return `${at}  ${describeDisruption(a)}`;
      }
    })
    .join('\n');
}
