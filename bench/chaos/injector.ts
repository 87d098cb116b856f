// The fault injector of the chaos run. It arms the sandbox target's faults on chosen conversations,
// SIGKILLs workers and `replyflow start` processes at random moments and while a send is in flight
// (committed at the target, not yet recorded), SIGKILLs each `replyflow start` while a workflow task
// it started eagerly is in flight, and starts each killed process again (a `replyflow start` on its
// port); it breaks Temporal once (restarts the dev server; on a cluster SIGKILLs a node or restarts
// both one after the other) and restarts PostgreSQL once, and logs every action with its time and
// conversation, so that each held item and each 503 can be traced back to what caused it. On a
// cluster it also logs every move of history shards between nodes, read from Temporal's database.
// Restarts and random kills are timed by how much of the work has settled, not by the clock, so that
// they land while the system is busy however fast this machine is; the kills aimed at eager starts
// follow the plan's first deliveries to the `replyflow start`.
import type { SandboxFault } from '../../src/sandbox/api';
import type { Plan, PlannedConversation, Random } from './plan';
import type { RestartableRole, RoleProcess, System } from './system';

export type InjectorAction =
  | { kind: 'arm-fault'; atMs: number; conversationId: string; fault: SandboxFault }
  | { kind: 'kill-worker'; atMs: number; slot: number; pid: number }
  | {
      kind: 'kill-in-flight';
      atMs: number;
      slot: number;
      pid: number;
      conversationId: string;
      effectId: string;
    }
  | { kind: 'in-flight-missed'; atMs: number; conversationId: string; why: string }
  | { kind: 'worker-started'; atMs: number; slot: number; pid: number }
  /**
   * A `replyflow start` (receiver and worker in one) SIGKILLed at `atMs` and serving again on the
   * same port at `upAtMs`: a disruption for the deliveries sent to it. `eagerWorkflowId`: the
   * workflow it had started eagerly whose task was in flight on it when it was aimed at;
   * `conversationId`: the conversation whose committed send was in flight on it.
   */
  | {
      kind: 'kill-combined';
      atMs: number;
      upAtMs: number;
      slot: number;
      pid: number;
      newPid: number;
      eagerWorkflowId?: string;
      conversationId?: string;
      effectId?: string;
    }
  | { kind: 'eager-kill-missed'; atMs: number; slot: number; why: string }
  | { kind: 'restart-temporal' | 'restart-postgres'; atMs: number; upAtMs: number }
  /** SIGKILLed, started again once the other node owned every shard; up when it owns shards again. */
  | { kind: 'kill-temporal-node'; atMs: number; node: number; pid: number; upAtMs: number }
  /** Stopped as a deploy stops it (SIGTERM) and started again, in a rolling restart. */
  | { kind: 'restart-temporal-node'; atMs: number; node: number; upAtMs: number }
  /** Observed: how many history shards each node owns changed (0: an owner that is none of the nodes). */
  | { kind: 'shards-moved'; atMs: number; owners: Record<string, number> };

/**
 * What happens to Temporal once under load: the dev server restarts; on a cluster one node is
 * SIGKILLed and comes back, or both nodes restart one after the other.
 */
export type TemporalFault = 'none' | 'restart' | 'kill-node' | 'rolling-restart';

export interface InjectorOptions {
  /** Conversations that get each fault armed before their first message. */
  faultsPerKind: number;
  /** Sends killed in flight (a `slow` send whose reply the target has committed). */
  inflightKills: number;
  /** Mean time between random kills of a worker or a `replyflow start`; 0 for none. */
  killEveryMs: number;
  /**
   * SIGKILLs of the `replyflow start` processes (taking turns) while a workflow task one started
   * eagerly is in flight on it, spread over the first deliveries.
   */
  combinedKills: number;
  temporalFault: TemporalFault;
  restartPostgres: boolean;
  /**
   * When Temporal's fault and then PostgreSQL's restart begin, in ms after the senders' start: while
   * webhooks still arrive, however slowly this machine settles them. Unset: by the share of messages
   * settled (0.35 for Temporal, 0.65 for PostgreSQL), while the system is busy.
   */
  disruptAtMs?: number;
  /** How long Temporal and PostgreSQL stay down when restarted. */
  downMs: number;
}

const ARMED_FAULTS: SandboxFault[] = [
  'drop-after-commit',
  'error-500',
  'unavailable-503',
  'rate-limit-429',
  'slow',
];

