// The system benchmark (`npm run bench`, after bench/receiver.ts): the whole system as `npm start`
// runs it (embedded PostgreSQL, a Temporal dev server on SQLite, a `replyflow start` process with the
// receiver and a worker in it; `--combined`, `--receivers` and `--workers` set other layouts), the
// sandbox target; with `--server cluster` then again on a two-node cluster of Temporal's
// own server on PostgreSQL, in the same run and table) measured against the limit of the same server,
// raw `workflow.start`:
// what an event costs Temporal per path (from the runs' own histories), end-to-end latency from
// webhook to the target's receipt unloaded and at half the maximum throughput, the maximum over 100
// conversations, bursts into one conversation and over many, a duplicate storm, and worker memory
// with held workflows waiting. CPU per event is split by process, which shows where the time goes.
// First, the dev server's SQLite settings side by side (raw starts on fresh servers).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { temporal } from '@temporalio/proto';
import { UNAVAILABLE_REASONS } from '../src/metrics';
import type { SandboxMode } from '../src/model';
import { sandboxProvider } from '../src/providers/sandbox';
import { signStandardWebhook } from '../src/providers/standard-webhooks';
import type { InboundEvent } from '../src/providers/types';
import { eventStartOptions } from '../src/receiver/start-event';
import { connectClient } from '../src/temporal/client';
import { DEV_SQLITE_PRAGMAS, startDevServer } from '../src/temporal/dev-server';
import { addCosts, type HistoryCost, historyCost, NO_COST, transactions } from '../test/support/history-cost';
import { counterValue } from '../test/support/receiver';
import type { handleEvent } from '../workflows';
import { ReplyState as ReplyStateKey } from '../workflows/search-attributes';
import { rssMiB, SYSTEM_SECRET, System, type TemporalServerKind } from './chaos/system';
import { printLate } from './phases';
import { duringPhase } from './server-starts';

interface Options {
  /** Raw starts per round of the limit. */
  raw: number;
  /**
   * Rounds of the limit, back to back; the limit is their median. One round swung from 108 to 213/s
   * between runs of a day, and every ratio bar of the run divides by it.
   */
  rawRounds: number;
  concurrency: number;
  unloaded: number;
  burst: number;
  /** Conversations the maximum-throughput burst spreads over. */
  conversations: number;
  /** Events into one conversation at once. */
  single: number;
  /** Events over `wideConversations` conversations at once. */
  wide: number;
  wideConversations: number;
  /** The share of the limit offered open loop for the 0-×-503 phases (500 into one conversation, the backlog). */
  offeredRatio: number;
  /** Events of the backlog the drain phase builds (over `drainConversations`), 0 to skip the phase. */
  drain: number;
  drainConversations: number;
  /** The share of the limit offered while the backlog drains, and for how long. */
  drainRatio: number;
  drainSeconds: number;
  /** How long `concurrency` senders deliver back to back while it drains. */
  drainClosedSeconds: number;
  /**
   * Raw starts (at `concurrency`) after the senders, with our processes stopped (SIGSTOP): what the
   * server itself does with the backlog in it, 0 to skip.
   */
  rawInDrain: number;
  /** Raw starts per SQLite setting. */
  pragmaStarts: number;
  halfSeconds: number;
  /** How long to offer `targetRatio`× the limit over `conversations` conversations (the capacity target). */
  targetSeconds: number;
  /** The share of the limit offered: 0.2 is the issue's capacity target; higher finds the margin. */
  targetRatio: number;
  storm: number;
  copies: number;
  held: number;
  store: 'file' | 'memory';
  /** `replyflow start` processes (receiver and worker in one, eager starts), receivers and workers. */
  processes: { combined: number; receivers: number; workers: number };
  /** The servers to measure, one after the other in this run. */
  servers: TemporalServerKind[];
  /** Settings for every replyflow process (`--env NAME=value`, repeatable), e.g. WORKER_MAX_CACHED_WORKFLOWS=400. */
  env: Record<string, string>;
  /** `acks`: the limit, the unloaded latency and the ack phases only (a quicker run of the 503 figures). */
  only: 'all' | 'acks';
}

