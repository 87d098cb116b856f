// Acks first, for a receiver and a worker in one process (`replyflow start`). A webhook is answered
// once its workflow's start is confirmed, and the worker's tasks compete with those starts for the
// same Temporal server (on the dev server's file store, one SQLite writer), the same event loop and
// the same cores. Measured without this, a third of a burst was answered 503 at two thirds of the
// server's own start rate (docs/benchmarks.md). So the receiver tells this gate how long each start
// takes, and the worker's tuner takes new workflow and activity tasks only at a rate that halves
// while starts are slow and climbs back while they are fast; while they are slow it also declines
// eager starts, whose first task then waits in Temporal's task queue (durable, and fair across
// conversations) instead of in front of the next webhook. Processing uses what acknowledging leaves.
import type {
  ActivitySlotInfo,
  CustomSlotSupplier,
  SlotPermit,
  SlotReleaseContext,
  SlotReserveContext,
  TunerHolder,
  WorkflowSlotInfo,
} from '@temporalio/worker';

interface AcksFirstOptions {
  /**
   * A start slower than this is pressure: well below WEBHOOK_START_DEADLINE_MS. Against a Temporal
   * whose fastest starts are slower (a remote cluster), three times the fastest of the last minute,
   * up to `maxSlowStartMs`: the worker yields to its own load, not to the network's distance.
   */
  slowStartMs: number;
  maxSlowStartMs?: number;
  /**
   * Deliveries being started at once (waiting for a place or at Temporal) that count as pressure
   * however fast each is: by Little's law, starts in flight are the rate times the latency, so a
   * fast offer is noticed at a lower latency than a slow one, before the places run out and
   * deliveries queue for them (a 503 past half the deadline). Unset: latency alone.
   */
  busyStarts?: number;
  /** Workflow tasks at once, at most (as maxConcurrentWorkflowTaskExecutions). */
  workflowSlots: number;
  /** Activity tasks at once, at most; local activities get as many (inside tasks already taken). */
  activitySlots: number;
  /** New tasks a second the worker may always take, so that a backlog drains under any load. */
  minPerSecond?: number;
  /** For tests: the clock (ms), and no timer of its own (the test calls `adjust`). */
  now?: () => number;
  manual?: boolean;
}

type Kind = 'workflow' | 'activity';

interface Waiter {
  kind: Kind;
  resolve: (permit: SlotPermit) => void;
}

/** A start told to ask for eager execution, until the SDK asks for its slot. */
interface EagerAsk {
  /** A quiet conversation's, with one of its passes (eagerFor): it may take a kept slot. */
  quiet: boolean;
  at: number;
}

/** How often the rate is adjusted; starts are judged over the same interval. */
const ADJUST_MS = 100;
/** The weight of the last interval in the rate of tasks taken (a moving average over about half a second). */
const TAKEN_WEIGHT = 0.3;
/** Above this the rate is no limit at all: the worker runs as it would without the gate. */
const UNLIMITED_PER_SECOND = 2000;
/**
 * One new task a second while starts are slow: enough that a backlog still moves; measured on 2 cores,
 * 5 a second still let 101 of 500 starts into one conversation at 0.7x raw start miss the deadline.
 */
const MIN_PER_SECOND = 1;
/**
 * A conversation (a fairness key) none of whose events started for this long is quiet: its next
 * event is not part of a burst, and may start eagerly even while the worker yields, so that a burst
 * elsewhere does not hold up its first reply. At most QUIET_PER_SECOND such starts a second.
 */
const QUIET_MS = 10_000;
/** The fastest start is taken over the last one to two of these windows. */
const FASTEST_WINDOW_MS = 30_000;
const QUIET_PER_SECOND = 2;
/**
 * Workflow slots only quiet conversations' eager starts may take (a start holds its slot through the
 * gather window, ~2 s, so two a second keep about four open): a burst's tasks filling every other slot
 * must not turn a quiet conversation's start into one queued behind the burst.
 */
const QUIET_SLOTS = 4;
/** The permit of a slot a quiet pass took: its release frees one of those (the SDK hands it back). */
const QUIET_PERMIT: SlotPermit = Object.freeze({ quiet: true });
const isQuietPermit = (permit: SlotPermit) => (permit as { quiet?: unknown } | undefined)?.quiet === true;
/** Fairness keys remembered; past it the least recent are forgotten (they count as quiet again). */
const MAX_KEYS = 10_000;
/**
 * An eager ask the SDK did not reserve a slot for within this long never will (its start failed
 * before reaching Temporal): forgotten, so that it cannot pair with a later start's reservation.
 */