/** Effect statuses after which no send of the effect is in flight any more. */
const SETTLED = ['succeeded', 'held', 'failed', 'discarded'];
/** Share of the messages settled when Temporal, then PostgreSQL, restart, and when random kills end. */
const RESTART_TEMPORAL_AT = 0.35;
const RESTART_POSTGRES_AT = 0.65;
const KILLS_END_AT = 0.95;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Injector {
  readonly log: InjectorAction[] = [];
  private readonly tasks: Promise<void>[] = [];
  /** Observers that run until `finish()`: the progress count and, on a cluster, the shard watch. */
  private readonly observers: Promise<void>[] = [];
  /** Actions that failed (a worker that would not come back); `finish()` reports the first. */
  private readonly errors: Error[] = [];
  /** Worker kills and restarts take turns, so that at least one worker is always up. */
  private workerLock: Promise<unknown> = Promise.resolve();
  /** Share of the planned messages whose effect has settled (0 to 1). */
  private settled = 0;
  private finished = false;

  constructor(
    private readonly system: System,
    private readonly options: InjectorOptions,
    private readonly random: Random,
    /** Epoch ms of the senders' start; plan offsets count from it. */
    private readonly startAt: number,
    /** Injected actions that have not begun by then are skipped, so a stalled system cannot hang the run. */
    private readonly deadline: number,
  ) {}

  private now(): number {
    return Date.now() - this.startAt;
  }

  /** Waits until `atMs` (or until `unless` holds); false once the deadline has passed. */
  private async atTime(atMs: number, unless = () => false): Promise<boolean> {
    while (Date.now() < this.deadline && this.now() < atMs && !unless())
      await sleep(Math.min(200, atMs - this.now()));
    return Date.now() < this.deadline;
  }

  private async atProgress(share: number): Promise<boolean> {
    while (Date.now() < this.deadline && this.settled < share) await sleep(250);
    return Date.now() < this.deadline;
  }

  /**
   * Schedules every action: faults and the kills aimed at eager starts by the plan's clock, restarts
   * and random kills by the work settled.
   */
  start(plan: Plan): void {
    const conversations = plan.conversations;
    this.observers.push(this.trackProgress(plan.events.filter((e) => !e.secondId).length));
    if (this.system.cluster) this.observers.push(this.watchShards());
    const free = [...conversations].sort(() => this.random() - 0.5);
    const take = (flavourIndex: number) => {
      const flavour = ['sandbox-blind', 'sandbox-lookup', 'sandbox'][flavourIndex % 3];
      const index = free.findIndex((c) => c.flavour === flavour);
      return free.splice(Math.max(index, 0), 1)[0];
    };
    // Flavours rotate over the armed faults so that each fault meets each kind of target.
    let armed = 0;
    for (const fault of ARMED_FAULTS) {
      for (let i = 0; i < this.options.faultsPerKind; i++) {
        const conversation = take(armed++);
        if (conversation) this.schedule(this.armBefore(conversation, fault));
      }
    }
    for (let i = 0; i < this.options.inflightKills; i++) {
      const conversation = take(i);
      if (conversation) this.schedule(this.killInFlight(conversation));
    }
    this.schedule(this.restarts());
    if (this.options.killEveryMs > 0) this.schedule(this.randomKills());
    const combined = this.system.combined.length;
    for (let i = 0; combined > 0 && i < this.options.combinedKills; i++) {
      const fromMs = (plan.sendWindowMs * (i + 1)) / (this.options.combinedKills + 1);
      this.schedule(this.killWithEagerTask(i % combined, fromMs, plan));
    }
  }

  private schedule(action: Promise<void>): void {
    this.tasks.push(action.catch((err: Error) => void this.errors.push(err)));
  }

  /** Share of the planned messages whose effect has settled, as last counted. */
  progress(): number {
    return this.settled;
  }

  /** Resolves once every action has run (or was skipped at the deadline) and every worker is up. */
  async finish(): Promise<void> {
    await Promise.all(this.tasks);
    this.finished = true;
    await Promise.all(this.observers);
    await this.workerLock;
    if (this.errors[0]) throw this.errors[0];
  }

  private async trackProgress(messages: number): Promise<void> {
    while (!this.finished) {
      const counted = await this.system.pool
        .query<{ n: number }>('SELECT count(*)::int AS n FROM effects WHERE status = ANY($1::text[])', [
          SETTLED,
        ])
        .catch(() => undefined);
      if (counted) this.settled = counted.rows[0]!.n / messages;
      await sleep(1000);
    }
  }

  private async arm(conversationId: string, fault: SandboxFault): Promise<void> {
    for (;;) {
      const armed = await fetch(`${this.system.sandboxApiUrl}/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ conversationId, fault }),
      }).catch(() => undefined);
      if (armed?.ok) break;
      // PostgreSQL may be restarting: the sandbox keeps its switches there.
      await sleep(250);
    }
    this.log.push({ kind: 'arm-fault', atMs: this.now(), conversationId, fault });
  }

  /** Armed just before the conversation's first delivery, so its first send takes the fault. */
  private async armBefore(conversation: PlannedConversation, fault: SandboxFault): Promise<void> {
    if (await this.atTime(conversation.firstAtMs - 500)) await this.arm(conversation.id, fault);
  }

  private withWorkers<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.workerLock.then(fn);
    this.workerLock = run.catch(() => {});
    return run;
  }

  /**
   * SIGKILLs a worker or a `replyflow start` and starts it again a second later (a `replyflow start`
   * on the same port), and logs what it killed and what the kill aimed at; call it inside `withWorkers`.
   */
  private async killAndRestart(
    proc: RoleProcess,
    aim: Pick<
      Extract<InjectorAction, { kind: 'kill-combined' }>,
      'eagerWorkflowId' | 'conversationId' | 'effectId'
    > = {},
  ): Promise<void> {
    const role: RestartableRole = proc.role === 'start' ? 'start' : 'worker';
    await this.system.kill(proc);
    const atMs = this.now();
    const { slot, pid } = proc;
    if (role === 'worker')
      this.log.push(
        aim.conversationId && aim.effectId
          ? {
              kind: 'kill-in-flight',
              atMs,
              slot,
              pid,
              conversationId: aim.conversationId,
              effectId: aim.effectId,
            }
          : { kind: 'kill-worker', atMs, slot, pid },
      );
    await sleep(1000);
    const fresh = await this.system.restart(role, slot);
    if (role === 'worker') this.log.push({ kind: 'worker-started', atMs: this.now(), slot, pid: fresh.pid });
    else
      this.log.push({
        kind: 'kill-combined',
        atMs,
        upAtMs: this.now(),
        slot,
        pid,
        newPid: fresh.pid,
        ...aim,
      });
  }

  private async randomKills(): Promise<void> {
    // Checked during the wait and again in the kill's turn, so a settled run neither waits out a gap
    // nor kills once more.
    const ended = () => this.settled >= KILLS_END_AT;
    for (;;) {
      const gap = this.options.killEveryMs * (0.5 + this.random());
      if (!(await this.atTime(this.now() + gap, ended)) || ended()) return;
      await this.withWorkers(async () => {
        if (ended()) return;
        // Every process that runs workflows is a target: the workers and each `replyflow start`. Until
        // a worker has been killed, only the workers: the in-flight kill follows its send to whichever
        // process runs it and the eager kills hit `replyflow start`, so a run whose random kills all
        // fell on `replyflow start` too killed no worker at all (a CI run, 1 in 3 for a single kill).
        const workerKilled = this.log.some((a) => a.kind === 'kill-worker' || a.kind === 'kill-in-flight');
        const runners =
          workerKilled || this.system.workers.length === 0
            ? [...this.system.workers, ...this.system.combined]
            : this.system.workers;
        await this.killAndRestart(runners[Math.floor(this.random() * runners.length)]!);
      });
    }
  }

  /**
   * From `fromMs` on, takes each event whose first delivery goes to the `replyflow start` in `slot`,
   * and once its workflow's first task, started there eagerly, is in flight on that process, SIGKILLs
   * it: that task must be taken over after Temporal's workflow task timeout, by the process started
   * again or by a worker. When the first deliveries (second ids included) end with none seen (a fast
   * machine finishes a first task before it can be asked), it SIGKILLs the process anyway, so that every
   * run kills each `replyflow start` while it holds work, and reports the miss.
   */
  private async killWithEagerTask(slot: number, fromMs: number, plan: Plan): Promise<void> {
    const firstTo = new Map<string, { atMs: number; receiver: number }>();
    for (const d of plan.deliveries) if (!firstTo.has(d.eventId)) firstTo.set(d.eventId, d);
    const candidates = [...firstTo].filter(([, d]) => d.receiver === slot && d.atMs >= fromMs);
    for (const [eventId, first] of candidates) {
      // Soon after the delivery: an eagerly started first task is in flight from the start's answer
      // until its completion, a few tens of ms on an idle machine.
      if (!(await this.atTime(first.atMs + 50))) return;
      const workflowId = `webhook:sandbox:${eventId}`;
      const killed = await this.withWorkers(async () => {
        const proc = this.system.combined[slot]!;
        if (!(await this.eagerTaskInFlight(workflowId, proc.pid))) return false;
        await this.killAndRestart(proc, { eagerWorkflowId: workflowId });
        return true;
      });
      if (killed) return;
    }
    this.log.push({
      kind: 'eager-kill-missed',
      atMs: this.now(),
      slot,
      why: 'no workflow task it started eagerly was seen in flight on it before first deliveries ended; killed anyway',
    });
    await this.withWorkers(() => this.killAndRestart(this.system.combined[slot]!));
  }

  /**
   * Whether the workflow's first task was started on the process with `pid` (a `replyflow start`'s
   * receiver starts eagerly on its own worker) and a task of it is in flight there now; polled for up to
   * 2 s while the start may still be on its way.
   */
  private async eagerTaskInFlight(workflowId: string, pid: number): Promise<boolean> {
    const handle = this.system.client.client.workflow.getHandle(workflowId);
    const until = Date.now() + 2000;
    while (Date.now() < until) {
      const description = await handle.describe().catch(() => undefined);
      if (description && !description.raw.pendingWorkflowTask?.startedTime) return false;
      if (description) {
        const history = await handle.fetchHistory().catch(() => undefined);
        const started = history?.events?.filter((e) => e.workflowTaskStartedEventAttributes) ?? [];
        const on = (e: (typeof started)[number] | undefined) =>
          e?.workflowTaskStartedEventAttributes?.identity?.startsWith(`${pid}@`) === true;
        return on(started[0]) && on(started.at(-1));
      }
      await sleep(100);
    }
    return false;
  }

  /**
   * Arms `slow` so the target commits the reply and holds the answer, waits until the reply is
   * committed while the effect is still `sending`, asks Temporal which process runs that send, and
   * SIGKILLs exactly that worker or `replyflow start`: the crash between the send and its record.
   */
  private async killInFlight(conversation: PlannedConversation): Promise<void> {
    if (!(await this.atTime(conversation.firstAtMs - 500))) return;
    await this.arm(conversation.id, 'slow');
    while (Date.now() < this.deadline) {
      const rows = await this.system.pool
        .query<{ id: string; workflow_id: string; status: string; committed: boolean }>(
          `SELECT e.id, e.workflow_id, e.status,
                  EXISTS (SELECT 1 FROM sandbox_messages m WHERE m.reference = e.id::text AND m.author = 'bot') AS committed
             FROM effects e WHERE e.conversation_id = $1`,
          [conversation.id],
        )
        .then((r) => r.rows)
        .catch(() => undefined);
      const inFlight = rows?.find((r) => r.status === 'sending' && r.committed);
      const pid = inFlight && (await this.senderPid(inFlight.workflow_id));
      if (inFlight && pid) {
        const killed = await this.withWorkers(async () => {
          const proc = this.system.runnerByPid(pid);
          if (!proc) return false;
          await this.killAndRestart(proc, { conversationId: conversation.id, effectId: inFlight.id });
          return true;
        });
        if (killed) return;
      }
      if (rows?.length === conversation.messages && rows.every((r) => SETTLED.includes(r.status))) break;
      await sleep(100);
    }
    this.log.push({
      kind: 'in-flight-missed',
      atMs: this.now(),
      conversationId: conversation.id,
      why: 'its sends settled before one was seen in flight on a live worker or replyflow start',
    });
  }

  private cluster() {
    const { cluster } = this.system;
    if (!cluster) throw new Error('node faults need the system to run on a Temporal cluster');
    return cluster;
  }

  /** Samples shard ownership until the run finishes and logs each change. */
  private async watchShards(): Promise<void> {
    let last = '';
    while (!this.finished) {
      const owners = await this.cluster()
        .shardOwners()
        .catch(() => undefined);
      if (owners) {
        const counts = Object.fromEntries(
          [...owners].sort(([a], [b]) => a - b).map(([n, c]) => [String(n), c]),
        );
        const key = JSON.stringify(counts);
        if (key !== last) {
          if (last) this.log.push({ kind: 'shards-moved', atMs: this.now(), owners: counts });
          last = key;
        }
      }
      await sleep(250);
    }
  }

  /** Resolves once `done(owners)` holds for the shard table (polled), or throws after `timeoutMs`. */
  private async shardsSettle(
    what: string,
    done: (owners: Map<number, number>) => boolean,
    timeoutMs = 120_000,
  ) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const owners = await this.cluster()
        .shardOwners()
        .catch(() => undefined);
      if (owners && done(owners)) return;
      await sleep(250);
    }
    throw new Error(`timed out after ${timeoutMs / 1000}s waiting until ${what}`);
  }

  /**
   * A node crashes: SIGKILL, no goodbye. Its supervisor starts it again once the other node has taken
   * over all its shards, so that shards move away and back under load.
   */
  private async killTemporalNode(): Promise<void> {
    const cluster = this.cluster();
    const node = cluster.nodes[Math.floor(this.random() * cluster.nodes.length)]!;
    const began = this.now();
    const pid = node.pid ?? -1;
    await node.kill();
    await this.shardsSettle(
      `the other nodes own the shards of node ${node.number}`,
      (owners) => !owners.has(node.number) && !owners.has(0),
    );
    await node.start();
    await this.shardsSettle(
      `node ${node.number} owns shards again`,
      (owners) => (owners.get(node.number) ?? 0) > 0,
    );
    this.log.push({ kind: 'kill-temporal-node', atMs: began, node: node.number, pid, upAtMs: this.now() });
  }

  /** A deploy: each node stopped (SIGTERM) and started again, the next only once it owns shards again. */
  private async rollingRestart(): Promise<void> {
    for (const node of this.cluster().nodes) {
      const began = this.now();
      await node.stop();
      await node.start();
      await this.shardsSettle(
        `node ${node.number} owns shards again`,
        (owners) => (owners.get(node.number) ?? 0) > 0,
      );
      this.log.push({ kind: 'restart-temporal-node', atMs: began, node: node.number, upAtMs: this.now() });
    }
  }

  /**
   * The pid of the worker running the workflow's send (Temporal's identity is `pid@host`): the worker
   * of its pending `send` activity, or, for a send run as a local activity (the `local-sends` patch),
   * the worker that started the workflow task still in flight.
   */
  private async senderPid(workflowId: string): Promise<number | undefined> {
    const handle = this.system.client.client.workflow.getHandle(workflowId);
    const description = await handle.describe().catch(() => undefined);
    const pending = description?.raw.pendingActivities?.find((a) => a.activityType?.name === 'send');
    let identity = pending?.lastWorkerIdentity;
    if (!identity && description?.raw.pendingWorkflowTask?.startedTime) {
      const history = await handle.fetchHistory().catch(() => undefined);
      const started = history?.events?.filter((e) => e.workflowTaskStartedEventAttributes).at(-1);
      identity = started?.workflowTaskStartedEventAttributes?.identity ?? undefined;
    }
    const pid = Number(identity?.split('@')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** Temporal, then PostgreSQL: one outage at a time, each while work is in full flow. */
  private async restarts(): Promise<void> {
    const { disruptAtMs } = this.options;
    const when = (share: number) =>
      disruptAtMs === undefined ? this.atProgress(share) : this.atTime(disruptAtMs);
    const fault = this.options.temporalFault;
    if (fault !== 'none' && (await when(RESTART_TEMPORAL_AT))) {
      if (fault === 'restart') {
        const began = this.now();
        await this.system.restartTemporal(this.options.downMs);
        this.log.push({ kind: 'restart-temporal', atMs: began, upAtMs: this.now() });
      } else if (fault === 'kill-node') await this.killTemporalNode();
      else await this.rollingRestart();
    }
    if (this.options.restartPostgres && (await when(RESTART_POSTGRES_AT))) {
      const began = this.now();
      await this.system.restartPostgres(this.options.downMs);
      this.log.push({ kind: 'restart-postgres', atMs: began, upAtMs: this.now() });
    }
  }
}