/** `NAME=value` pairs (a repeatable `--env`) as settings for the replyflow processes. */
export function envOption(pairs: string[]): Record<string, string> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf('=');
      if (at < 1) throw new Error(`--env takes NAME=value, not ${pair}`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      raw: { type: 'string', default: '1000' },
      'raw-rounds': { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '32' },
      unloaded: { type: 'string', default: '30' },
      burst: { type: 'string', default: '400' },
      conversations: { type: 'string', default: '100' },
      single: { type: 'string', default: '1500' },
      wide: { type: 'string', default: '5000' },
      'wide-conversations': { type: 'string', default: '500' },
      'offered-ratio': { type: 'string', default: '0.7' },
      drain: { type: 'string', default: '5000' },
      'drain-conversations': { type: 'string', default: '500' },
      'drain-ratio': { type: 'string', default: '0.5' },
      'drain-seconds': { type: 'string', default: '60' },
      'drain-closed-seconds': { type: 'string', default: '15' },
      'raw-in-drain': { type: 'string', default: '0' },
      'pragma-starts': { type: 'string', default: '1000' },
      'half-seconds': { type: 'string', default: '60' },
      'target-seconds': { type: 'string', default: '60' },
      'target-ratio': { type: 'string', default: '0.2' },
      storm: { type: 'string', default: '1000' },
      copies: { type: 'string', default: '10' },
      held: { type: 'string', default: '1000' },
      store: { type: 'string', default: 'file' },
      combined: { type: 'string', default: '1' },
      receivers: { type: 'string', default: '0' },
      workers: { type: 'string', default: '0' },
      server: { type: 'string', default: 'dev-server' },
      env: { type: 'string', multiple: true, default: [] },
      only: { type: 'string', default: 'all' },
    },
  });
  if (values.only !== 'all' && values.only !== 'acks') {
    console.error('--only must be all or acks');
    process.exit(2);
  }
  if (values.server !== 'dev-server' && values.server !== 'cluster') {
    console.error('--server must be dev-server, or cluster (measured beside the dev server in the same run)');
    process.exit(2);
  }
  if (!(Number(values['raw-rounds']) >= 1 && Number.isInteger(Number(values['raw-rounds'])))) {
    console.error('--raw-rounds must be a whole number, 1 or more (the limit is the median of the rounds)');
    process.exit(2);
  }
  if (values.store !== 'file' && values.store !== 'memory') {
    console.error('--store must be file (SQLite, as npm start runs it) or memory');
    process.exit(2);
  }
  return {
    raw: Number(values.raw),
    rawRounds: Number(values['raw-rounds']),
    concurrency: Number(values.concurrency),
    unloaded: Number(values.unloaded),
    burst: Number(values.burst),
    conversations: Number(values.conversations),
    single: Number(values.single),
    wide: Number(values.wide),
    wideConversations: Number(values['wide-conversations']),
    offeredRatio: Number(values['offered-ratio']),
    drain: Number(values.drain),
    drainConversations: Number(values['drain-conversations']),
    drainRatio: Number(values['drain-ratio']),
    drainSeconds: Number(values['drain-seconds']),
    drainClosedSeconds: Number(values['drain-closed-seconds']),
    rawInDrain: Number(values['raw-in-drain']),
    pragmaStarts: Number(values['pragma-starts']),
    halfSeconds: Number(values['half-seconds']),
    targetSeconds: Number(values['target-seconds']),
    targetRatio: Number(values['target-ratio']),
    storm: Number(values.storm),
    copies: Number(values.copies),
    held: Number(values.held),
    store: values.store,
    processes: {
      combined: Number(values.combined),
      receivers: Number(values.receivers),
      workers: Number(values.workers),
    },
    servers: values.server === 'cluster' ? ['dev-server', 'cluster'] : ['dev-server'],
    env: envOption(values.env),
    only: values.only,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The value at percentile `p` of an ascending list (NaN for an empty one); every bench reports with it. */
export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** A sandbox chat message, signed as a sender signs it: the first of a conversation of its own by default. */
function message(
  conversationId: string,
  target: SandboxMode = 'sandbox',
  messageId = 'm1',
  sentAt = new Date(),
) {
  const eventId = messageId === 'm1' ? `evt_${conversationId}` : `evt_${conversationId}_${messageId}`;
  const body = JSON.stringify({
    type: 'message',
    conversationId,
    messageId,
    text: 'what are your opening hours?',
    target,
    sentAt: sentAt.toISOString(),
  });
  return { eventId, body };
}

/** A sandbox event as the receiver would start it, for raw starts that bypass the receiver. */
function rawEvent(): InboundEvent {
  const { eventId, body } = message(`raw${randomUUID().slice(0, 12)}`);
  return sandboxEvent(eventId, body);
}

/** The event the receiver makes of a sandbox delivery (its workflow id, among others). */
function sandboxEvent(eventId: string, body: string): InboundEvent {
  const parsed = sandboxProvider(SYSTEM_SECRET).parse({
    rawBody: Buffer.from(body),
    headers: signStandardWebhook(SYSTEM_SECRET, eventId, body),
    params: {},
    receivedAt: new Date(),
    correlationId: randomUUID(),
  });
  if (parsed.kind !== 'events') throw new Error('the sandbox provider did not produce an event');
  return parsed.events[0]!;
}

/** `count` messages over `conversations` conversations, each conversation's in source order. */
export function spread(prefix: string, count: number, conversations: number) {
  const ids = Array.from({ length: conversations }, () => `${prefix}${randomUUID().slice(0, 12)}`);
  const base = Date.now();
  const messages = Array.from({ length: count }, (_, i) =>
    message(ids[i % conversations]!, 'sandbox', `m${Math.floor(i / conversations) + 1}`, new Date(base + i)),
  );
  return { ids, messages };
}

/** Raw starts on a fresh dev server whose file store runs with `pragmas` (SQLite's defaults: []). */
async function rawStartsWithPragmas(pragmas: string[], count: number) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-pragmas-'));
  const server = await startDevServer({
    port: 0,
    dbFile: path.join(dir, 'temporal.sqlite'),
    sqlitePragmas: pragmas,
  });
  const temporal = await connectClient(server.address, 'default', Buffer.alloc(32, 1).toString('base64'));
  try {
    const events = Array.from({ length: count }, rawEvent);
    const latencies: number[] = [];
    const began = performance.now();
    await inLanes(events, 8, async (event) => {
      const t = performance.now();
      await temporal.client.workflow.start<typeof handleEvent>(
        'handleEvent',
        eventStartOptions(event, 'bench-pragmas'),
      );
      latencies.push(performance.now() - t);
    });
    latencies.sort((a, b) => a - b);
    return { perSecond: count / ((performance.now() - began) / 1000), p50: percentile(latencies, 50) };
  } finally {
    await temporal.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `fn` over `items`, `limit` at a time. */
async function inLanes<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** The width of one line of a phase's timeline. */
const TIMELINE_MS = 5_000;

/** How many of `msSinceStart` fall in each TIMELINE_MS window from 0. */
function perWindow(msSinceStart: number[]): number[] {
  const counts: number[] = [];
  for (const ms of msSinceStart) {
    const at = Math.max(0, Math.floor(ms / TIMELINE_MS));
    for (let i = counts.length; i <= at; i++) counts.push(0);
    counts[at]! += 1;
  }
  return counts;
}

/** Every answer senders got in one phase: statuses (each 503 retried, as providers retry) and latencies. */
class AckTally {
  readonly latencies: number[] = [];
  answers = 0;
  unavailable = 0;
  /** Requests that got no answer at all (refused or timed out connections), retried. */
  unanswered = 0;
  /** The receiver's 503s over the phase by reason (its metrics), when the bench read them. */
  byReason?: Map<string, number>;
  /** Deliveries answered 503 at least once. */
  readonly refused = new Set<string>();
  private readonly began = performance.now();
  private endedAt?: number;
  /** The answers of each TIMELINE_MS of the phase, by when they came: how a phase went, not only its sum. */
  private readonly windows: { latencies: number[]; unavailable: number; gate: number[][] }[] = [];

  record(eventId: string, status: number, ms: number): void {
    if (status === 0) {
      this.unanswered += 1;
      return;
    }
    this.answers += 1;
    this.latencies.push(ms);
    const window = this.window();
    window.latencies.push(ms);
    if (status === 503) {
      window.unavailable += 1;
      this.unavailable += 1;
      this.refused.add(eventId);
    }
  }

  /** The window of now. */
  private window() {
    const at = Math.floor((performance.now() - this.began) / TIMELINE_MS);
    for (let i = this.windows.length; i <= at; i++)
      this.windows.push({ latencies: [], unavailable: 0, gate: [] });
    return this.windows[at]!;
  }

  /** A reading of the worker's gate (yielding 0/1, its task rate), when the bench scrapes it. */
  recordGate(yielding: number, rate: number): void {
    if (this.endedAt === undefined) this.window().gate.push([yielding, rate]);
  }

  end(): this {
    this.endedAt ??= performance.now();
    return this;
  }

  /** Acknowledgements (2xx and 4xx) a second over the phase. */
  get perSecond(): number {
    return (this.answers - this.unavailable) / (((this.endedAt ?? performance.now()) - this.began) / 1000);
  }

  /** One line per TIMELINE_MS: answers, 503s and latencies (for the log, not the table). */
  timeline(): string {
    return this.windows
      .map(({ latencies, unavailable, gate }, i) => {
        const sorted = [...latencies].sort((a, b) => a - b);
        const from = (i * TIMELINE_MS) / 1000;
        const mean = (k: number) => gate.reduce((sum, g) => sum + g[k]!, 0) / gate.length;
        const yielding =
          gate.length > 0
            ? `; worker yielding ${fixed(100 * mean(0))} %, task rate mean ${fixed(mean(1))}/s`
            : '';
        return `  ${from}–${from + TIMELINE_MS / 1000} s: ${sorted.length} answered, 503 ×${unavailable}, p50 ${fixed(percentile(sorted, 50))} ms, max ${fixed(sorted.at(-1) ?? 0)} ms${yielding}`;
      })
      .join('\n');
  }

  /** `503 ×N (M deliveries), ack p50 … ms, p99 … ms`. */
  toString(): string {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const unanswered = this.unanswered > 0 ? `, no answer ×${this.unanswered}` : '';
    const reasons = [...(this.byReason ?? [])]
      .filter(([, n]) => n > 0)
      .map(([reason, n]) => `${reason} ${n}`);
    const why = this.unavailable > 0 && reasons.length > 0 ? ` [${reasons.join(', ')}]` : '';
    return `503 ×${this.unavailable} (${this.refused.size} deliveries)${why}${unanswered}, ack p50 ${fixed(percentile(sorted, 50))} ms, p99 ${fixed(percentile(sorted, 99))} ms`;
  }
}

export class Bench {
  private readonly tallies = new Set<AckTally>();

  /**
   * @param gateMetricsUrl the worker's Prometheus endpoint (`--env WORKER_METRICS_PORT=…`): its gate is
   * then read every 500 ms into each phase's timeline.
   */
  constructor(
    private readonly system: System,
    gateMetricsUrl?: string,
  ) {
    if (gateMetricsUrl) {
      const sampler = setInterval(() => {
        if (this.tallies.size === 0) return;
        fetch(gateMetricsUrl)
          .then((r) => r.text())
          .then((text) => {
            const gauge = (name: string) =>
              Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
            for (const tally of this.tallies)
              tally.recordGate(gauge('replyflow_worker_yielding'), gauge('replyflow_worker_task_rate'));
          })
          .catch(() => {});
      }, 500);
      sampler.unref();
    }
  }

  /** Counts every answer from now until `end()` (phases may overlap: each counts what it saw). */
  tally(): AckTally {
    const tally = new AckTally();
    this.tallies.add(tally);
    const end = tally.end.bind(tally);
    tally.end = () => {
      this.tallies.delete(tally);
      return end();
    };
    return tally;
  }

  private get receiver(): string {
    return this.system.receiverUrls[0]!;
  }

  /** Delivers one webhook until it is acknowledged (a 503 is retried after its Retry-After, as providers do). */
  async deliver(eventId: string, body: string): Promise<number> {
    for (;;) {
      const sentAt = performance.now();
      let retryAfterS = 0;
      // A connection refused or timed out is retried as a 503 is, and counted apart (status 0).
      const status = await fetch(`${this.receiver}/webhooks/sandbox`, {
        method: 'POST',
        headers: signStandardWebhook(SYSTEM_SECRET, eventId, body),
        body,
      }).then(
        async (response) => {
          await response.arrayBuffer();
          retryAfterS = Number(response.headers.get('retry-after') ?? 0);
          return response.status;
        },
        () => 0,
      );
      for (const tally of this.tallies) tally.record(eventId, status, performance.now() - sentAt);
      if (status !== 503 && status !== 0) return status;
      // As providers retry: after the Retry-After a 503 gives (at most 5 s), else half a second.
      await sleep(Math.min(5, retryAfterS) * 1000 || 500);
    }
  }

  /**
   * The receiver's 503s so far by reason (`replyflow_webhook_unavailable_total` of the sandbox): a start
   * past WEBHOOK_START_DEADLINE_MS (temporal_slow), a wait in the start queue past half of it
   * (temporal_queued), Temporal down or refusing, the store down. All 0 when the metrics cannot be read.
   */
  private async unavailableByReason(): Promise<Map<string, number>> {
    const text = await fetch(`${this.receiver}/metrics`)
      .then((r) => r.text())
      .catch(() => '');
    return new Map(
      UNAVAILABLE_REASONS.map((reason) => [
        reason,
        counterValue(text, 'replyflow_webhook_unavailable_total', { provider: 'sandbox', reason }),
      ]),
    );
  }

  /** Ends `tally` with the 503s by reason since `before` (any delivery's in that time, as the tally's own). */
  private async endWithReasons(tally: AckTally, before: Map<string, number>): Promise<AckTally> {
    tally.end();
    const after = await this.unavailableByReason();
    tally.byReason = new Map([...after].map(([reason, n]) => [reason, n - (before.get(reason) ?? 0)]));
    return tally;
  }

  /** Delivers `messages` at `perSecond`, each when it is due whatever the answers before it (open loop). */
  async offered(messages: { eventId: string; body: string }[], perSecond: number): Promise<AckTally> {
    const before = await this.unavailableByReason();
    const tally = this.tally();
    const began = Date.now();
    const sends: Promise<number>[] = [];
    for (const [i, { eventId, body }] of messages.entries()) {
      const due = began + (i * 1000) / perSecond;
      if (due > Date.now()) await sleep(due - Date.now());
      sends.push(this.deliver(eventId, body));
    }
    await Promise.all(sends);
    return this.endWithReasons(tally, before);
  }

  /** New conversations, `lanes` deliveries at a time (closed loop), for `seconds`: their ids and the acks. */
  async closedLoop(lanes: number, seconds: number): Promise<{ ids: string[]; acks: AckTally }> {
    const before = await this.unavailableByReason();
    const tally = this.tally();
    const ids: string[] = [];
    const until = Date.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        while (Date.now() < until) {
          const conversationId = `c${randomUUID().slice(0, 12)}`;
          ids.push(conversationId);
          const { eventId, body } = message(conversationId);
          await this.deliver(eventId, body);
        }
      }),
    );
    return { ids, acks: await this.endWithReasons(tally, before) };
  }

  /**
   * While `busy` runs, one message a second, each into a conversation of its own: how long each
   * waited from its webhook to the target's receipt, and whether it was sent before `ackedAt()`.
   */
  async othersBeside<T>(
    busy: Promise<T>,
    ackedAt: (result: T) => number,
  ): Promise<{
    result: T;
    waits: { conversationId: string; workflowId: string; sent: number; ms: number }[];
    duringAcks: (w: { sent: number }) => boolean;
  }> {
    const sentAt = new Map<string, number>();
    const workflowIds = new Map<string, string>();
    let running = true;
    const others = (async () => {
      while (running) {
        const conversationId = `f${randomUUID().slice(0, 12)}`;
        const { eventId, body } = message(conversationId);
        sentAt.set(conversationId, Date.now());
        workflowIds.set(conversationId, sandboxEvent(eventId, body).workflowId);
        const next = Date.now() + 1000;
        await this.deliver(eventId, body);
        await sleep(Math.max(0, next - Date.now()));
      }
    })();
    const result = await busy.finally(() => {
      running = false;
    });
    await others;
    const replies = await this.waitForReplies([...sentAt.keys()]);
    const waits = [...replies].map(([conversationId, at]) => ({
      conversationId,
      workflowId: workflowIds.get(conversationId)!,
      sent: sentAt.get(conversationId)!,
      ms: at - sentAt.get(conversationId)!,
    }));
    const acked = ackedAt(result);
    return { result, waits, duringAcks: (w) => w.sent < acked };
  }

  /** When the target received each conversation's reply (PostgreSQL's clock, same machine). */
  async replies(conversationIds: string[]): Promise<Map<string, number>> {
    const { rows } = await this.system.pool.query<{ conversation_id: string; at: Date; n: number }>(
      `SELECT conversation_id, min(created_at) AS at, count(*)::int AS n FROM sandbox_messages
        WHERE author = 'bot' AND conversation_id = ANY($1::text[]) GROUP BY conversation_id`,
      [conversationIds],
    );
    return new Map(rows.map((r) => [r.conversation_id, r.at.getTime()]));
  }

  /** Bot replies in these conversations, and when the first and the last arrived (PostgreSQL's clock). */
  async replyCount(conversationIds: string[]): Promise<{ n: number; first?: number; last?: number }> {
    const { rows } = await this.system.pool.query<{ n: number; first: Date | null; last: Date | null }>(
      `SELECT count(*)::int AS n, min(created_at) AS first, max(created_at) AS last FROM sandbox_messages
        WHERE author = 'bot' AND conversation_id = ANY($1::text[])`,
      [conversationIds],
    );
    const row = rows[0]!;
    return { n: row.n, first: row.first?.getTime(), last: row.last?.getTime() };
  }

  /**
   * Delivers `messages` (`lanes` at a time) and waits for every reply: when the first came after the
   * first delivery, and the rate from the first reply to the last.
   */
  async flood(
    ids: string[],
    messages: { eventId: string; body: string }[],
    lanes: number,
  ): Promise<{
    firstReplyS: number;
    allRepliedS: number;
    repliesPerSecond: number;
    acksPerSecond: number;
    ackedAt: number;
    acks: AckTally;
  }> {
    const tally = this.tally();
    const began = Date.now();
    await inLanes(messages, lanes, async ({ eventId, body }) => {
      await this.deliver(eventId, body);
    });
    const acked = Date.now();
    tally.end();
    const deadline = Date.now() + 30 * 60_000;
    let got = await this.replyCount(ids);
    while (got.n < messages.length) {
      if (Date.now() > deadline) throw new Error(`${messages.length - got.n} replies missing after 30 min`);
      await sleep(500);
      got = await this.replyCount(ids);
    }
    return {
      firstReplyS: (got.first! - began) / 1000,
      allRepliedS: (got.last! - began) / 1000,
      repliesPerSecond: messages.length / Math.max((got.last! - got.first!) / 1000, 0.001),
      acksPerSecond: messages.length / ((acked - began) / 1000),
      ackedAt: acked,
      acks: tally,
    };
  }

  /**
   * What one event costs Temporal on each path, from the histories of a few events of each: a
   * reply (succeeded), the same message under another event id (duplicate by business key), a
   * message after its conversation closed (stale), and a reply whose outcome nobody can know (held,
   * counted until it is held).
   */
  async costPerPath(samples: number): Promise<Record<string, HistoryCost>> {
    const names = temporal.api.enums.v1.EventType as unknown as Record<number, string>;
    const costOf = async (workflowIds: string[]) => {
      let total = NO_COST;
      for (const id of workflowIds)
        total = addCosts(
          total,
          historyCost(await this.system.client.client.workflow.getHandle(id).fetchHistory(), names),
        );
      return Object.fromEntries(
        Object.entries(total).map(([k, v]) => [k, v / workflowIds.length]),
      ) as unknown as HistoryCost;
    };
    const paths: Record<string, string[]> = { succeeded: [], duplicate: [], stale: [], held: [] };
    for (let i = 0; i < samples; i++) {
      const conversationId = `k${randomUUID().slice(0, 12)}`;
      const first = message(conversationId);
      await this.deliver(first.eventId, first.body);
      await this.waitForReplies([conversationId]);
      paths.succeeded!.push(`webhook:sandbox:${first.eventId}`);
      const again = { eventId: `${first.eventId}_again`, body: first.body };
      await this.deliver(again.eventId, again.body);
      paths.duplicate!.push(`webhook:sandbox:${again.eventId}`);
      const closed = `k${randomUUID().slice(0, 12)}`;
      const close = {
        eventId: `evt_${closed}_close`,
        body: JSON.stringify({
          type: 'close',
          conversationId: closed,
          sentAt: new Date(Date.now() + 1000).toISOString(),
        }),
      };
      await this.deliver(close.eventId, close.body);
      // The close must be applied before the late message arrives, or the message is not late.
      await this.system.client.client.workflow.getHandle(`webhook:sandbox:${close.eventId}`).result();
      const late = message(closed);
      await this.deliver(late.eventId, late.body);
      paths.stale!.push(`webhook:sandbox:${late.eventId}`);
      const blind = `k${randomUUID().slice(0, 12)}`;
      await this.arm(blind, 'error-500');
      const held = message(blind, 'sandbox-blind');
      await this.deliver(held.eventId, held.body);
      paths.held!.push(`webhook:sandbox:${held.eventId}`);
    }
    const all = Object.values(paths).flat();
    const deadline = Date.now() + 5 * 60_000;
    for (const id of all) {
      const handle = this.system.client.client.workflow.getHandle(id);
      for (;;) {
        const state = (await handle.describe()).typedSearchAttributes;
        const done = (await handle.describe()).status.name !== 'RUNNING';
        if (done || String(state.get(ReplyStateKey)) === 'held' || Date.now() > deadline) break;
        await sleep(200);
      }
    }
    const result: Record<string, HistoryCost> = {};
    for (const [name, ids] of Object.entries(paths)) result[name] = await costOf(ids);
    return result;
  }

  private async arm(conversationId: string, fault: string): Promise<void> {
    const armed = await fetch(`${this.system.sandboxApiUrl}/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ conversationId, fault }),
    });
    if (!armed.ok) throw new Error(`arming a fault failed (${armed.status})`);
  }

  async waitForReplies(conversationIds: string[], timeoutMs = 30 * 60_000): Promise<Map<string, number>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = await this.replies(conversationIds);
      if (got.size === conversationIds.length) return got;
      if (Date.now() > deadline)
        throw new Error(`${conversationIds.length - got.size} replies missing after ${timeoutMs / 1000}s`);
      await sleep(250);
    }
  }

  /** Our processes: `replyflow start`, receivers and workers. */
  ourPids(): number[] {
    const { combined, receivers, workers } = this.system;
    return [...combined, ...receivers, ...workers].map((p) => p.pid).filter((pid) => pid > 0);
  }

  /** The limit: raw `workflow.start` calls of the same event workflow on this server (a queue no worker polls). */
  async rawStarts(
    count: number,
    concurrency: number,
  ): Promise<{ perSecond: number; p50: number; p99: number }> {
    const events = Array.from({ length: count }, rawEvent);
    const latencies: number[] = [];
    const began = performance.now();
    await inLanes(events, concurrency, async (event) => {
      const t = performance.now();
      await this.system.client.client.workflow.start<typeof handleEvent>(
        'handleEvent',
        eventStartOptions(event, 'bench-raw-starts'),
      );
      latencies.push(performance.now() - t);
    });
    const seconds = (performance.now() - began) / 1000;
    latencies.sort((a, b) => a - b);
    return { perSecond: count / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  }

  /** One event at a time, each waited for at the target: latency with nothing else running. */
  async unloaded(count: number): Promise<{ p50: number; p99: number }> {
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) {
      const conversationId = `u${randomUUID().slice(0, 12)}`;
      const { eventId, body } = message(conversationId);
      const sentAt = Date.now();
      await this.deliver(eventId, body);
      const at = (await this.waitForReplies([conversationId])).get(conversationId)!;
      latencies.push(at - sentAt);
    }
    latencies.sort((a, b) => a - b);
    return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  }

  /** A steady rate for a while, each event timed from its webhook to the target's receipt. */
  async paced(
    perSecond: number,
    seconds: number,
  ): Promise<{ p50: number; p99: number; completedPerSecond: number }> {
    const count = Math.max(1, Math.round(perSecond * seconds));
    const sentAt = new Map<string, number>();
    const began = Date.now();
    const sends: Promise<number>[] = [];
    for (let i = 0; i < count; i++) {
      const due = began + (i * 1000) / perSecond;
      if (due > Date.now()) await sleep(due - Date.now());
      const conversationId = `p${randomUUID().slice(0, 12)}`;
      const { eventId, body } = message(conversationId);
      sentAt.set(conversationId, Date.now());
      sends.push(this.deliver(eventId, body));
    }
    await Promise.all(sends);
    const replies = await this.waitForReplies([...sentAt.keys()]);
    const latencies = [...replies].map(([id, at]) => at - sentAt.get(id)!).sort((a, b) => a - b);
    const last = Math.max(...replies.values());
    return {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      completedPerSecond: count / ((last - began) / 1000),
    };
  }

  /**
   * `perSecond` events for `seconds`, evenly paced, round robin over `conversations` conversations (so
   * each conversation's messages go in order, one behind the other), each latency from the POST to
   * the reply (the k-th reply of a conversation answers its k-th message: replies keep source order).
   */
  async sustained(
    perSecond: number,
    seconds: number,
    conversations: number,
  ): Promise<{
    p50: number;
    p99: number;
    completedPerSecond: number;
    acks: AckTally;
    repliesPerWindow: number[];
  }> {
    const ids = Array.from({ length: conversations }, () => `t${randomUUID().slice(0, 12)}`);
    // The replies' timeline, with the worker's gate, until the last reply: where a run fell behind.
    const acks = this.tally();
    const count = Math.max(1, Math.round(perSecond * seconds));
    const sentAt = new Map<string, number[]>(ids.map((id) => [id, []]));
    const began = Date.now();
    const sends: Promise<number>[] = [];
    for (let i = 0; i < count; i++) {
      const due = began + (i * 1000) / perSecond;
      if (due > Date.now()) await sleep(due - Date.now());
      const conversationId = ids[i % conversations]!;
      const { eventId, body } = message(conversationId, 'sandbox', `m${Math.floor(i / conversations) + 1}`);
      sentAt.get(conversationId)!.push(Date.now());
      sends.push(this.deliver(eventId, body));
    }
    await Promise.all(sends);
    const deadline = Date.now() + 30 * 60_000;
    while ((await this.replyCount(ids)).n < count) {
      if (Date.now() > deadline) throw new Error('replies missing after 30 min');
      await sleep(250);
    }
    acks.end();
    const { rows } = await this.system.pool.query<{ conversation_id: string; at: Date }>(
      `SELECT conversation_id, created_at AS at FROM sandbox_messages
        WHERE author = 'bot' AND conversation_id = ANY($1::text[]) ORDER BY created_at, id`,
      [ids],
    );
    const seen = new Map<string, number>();
    const latencies = rows
      .map(({ conversation_id: id, at }) => {
        const k = seen.get(id) ?? 0;
        seen.set(id, k + 1);
        return at.getTime() - sentAt.get(id)![k]!;
      })
      .sort((a, b) => a - b);
    const last = Math.max(...rows.map((r) => r.at.getTime()));
    return {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      completedPerSecond: count / ((last - began) / 1000),
      acks,
      repliesPerWindow: perWindow(rows.map((r) => r.at.getTime() - began)),
    };
  }

  /** Each event delivered `copies` times at once; `lanes` events at a time. */
  async storm(
    count: number,
    copies: number,
    lanes: number,
  ): Promise<{ accepted: number; duplicates: number; workflows: number; sends: number; seconds: number }> {
    const conversations = Array.from({ length: count }, () => `s${randomUUID().slice(0, 12)}`);
    let accepted = 0;
    let duplicates = 0;
    const began = Date.now();
    await inLanes(conversations, lanes, async (conversationId) => {
      const { eventId, body } = message(conversationId);
      const statuses = await Promise.all(Array.from({ length: copies }, () => this.deliver(eventId, body)));
      accepted += statuses.filter((s) => s === 202).length;
      duplicates += statuses.filter((s) => s === 200).length;
    });
    await this.waitForReplies(conversations);
    const seconds = (Date.now() - began) / 1000;
    const counted = await this.system.pool.query<{ workflows: number; sends: number }>(
      `SELECT (SELECT count(*)::int FROM events WHERE event_id = ANY($1::text[])) AS workflows,
              (SELECT count(*)::int FROM sandbox_messages WHERE author = 'bot' AND conversation_id = ANY($2::text[])) AS sends`,
      [conversations.map((c) => `evt_${c}`), conversations],
    );
    return { accepted, duplicates, ...counted.rows[0]!, seconds };
  }

  /**
   * Holds `count` workflows (a blind target answering 500: unknown outcome, nobody can tell) on one
   * worker and compares its RSS before and after.
   */
  async heldMemory(count: number): Promise<{ baselineMiB: number; heldMiB: number; held: number }> {
    const worker = [...this.system.combined, ...this.system.workers][0]!;
    const baselineMiB = rssMiB(worker.pid);
    const conversations = Array.from({ length: count }, () => `h${randomUUID().slice(0, 12)}`);
    await inLanes(conversations, 16, async (conversationId) => {
      const armed = await fetch(`${this.system.sandboxApiUrl}/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ conversationId, fault: 'error-500' }),
      });
      if (!armed.ok) throw new Error(`arming a fault failed (${armed.status})`);
    });
    await inLanes(conversations, 16, async (conversationId) => {
      const { eventId, body } = message(conversationId, 'sandbox-blind');
      await this.deliver(eventId, body);
    });
    let held = 0;
    const deadline = Date.now() + 30 * 60_000;
    while (held < count && Date.now() < deadline) {
      await sleep(1000);
      const counted = await this.system.client.client.workflow.count(
        'WorkflowType = "handleEvent" AND ExecutionStatus = "Running" AND ReplyState = "held"',
      );
      held = counted.count;
    }
    // Let the last activations and timers settle before reading memory.
    await sleep(5000);
    return { baselineMiB, heldMiB: rssMiB(worker.pid), held };
  }
}