const EAGER_ASK_MS = 2_000;

export class AcksFirst {
  private readonly minSlowStartMs: number;
  private readonly maxSlowStartMs: number;
  private readonly busyStarts: number;
  /** The fastest start of this and of the previous window of FASTEST_WINDOW_MS. */
  private fastest = { current: Number.POSITIVE_INFINITY, previous: Number.POSITIVE_INFINITY, since: 0 };
  private readonly minPerSecond: number;
  private readonly slots: Record<Kind, number>;
  /** Workflow slots for everything but quiet passes: the slots less those kept for quiet ones. */
  private readonly sharedWorkflowSlots: number;
  private readonly used: Record<Kind, number> = { workflow: 0, activity: 0 };
  /** Of the workflow slots used, those quiet passes took (their permits say so). */
  private quietUsed = 0;
  private readonly now: () => number;
  /** New tasks a second the worker may take now. */
  private rate = UNLIMITED_PER_SECOND;
  /** Tasks taken since the last adjustment, and when that was. */
  private taken = 0;
  private adjustedAt: number;
  /** Tasks a second the worker has actually been taking (a moving average). */
  private takenPerSecond = 0;
  private tokens = 1;
  private refilledAt: number;
  /** Starts in flight, by when each began. */
  private readonly inFlight = new Set<{ began: number }>();
  /** A start finished slow since the last adjustment. */
  private slowSeen = false;
  /**
   * The most starts in flight at once since the last adjustment. The count at the adjustment alone
   * can miss a burst's first starts: over a quick server they settle fast, and a probe of a burst at
   * 0.7x the limit saw 8 in flight between two ticks and 2 at the tick, which left the worker
   * unlimited (and every start eager) for another 100 ms.
   */
  private peakInFlight = 0;
  /** When an event of each fairness key last started, least recent first. */
  private readonly lastStart = new Map<string, number>();
  private quietTokens = QUIET_PER_SECOND;
  private quietRefilledAt: number;
  /**
   * The starts told to ask for eager execution whose slot the SDK has not reserved yet, in the order
   * they were told. The SDK does not say which start a reservation is for; starts reach it in the
   * order they asked, so each reservation is the oldest ask's. A count of quiet passes instead let a
   * burst start that asked just before the worker began to yield take a quiet conversation's pass.
   */
  private readonly eagerAsks: EagerAsk[] = [];
  private readonly waiters: Waiter[] = [];
  /** Set by close(): no more eager starts. */
  private closing = false;
  /** Resolves close() once the last start in flight settled. */
  private onIdle: (() => void) | undefined;
  private wake: NodeJS.Timeout | undefined;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(options: AcksFirstOptions) {
    this.minSlowStartMs = options.slowStartMs;
    this.maxSlowStartMs = Math.max(options.slowStartMs, options.maxSlowStartMs ?? options.slowStartMs);
    this.busyStarts = options.busyStarts ?? Number.POSITIVE_INFINITY;
    this.minPerSecond = options.minPerSecond ?? MIN_PER_SECOND;
    this.slots = { workflow: options.workflowSlots, activity: options.activitySlots };
    const quietSlots = Math.min(QUIET_SLOTS, Math.floor(options.workflowSlots / 4));
    this.sharedWorkflowSlots = options.workflowSlots - quietSlots;
    this.now = options.now ?? (() => performance.now());
    this.refilledAt = this.now();
    this.adjustedAt = this.refilledAt;
    this.fastest.since = this.refilledAt;
    this.quietRefilledAt = this.refilledAt;
    if (!options.manual) {
      this.timer = setInterval(() => this.adjust(), ADJUST_MS);
      this.timer.unref();
    }
  }