const fixed = (n: number, digits = 0) => n.toFixed(digits);

type Row = [name: string, value: string, ratio: string];
/** CPU ms so far of each of the system's processes and of the bench itself. */
type ProcessCpu = ReturnType<System['cpuMs']> & { bench: number };

/** Adds a row to the table printed at the end, and prints it now: a run cut short keeps its figures. */
function addRow(rows: Row[], row: Row): void {
  rows.push(row);
  console.log(`  = ${row[0]}: ${row[1]}${row[2] ? ` (${row[2]}×)` : ''}`);
}

/** Every figure of one server, the limit first, and what an event costs it per path. */
async function measure(
  opts: Options,
  server: TemporalServerKind,
): Promise<{ rows: Row[]; costs: Record<string, HistoryCost> }> {
  const system = await System.start({ ...opts.processes, temporalStore: opts.store, server, env: opts.env });
  let costs: Record<string, HistoryCost> = {};
  const metricsPort = opts.env.WORKER_METRICS_PORT;
  const bench = new Bench(system, metricsPort ? `http://127.0.0.1:${metricsPort}/metrics` : undefined);
  const rows: Row[] = [];
  // The bench itself shares the cores: its own CPU is in the figure too, as `bench`.
  const cpuNow = (): ProcessCpu => {
    const own = process.cpuUsage();
    return { ...system.cpuMs(), bench: (own.user + own.system) / 1000 };
  };
  const cpuPerEvent = (before: ReturnType<typeof cpuNow>, events: number) => {
    const after = cpuNow();
    const each = (Object.keys(after) as (keyof typeof after)[]).map(
      (k) => [k, (after[k] - before[k]) / events] as const,
    );
    const total = each.reduce((sum, [, ms]) => sum + ms, 0);
    return `${each.map(([k, ms]) => `${k} ${fixed(ms, 1)}`).join(', ')}; all ${fixed(total, 1)}`;
  };
  try {
    console.log(
      `[${server}] raw workflow.start × ${opts.raw} at concurrency ${opts.concurrency}, ${opts.rawRounds} rounds (the limit: their median)…`,
    );
    const rounds: Awaited<ReturnType<Bench['rawStarts']>>[] = [];
    const rawCpu = cpuNow();
    const measured = <T>(phase: () => Promise<T>) => duringPhase(system.temporal?.metricsUrl, phase);
    const raw = await measured(async () => {
      for (let i = 0; i < opts.rawRounds; i++) rounds.push(await bench.rawStarts(opts.raw, opts.concurrency));
    });
    const rawCpuPerStart = cpuPerEvent(rawCpu, opts.raw * opts.rawRounds);
    const byRate = [...rounds].sort((a, b) => a.perSecond - b.perSecond);
    const limit = byRate[Math.floor((byRate.length - 1) / 2)]!;
    addRow(rows, [
      'raw workflow.start (the limit)',
      `${fixed(limit.perSecond)} /s (p50 ${fixed(limit.p50, 1)} ms, p99 ${fixed(limit.p99, 1)} ms; ` +
        `median of ${rounds.length} rounds: ${rounds.map((r) => fixed(r.perSecond)).join(', ')} /s)`,
      '1.00',
    ]);
    // Against the cores (2 here), what the limit's share costs: a rate times its CPU ms per event
    // over 1,000 is the cores it keeps busy.
    addRow(rows, ['CPU ms per raw start', rawCpuPerStart, '']);
    addRow(rows, ["Temporal's own starts (raw, 32 at once)", raw.serverStarts, '']);

    console.log(`[${server}] end-to-end, unloaded: ${opts.unloaded} events one at a time…`);
    const { result: unloaded, serverStarts: unloadedServer } = await measured(() =>
      bench.unloaded(opts.unloaded),
    );
    addRow(rows, [
      'end-to-end latency, unloaded',
      `p50 ${fixed(unloaded.p50)} ms, p99 ${fixed(unloaded.p99)} ms`,
      '',
    ]);
    addRow(rows, ["Temporal's own starts (unloaded)", unloadedServer, '']);

    if (opts.only === 'all') {
      console.log(`[${server}] what an event costs Temporal, per path (3 events each)…`);
      costs = await bench.costPerPath(3);
    }

    await ackPhases(bench, opts, limit.perSecond, rows, server, {
      now: cpuNow,
      per: cpuPerEvent,
      measured,
    });
    if (opts.only === 'acks') return { rows, costs };

    console.log(
      `end-to-end, maximum: a burst of ${opts.burst} events over ${opts.conversations} conversations…`,
    );
    let cpu = cpuNow();
    const spreadBurst = spread('b', opts.burst, opts.conversations);
    const burst = await bench.flood(spreadBurst.ids, spreadBurst.messages, opts.concurrency);
    const burstCpu = cpuPerEvent(cpu, opts.burst);
    const completedPerSecond = opts.burst / burst.allRepliedS;
    addRow(rows, [
      `end-to-end throughput, maximum (${opts.burst} over ${opts.conversations} conversations)`,
      `${fixed(completedPerSecond, 1)} events/s (acks ${fixed(burst.acksPerSecond)} /s, ${burst.acks}; from the first reply to the last ${fixed(burst.repliesPerSecond, 1)} /s)`,
      fixed(completedPerSecond / limit.perSecond, 3),
    ]);
    addRow(rows, ['CPU ms per event (burst)', burstCpu, '']);

    if (opts.targetSeconds > 0) {
      // The capacity target: 0.2× raw starts, offered evenly for a while over the same conversations.
      // It kept up when no queue built: latency stays the unloaded one (the gather window).
      const ratio = opts.targetRatio;
      const target = limit.perSecond * ratio;
      console.log(
        `[${server}] end-to-end at ${ratio}× the limit, ${fixed(target, 1)} events/s over ${opts.conversations} conversations for ${opts.targetSeconds} s…`,
      );
      cpu = cpuNow();
      const held = await bench.sustained(target, opts.targetSeconds, opts.conversations);
      console.log(`  acks at ${ratio}× until the last reply: ${held.acks}`);
      console.log(held.acks.timeline());
      console.log(`  replies per ${TIMELINE_MS / 1000} s: ${held.repliesPerWindow.join(', ')}`);
      // Kept up: no queue built, so every reply came within the unloaded latency and a second.
      const keptUp = held.p99 <= unloaded.p99 + 1000;
      addRow(rows, [
        `end-to-end at ${ratio}× the limit over ${opts.conversations} conversations, ${opts.targetSeconds} s`,
        `p50 ${fixed(held.p50)} ms, p99 ${fixed(held.p99)} ms at ${fixed(target, 1)} events/s: ${keptUp ? 'kept up' : 'fell behind'} (completed ${fixed(held.completedPerSecond, 1)} /s, the last reply included)`,
        fixed((keptUp ? target : held.completedPerSecond) / limit.perSecond, 3),
      ]);
      addRow(rows, [
        `CPU ms per event (at ${ratio}×)`,
        cpuPerEvent(cpu, Math.round(target * opts.targetSeconds)),
        '',
      ]);
    }

    const half = completedPerSecond / 2;
    console.log(`[${server}] end-to-end at ${fixed(half, 1)} events/s for ${opts.halfSeconds} s…`);
    const paced = await bench.paced(half, opts.halfSeconds);
    addRow(rows, [
      'end-to-end latency at 50 % of the maximum',
      `p50 ${fixed(paced.p50)} ms, p99 ${fixed(paced.p99)} ms at ${fixed(half, 1)} events/s (kept up: ${fixed(paced.completedPerSecond, 1)} /s)`,
      fixed(half / limit.perSecond, 3),
    ]);

    console.log(`[${server}] duplicate storm: ${opts.storm} events × ${opts.copies} concurrent copies…`);
    cpu = cpuNow();
    const storm = await bench.storm(opts.storm, opts.copies, Math.max(1, Math.floor(100 / opts.copies)));
    addRow(rows, [
      `duplicate storm ${opts.storm} × ${opts.copies}: workflows / sends (must be ${opts.storm} / ${opts.storm})`,
      `${storm.workflows} / ${storm.sends} (202×${storm.accepted}, 200×${storm.duplicates})`,
      '',
    ]);
    addRow(rows, [
      'duplicate storm: requests acknowledged and replied per second',
      `${fixed((opts.storm * opts.copies) / storm.seconds)} requests/s, ${fixed(opts.storm / storm.seconds, 1)} events/s`,
      fixed(opts.storm / storm.seconds / limit.perSecond, 3),
    ]);
    addRow(rows, ['CPU ms per event (storm)', cpuPerEvent(cpu, opts.storm), '']);

    if (opts.single > 0) {
      console.log(`[${server}] a burst of ${opts.single} events into one conversation…`);
      const one = spread('o', opts.single, 1);
      // Beside it, one message a second into conversations of their own: fair shares (issue bound:
      // each first reply within the unloaded latency + 1 s).
      const {
        result: single,
        waits,
        duringAcks,
      } = await bench.othersBeside(
        bench.flood(one.ids, one.messages, opts.concurrency),
        (flood) => flood.ackedAt,
      );
      addRow(rows, [
        `burst of ${opts.single} into one conversation: first reply / all replied`,
        `${fixed(single.firstReplyS, 1)} s / ${fixed(single.allRepliedS, 1)} s, ${fixed(single.repliesPerSecond, 1)} replies/s (acks ${fixed(single.acksPerSecond)} /s, ${single.acks})`,
        '',
      ]);
      const bound = unloaded.p50 + 1000;
      const part = (list: { ms: number }[]) => {
        const ms = list.map((w) => w.ms).sort((a, b) => a - b);
        return `${ms.filter((m) => m <= bound).length} of ${ms.length} within, p50 ${fixed(percentile(ms, 50))} ms, p99 ${fixed(percentile(ms, 99))} ms, max ${fixed(ms.at(-1) ?? Number.NaN)} ms`;
      };
      addRow(rows, [
        `beside it, one message a second elsewhere: first replies within unloaded p50 + 1 s (${fixed(bound)} ms)`,
        `${part(waits)}; sent while the burst was acked: ${part(waits.filter(duringAcks))}`,
        '',
      ]);
      // Where each late one's wait went (bench/phases.ts); the quiet conversations begin with the burst.
      await printLate(system, waits, bound, Math.min(...waits.map((w) => w.sent)));
    }
    if (opts.wide > 0) {
      console.log(`[${server}] a burst of ${opts.wide} events over ${opts.wideConversations} conversations…`);
      const many = spread('w', opts.wide, opts.wideConversations);
      cpu = cpuNow();
      const wide = await bench.flood(many.ids, many.messages, opts.concurrency);
      addRow(rows, [
        `burst of ${opts.wide} over ${opts.wideConversations} conversations: first reply / all replied`,
        `${fixed(wide.firstReplyS, 1)} s / ${fixed(wide.allRepliedS, 1)} s, ${fixed(opts.wide / wide.allRepliedS, 1)} events/s (acks ${fixed(wide.acksPerSecond)} /s, ${wide.acks})`,
        fixed(opts.wide / wide.allRepliedS / limit.perSecond, 3),
      ]);
      addRow(rows, ['CPU ms per event (wide burst)', cpuPerEvent(cpu, opts.wide), '']);
    }

    console.log(`[${server}] worker memory: ${opts.held} held workflows on one worker…`);
    // Every held workflow on the one worker measured: the others stop.
    for (let slot = system.combined.length > 0 ? 0 : 1; slot < system.workers.length; slot++)
      await system.stopWorker(slot);
    const memory = await bench.heldMemory(opts.held);
    addRow(rows, [
      'worker RSS with held workflows waiting',
      `${fixed(memory.heldMiB)} MiB with ${memory.held} held (before: ${fixed(memory.baselineMiB)} MiB, ${fixed(((memory.heldMiB - memory.baselineMiB) * 1024) / Math.max(memory.held, 1))} KiB per held)`,
      '',
    ]);
  } finally {
    await system.stop();
    system.remove();
  }
  return { rows, costs };
}

/**
 * Acks first: the sender's view while the worker has work. At `offeredRatio`× the limit, open loop,
 * 500 events into one conversation and then `drain` over `drainConversations` (the backlog: more
 * than the worker answers in the meantime); while that backlog drains, `drainRatio`× for
 * `drainSeconds` and then `concurrency` senders back to back for `drainClosedSeconds`.
 */
async function ackPhases(
  bench: Bench,
  opts: Options,
  limit: number,
  rows: Row[],
  server: TemporalServerKind,
  cpu: {
    now: () => ProcessCpu;
    per: (before: ProcessCpu, answers: number) => string;
    /** Runs a phase and says what Temporal's own starts were in it (duringPhase). */
    measured: <T>(phase: () => Promise<T>) => Promise<{ result: T; serverStarts: string }>;
  },
): Promise<void> {
  const offered = limit * opts.offeredRatio;
  console.log(
    `[${server}] acks at ${opts.offeredRatio}× the limit (${fixed(offered)}/s): 500 into one conversation…`,
  );
  const one = spread('a', 500, 1);
  const { result: oneAcks, serverStarts: oneServer } = await cpu.measured(() =>
    bench.offered(one.messages, offered),
  );
  console.log(oneAcks.timeline());
  addRow(rows, [
    `acks at ${opts.offeredRatio}× the limit, open loop: 500 into one conversation`,
    `${fixed(offered)}/s offered: ${oneAcks}`,
    fixed(opts.offeredRatio, 2),
  ]);
  // The server's own side of those starts: a mean far above the unloaded one says the server itself
  // was slow (short of CPU, or of its one SQLite writer), not that deliveries waited for a place here.
  addRow(rows, ["Temporal's own starts (one conversation)", oneServer, '']);
  await bench.waitForReplies(one.ids);
  if (opts.drain <= 0) return;

  console.log(
    `[${server}] acks at ${opts.offeredRatio}×: a backlog of ${opts.drain} over ${opts.drainConversations} conversations…`,
  );
  const began = Date.now();
  const backlog = spread('d', opts.drain, opts.drainConversations);
  const backlogCpu = cpu.now();
  const { result: backlogAcks, serverStarts: backlogServer } = await cpu.measured(() =>
    bench.offered(backlog.messages, offered),
  );
  console.log(backlogAcks.timeline());
  addRow(rows, [
    `acks at ${opts.offeredRatio}× the limit, open loop: ${opts.drain} over ${opts.drainConversations} conversations (the backlog)`,
    `${fixed(offered)}/s offered: ${backlogAcks}`,
    fixed(opts.offeredRatio, 2),
  ]);
  // Per answer (2xx and 503 alike): what acknowledging costs each process while the worker yields.
  addRow(rows, ['CPU ms per answer (the backlog)', cpu.per(backlogCpu, backlogAcks.latencies.length), '']);
  addRow(rows, ["Temporal's own starts (the backlog)", backlogServer, '']);
  const left = async () => opts.drain - (await bench.replyCount(backlog.ids)).n;

  const during = limit * opts.drainRatio;
  console.log(`[${server}] while it drains: ${fixed(during)}/s for ${opts.drainSeconds} s…`);
  const steady = spread('e', Math.round(during * opts.drainSeconds), Math.round(during * opts.drainSeconds));
  const { result: steadyAcks, serverStarts: steadyServer } = await cpu.measured(() =>
    bench.offered(steady.messages, during),
  );
  console.log(steadyAcks.timeline());
  addRow(rows, [
    `acks at ${opts.drainRatio}× the limit for ${opts.drainSeconds} s while the backlog drains`,
    `${fixed(during)}/s offered: ${steadyAcks} (backlog left at the end: ${await left()})`,
    fixed(opts.drainRatio, 2),
  ]);
  addRow(rows, ["Temporal's own starts (while it drains)", steadyServer, '']);

  console.log(
    `[${server}] while it drains: ${opts.concurrency} senders back to back for ${opts.drainClosedSeconds} s…`,
  );
  const closed = await bench.closedLoop(opts.concurrency, opts.drainClosedSeconds);
  addRow(rows, [
    `acks while the backlog drains, ${opts.concurrency} senders back to back for ${opts.drainClosedSeconds} s`,
    `${fixed(closed.acks.perSecond)} /s: ${closed.acks} (backlog left at the end: ${await left()})`,
    fixed(closed.acks.perSecond / limit, 3),
  ]);

  if (opts.rawInDrain > 0) {
    // The server's own share of the drain's figures: raw starts against the same backlog, with our
    // processes frozen so that no receiver or worker of ours takes part.
    const frozen = bench.ourPids();
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    try {
      const raw = await bench.rawStarts(opts.rawInDrain, opts.concurrency);
      addRow(rows, [
        `raw workflow.start while the backlog drains, our processes stopped (${opts.rawInDrain} at ${opts.concurrency})`,
        `${fixed(raw.perSecond)} /s (p50 ${fixed(raw.p50, 1)} ms, p99 ${fixed(raw.p99, 1)} ms)`,
        fixed(raw.perSecond / limit, 3),
      ]);
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
    }
  }

  // A quicker run of the ack figures stops here, the backlog still draining.
  if (opts.only === 'acks') return;
  await bench.waitForReplies([...backlog.ids, ...steady.ids, ...closed.ids]);
  const total = opts.drain + steady.messages.length + closed.ids.length;
  addRow(rows, [
    `the backlog and everything offered beside it answered (${total} events)`,
    `in ${fixed((Date.now() - began) / 1000, 1)} s`,
    '',
  ]);
}