  /** The receiver calls this as a start begins, and the function it returns once it settled. */
  startBegan(): () => void {
    const start = { began: this.now() };
    this.inFlight.add(start);
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight.size);
    return () => {
      this.inFlight.delete(start);
      if (this.inFlight.size === 0) this.onIdle?.();
      const now = this.now();
      const took = now - start.began;
      if (now - this.fastest.since > FASTEST_WINDOW_MS)
        this.fastest = { current: took, previous: this.fastest.current, since: now };
      else this.fastest.current = Math.min(this.fastest.current, took);
      if (took > this.slowStartMs) this.slowSeen = true;
    };
  }

  /**
   * Whether the start of an event with fairness key `key` should ask for eager execution: always while
   * starts are fast; while the worker yields, only for a quiet conversation (a few a second), whose
   * first task then skips the queue the burst fills. A quiet conversation's ask carries a pass either
   * way: one of the QUIET_SLOTS is its when the others are taken.
   */
  eagerFor(key: string): boolean {
    if (this.closing) return false;
    const now = this.now();
    const last = this.lastStart.get(key);
    this.lastStart.delete(key);
    this.lastStart.set(key, now);
    if (this.lastStart.size > MAX_KEYS) this.lastStart.delete(this.lastStart.keys().next().value!);
    // A quiet conversation's ask carries a pass (a few a second): its reservation may take one of the
    // kept slots, so it is not queued when a burst holds the others, whether or not the worker yields.
    const quiet = last === undefined || now - last >= QUIET_MS;
    const pass = quiet && this.takeQuietToken(now);
    if (!this.underPressure) return this.asked(pass, now);
    return pass && this.asked(true, now);
  }

  /** One of the QUIET_PER_SECOND passes, if one is left. */
  private takeQuietToken(now: number): boolean {
    this.quietTokens = Math.min(
      QUIET_PER_SECOND,
      this.quietTokens + ((now - this.quietRefilledAt) / 1000) * QUIET_PER_SECOND,
    );
    this.quietRefilledAt = now;
    if (this.quietTokens < 1) return false;
    this.quietTokens -= 1;
    return true;
  }

  /** Notes an eager ask; always true, what eagerFor answers. */
  private asked(quiet: boolean, now: number): true {
    this.forgetStaleAsks(now);
    this.eagerAsks.push({ quiet, at: now });
    return true;
  }

  /** Forgets the asks too old to be reserved now (EAGER_ASK_MS), oldest first. */
  private forgetStaleAsks(now: number): void {
    while (this.eagerAsks.length > 0 && now - this.eagerAsks[0]!.at > EAGER_ASK_MS) this.eagerAsks.shift();
  }

  /** The ask a reservation of an eager workflow task is for: the oldest not too old to be reserved. */
  private nextAsk(): EagerAsk | undefined {
    this.forgetStaleAsks(this.now());
    return this.eagerAsks.shift();
  }

  /** How slow a start must be to count as pressure (see AcksFirstOptions.slowStartMs). */
  get slowStartMs(): number {
    const fastest = Math.min(this.fastest.current, this.fastest.previous);
    if (!Number.isFinite(fastest)) return this.minSlowStartMs;
    return Math.min(this.maxSlowStartMs, Math.max(this.minSlowStartMs, 3 * fastest));
  }

  /**
   * Whether starts are under pressure right now: since the last adjustment one finished slow or as
   * many were in flight at once as `busyStarts`, or one in flight now is already late.
   */
  get underPressure(): boolean {
    if (this.slowSeen || this.peakInFlight >= this.busyStarts) return true;
    const now = this.now();
    for (const start of this.inFlight) if (now - start.began > this.slowStartMs) return true;
    return false;
  }

  /** New tasks a second the worker may take now (UNLIMITED_PER_SECOND: no limit). */
  get perSecond(): number {
    return this.rate;
  }

  /**
   * Under pressure, halves what the worker has actually been taking (or the rate, if lower), never
   * below the minimum: halving the rate alone took half a second to reach a worker taking a hundred
   * tasks a second from no limit, half a second in which starts kept slowing. Otherwise raises the
   * rate by a quarter: the worker probes its way back up while starts stay fast (from the minimum to
   * no limit in ~2.5 s).
   */
  adjust(): void {
    const now = this.now();
    const elapsed = now - this.adjustedAt;
    if (elapsed > 0) {
      const lately = (this.taken * 1000) / elapsed;
      this.takenPerSecond = TAKEN_WEIGHT * lately + (1 - TAKEN_WEIGHT) * this.takenPerSecond;
      this.taken = 0;
      this.adjustedAt = now;
    }
    const pressure = this.underPressure;
    if (pressure) this.rate = Math.max(this.minPerSecond, Math.min(this.rate, this.takenPerSecond) / 2);
    else this.rate = Math.min(UNLIMITED_PER_SECOND, this.rate * 1.25 + 1);
    this.slowSeen = false;
    this.peakInFlight = this.inFlight.size;
    this.pump();
  }

  /** The worker's tuner: workflow and activity tasks through the gate, local activities by count. */
  tuner(): TunerHolder {
    return {
      workflowTaskSlotSupplier: this.supplier<WorkflowSlotInfo>('workflow'),
      activityTaskSlotSupplier: this.supplier<ActivitySlotInfo>('activity'),
      // Local activities run inside a workflow task already taken: holding them back would only hold
      // that task open longer.
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: this.slots.activity },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
    };
  }

  /**
   * Asks for no more eager starts and resolves once no start is in flight (or after `timeoutMs`).
   * The worker's shutdown waits for it: an eager start reserves its slot through this gate's supplier
   * (JavaScript, on this thread) while the SDK holds its lock on the process's workers, and
   * `worker.shutdown()` takes that same lock from this thread. Both at once deadlock the process
   * (seen as a Ctrl-C under load that never returned).
   */
  async close(timeoutMs = 5_000): Promise<void> {
    this.closing = true;
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.onIdle = resolve;
      timer = setTimeout(resolve, timeoutMs);
    });
    clearTimeout(timer);
    this.onIdle = undefined;
  }

  stop(): void {
    clearInterval(this.timer);
    clearTimeout(this.wake);
  }

  private supplier<SI extends WorkflowSlotInfo | ActivitySlotInfo>(kind: Kind): CustomSlotSupplier<SI> {
    return {
      type: 'custom',
      reserveSlot: (_ctx: SlotReserveContext, abort: AbortSignal) =>
        new Promise<SlotPermit>((resolve, reject) => {
          const waiter: Waiter = { kind, resolve };
          this.waiters.push(waiter);
          abort.addEventListener(
            'abort',
            () => {
              const at = this.waiters.indexOf(waiter);
              if (at >= 0) this.waiters.splice(at, 1);
              reject(abort.reason);
            },
            { once: true },
          );
          this.pump();
        }),
      // Eager tasks (a start's first task, an activity dispatched with a completion): only while
      // starts are fast, or they would take the very capacity the next acknowledgement needs.
      tryReserveSlot: () => {
        const quiet = kind === 'workflow' && this.nextAsk()?.quiet === true;
        if (!this.underPressure && this.waiters.length === 0 && this.take(kind)) return {};
        // A quiet conversation's start (eagerFor) that found no shared slot, or found the worker
        // yielding: a slot past the rate and past the slots the others share (QUIET_SLOTS), not past
        // the slot limit.
        if (quiet && this.used.workflow < this.slots.workflow) {
          this.used.workflow += 1;
          this.quietUsed += 1;
          this.taken += 1;
          return QUIET_PERMIT;
        }
        return null;
      },
      markSlotUsed: () => {},
      releaseSlot: (ctx: SlotReleaseContext<SI>) => {
        this.used[kind] -= 1;
        if (isQuietPermit(ctx.permit)) this.quietUsed -= 1;
        this.pump();
      },
    };
  }

  /** Whether a slot of `kind` is free for anything but a quiet pass: within the limit and the share. */
  private hasSharedSlot(kind: Kind): boolean {
    if (this.used[kind] >= this.slots[kind]) return false;
    return kind !== 'workflow' || this.used.workflow - this.quietUsed < this.sharedWorkflowSlots;
  }

  /** Takes a slot of `kind` and a token, if both are free. */
  private take(kind: Kind): boolean {
    if (!this.hasSharedSlot(kind)) return false;
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    this.used[kind] += 1;
    this.taken += 1;
    return true;
  }

  private refill(): void {
    const now = this.now();
    // A fifth of a second's worth at most: a rate cut takes effect at once, not after a saved burst.
    const burst = Math.max(1, this.rate / 5);
    this.tokens = Math.min(burst, this.tokens + ((now - this.refilledAt) / 1000) * this.rate);
    this.refilledAt = now;
  }

  /** Grants waiting reservations in order while slots and tokens allow; else wakes for the next token. */
  private pump(): void {
    clearTimeout(this.wake);
    this.wake = undefined;
    while (this.waiters.length > 0) {
      const at = this.waiters.findIndex((w) => this.hasSharedSlot(w.kind));
      if (at < 0) return; // every waiter's kind is full: a release pumps again
      const waiter = this.waiters[at]!;
      if (!this.take(waiter.kind)) {
        const ms = Math.max(1, ((1 - this.tokens) / this.rate) * 1000);
        if (!this.manual()) {
          this.wake = setTimeout(() => this.pump(), ms);
          this.wake.unref();
        }
        return;
      }
      this.waiters.splice(at, 1);
      waiter.resolve({});
    }
  }

  private manual(): boolean {
    return this.timer === undefined;
  }
}