/** What one event costs Temporal on `server`, per path, from the runs' own histories. */
function printCosts(server: TemporalServerKind, costs: Record<string, HistoryCost>): void {
  if (Object.keys(costs).length > 0) {
    console.log(
      `\n[${server}] what one event costs Temporal, per path (mean of the samples; held: until held)`,
    );
    const keys: (keyof HistoryCost)[] = [
      'workflowTasks',
      'activityTasks',
      'localActivities',
      'signalsSent',
      'timers',
      'starts',
      'upserts',
      'historyEvents',
      'cloudActions',
    ];
    console.log(`${'path'.padEnd(10)}  transactions  ${keys.join('  ')}`);
    for (const [name, cost] of Object.entries(costs))
      console.log(
        `${name.padEnd(10)}  ${fixed(transactions(cost), 1).padStart(12)}  ${keys.map((k) => fixed(cost[k], 1).padStart(k.length)).join('  ')}`,
      );
  }
}

async function main(): Promise<void> {
  const opts = options();
  console.log(
    `machine: ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), ${fixed(os.totalmem() / 2 ** 30, 1)} GiB, node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const { combined, receivers, workers } = opts.processes;
  console.log(
    `Temporal dev server store: ${opts.store}; servers: ${opts.servers.join(', ')}; processes: ${combined} replyflow start (receiver and worker, eager starts), ${receivers} receiver(s), ${workers} worker(s)`,
  );
  const pragmaRows: string[] = [];
  if (opts.store === 'file' && opts.pragmaStarts > 0 && opts.only === 'all') {
    for (const [name, pragmas] of [
      ["SQLite's defaults (before)", []],
      [`${DEV_SQLITE_PRAGMAS.join(', ')} (npm start now)`, DEV_SQLITE_PRAGMAS],
      ['journal_mode=wal, synchronous=off', ['journal_mode=wal', 'synchronous=off']],
    ] as [string, string[]][]) {
      console.log(`raw starts on a fresh file store, ${name}…`);
      const r = await rawStartsWithPragmas(pragmas, opts.pragmaStarts);
      pragmaRows.push(
        `${name.padEnd(48)}  ${fixed(r.perSecond)} starts/s (p50 ${fixed(r.p50, 1)} ms, 8 callers)`,
      );
    }
  }
  const results: Row[][] = [];
  for (const server of opts.servers) {
    const { rows, costs } = await measure(opts, server);
    results.push(rows);
    printCosts(server, costs);
  }
  if (pragmaRows.length > 0)
    console.log(`\nthe dev server's SQLite settings (fresh file store):\n${pragmaRows.join('\n')}`);
  const names = results[0]!.map(([name]) => name);
  const header = ['figure', ...opts.servers.flatMap((server) => [server, '÷ limit'])];
  const table = [header, ...names.map((name, i) => [name, ...results.flatMap((rows) => rows[i]!.slice(1))])];
  const widths = header.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  console.log('');
  for (const row of table) console.log(row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
  console.log(
    `load average at the end: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
}

// Run as a script; bench/fairness.ts imports the Bench alone.
if (require.main === module)
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
