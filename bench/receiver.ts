// The receiver benchmark (`npm run bench:receiver`, not part of `npm test`): how many signed webhooks
// per second the receiver acknowledges compared with raw `client.workflow.start` calls on the same
// Temporal dev server at the same concurrency, and its ack latency at a steady 100 requests per second.
// It starts everything itself under a temp dir: an embedded PostgreSQL, and a dev server per store
// (`file`: SQLite on disk, as `npm start` runs it; `memory`: no disk, the server's ceiling). The
// receiver runs in a child process of its own, as in production, so that the load generator does not
// share its event loop. Then, per store, the "worker busy" rounds: the same pairs against a
// `replyflow start` (receiver and worker in one process, as `npm start` runs it) while its worker
// drains a backlog of events (`--backlog`).
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import autocannon from 'autocannon';
import pino from 'pino';
import { loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { setUpDatabase } from '../src/db/setup';
import { APPLICATION_ROLE, startEmbeddedPostgres } from '../src/embedded/postgres';
import { createLogger } from '../src/logger';
import { sandboxProvider } from '../src/providers/sandbox';
import { signStandardWebhook } from '../src/providers/standard-webhooks';
import type { InboundEvent } from '../src/providers/types';
import { startReceiver } from '../src/receiver';
import { eventStartOptions } from '../src/receiver/start-event';
import { dataConverter } from '../src/temporal/client';
import { type DevServer, startDevServer } from '../src/temporal/dev-server';
import type { handleEvent } from '../workflows';
import { SYSTEM_SECRET, SYSTEM_TASK_QUEUE, System } from './chaos/system';
import { percentile } from './system';

const SECRET = 'whsec_cmVwbHlmbG93LWJlbmNobWFyay1zZWNyZXQ=';
const ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64');
const TASK_QUEUE = 'bench';
/** Linux's USER_HZ, the unit of /proc/<pid>/stat CPU times. */
const CLOCK_TICKS = 100;
/** Loops of the fixed-rate run, each waiting for its answer. */
const STEADY_LOOPS = 10;
const STORES = ['memory', 'file'] as const;
type Store = (typeof STORES)[number];

interface Options {
  /** Raw loops, and autocannon connections. @default 8 (start latency stays well under the deadline) */
  concurrency: number;
  /**
   * Seconds per measurement, and rounds of (raw, receiver) pairs. Short adjacent windows see the same
   * background load, so the median of per-round ratios resists a busy machine. @default 6 s × 7
   */
  seconds: number;
  rounds: number;
  /** The steady runs: requests per second and how long each (as many rounds). @default 100 for 6 s */
  rate: number;
  rateSeconds: number;
  /** @default memory,file */
  stores: Store[];
  /** A directory for the receiver process's CPU profile (open it in Chrome DevTools). */
  profile?: string;
  /**
   * Events the worker of a `replyflow start` (receiver and worker in one process, as `npm start` runs
   * them) has waiting before the "worker busy" rounds, which measure its receiver while that worker
   * drains them; 0 skips them. @default 3000
   */
  backlog: number;
}

/** One measurement: completed operations per second and their latency percentiles (ms). */
interface Figures {
  perSecond: number;
  p50: number;
  p99: number;
  /** Operations completed. */
  count: number;
  /** Requests the receiver did not acknowledge, by status (503 when a start missed its deadline). */
  refused?: string;
  /** CPU milliseconds per completed operation, by process. */
  cpu?: Record<string, number>;
}

/** User + system CPU milliseconds a process has used so far (Linux /proc; NaN elsewhere). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** Runs a measurement and adds the CPU each process spent per completed operation. */
async function withCpu(pids: Record<string, number>, run: () => Promise<Figures>): Promise<Figures> {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
  const figures = await run();
  figures.cpu = Object.fromEntries(
    Object.entries(pids).map(([name, pid]) => [name, (cpuMs(pid) - before[name]!) / figures.count]),
  );
  return figures;
}

/**
 * Waits until the dev server has worked off what the last run left it (its background work on the
 * started workflows would otherwise slow the next run): its CPU below a fifth of a core, at most 15 s.
 */
async function settle(serverPid: number): Promise<void> {
  const deadline = performance.now() + 15_000;
  let last = cpuMs(serverPid);
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = cpuMs(serverPid);
    if (Number.isNaN(now) || now - last < 100) return;
    last = now;
  }
}

/** The dev server's process, found by its port (the CLI runs it as a child we do not hold). */
function devServerPid(port: number): number {
  try {
    return Number(
      execFileSync('pgrep', ['-f', `start-dev --ip 127.0.0.1 --port ${port} `])
        .toString()
        .trim(),
    );
  } catch {
    return Number.NaN;
  }
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      concurrency: { type: 'string', default: '8' },
      seconds: { type: 'string', default: '6' },
      rounds: { type: 'string', default: '7' },
      rate: { type: 'string', default: '100' },
      'rate-seconds': { type: 'string', default: '6' },
      store: { type: 'string', default: 'memory,file' },
      profile: { type: 'string' },
      backlog: { type: 'string', default: '3000' },
    },
  });
  const stores = values.store.split(',') as Store[];
  for (const store of stores) {
    if (!STORES.includes(store)) throw new Error(`--store takes ${STORES.join(', ')} (comma-separated)`);
  }
  return {
    concurrency: Number(values.concurrency),
    seconds: Number(values.seconds),
    rounds: Number(values.rounds),
    rate: Number(values.rate),
    rateSeconds: Number(values['rate-seconds']),
    stores,
    profile: values.profile,
    backlog: Number(values.backlog),
  };
}

/** A sandbox chat message, signed as the sandbox page signs it, with a fresh event id. */
function signedMessage(secret = SECRET): { headers: Record<string, string>; body: string } {
  const eventId = `bench_${randomUUID()}`;
  const body = JSON.stringify({
    type: 'message',
    conversationId: `c${eventId.slice(-12)}`,
    messageId: 'm1',
    text: 'what are your opening hours?',
    sentAt: new Date().toISOString(),
  });
  return { headers: signStandardWebhook(secret, eventId, body), body };
}

/** The event the receiver would start for a message: the raw loop starts exactly the same thing. */
function eventFor(message: ReturnType<typeof signedMessage>, secret = SECRET): InboundEvent {
  const result = sandboxProvider(secret).parse({
    rawBody: Buffer.from(message.body),
    headers: message.headers,
    params: {},
    receivedAt: new Date(),
    correlationId: randomUUID(),
  });
  if (result.kind !== 'events') throw new Error('the sandbox provider did not produce an event');
  return result.events[0]!;
}

/** C loops start workflows for `seconds` (on `taskQueue`, which no worker polls); each start is timed on its own. */
async function rawStarts(
  client: Client,
  seconds: number,
  concurrency: number,
  taskQueue = TASK_QUEUE,
): Promise<Figures> {
  const latencies: number[] = [];
  const began = performance.now();
  const until = began + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const event = eventFor(signedMessage());
        const t = performance.now();
        await client.workflow.start<typeof handleEvent>('handleEvent', eventStartOptions(event, taskQueue));
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - began) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    count: latencies.length,
    perSecond: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/**
 * `loops` loops run `operation` at `rate` per second in all, evenly spread (autocannon's own rate
 * limit fires each connection's quota back to back at the top of every second, which measures a
 * burst, not a steady rate). Each operation is timed from when it was sent; a loop waits for its
 * answer before the next and does not catch up when it falls behind, so the achieved rate shows
 * whether the rate held. Only operations that resolve to true count.
 */
async function paced(
  rate: number,
  seconds: number,
  loops: number,
  operation: () => Promise<boolean>,
): Promise<Figures> {
  const latencies: number[] = [];
  let failed = 0;
  const began = performance.now();
  const until = began + seconds * 1000;
  const interval = (1000 * loops) / rate;
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      let due = began + (i * 1000) / rate;
      while (due < until) {
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const t = performance.now();
        if (await operation()) latencies.push(performance.now() - t);
        else failed++;
        due = Math.max(due + interval, performance.now());
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return {
    count: latencies.length,
    perSecond: latencies.length / ((performance.now() - began) / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    refused: failed > 0 ? `${failed} not acknowledged` : undefined,
  };
}

async function rawStart(client: Client): Promise<boolean> {
  const event = eventFor(signedMessage());
  await client.workflow.start<typeof handleEvent>('handleEvent', eventStartOptions(event, TASK_QUEUE));
  return true;
}

async function postWebhook(url: string): Promise<boolean> {
  const message = signedMessage();
  const response = await fetch(`${url}/webhooks/sandbox`, {
    method: 'POST',
    headers: message.headers,
    body: message.body,
  });
  await response.arrayBuffer();
  return response.status === 202;
}

/** autocannon against the receiver: every request a new, validly signed event. */
async function receiverAcks(
  url: string,
  load: { duration: number; connections: number },
  secret = SECRET,
): Promise<Figures> {
  const result = await autocannon({
    url,
    ...load,
    requests: [
      {
        method: 'POST',
        path: '/webhooks/sandbox',
        setupRequest: (request) => {
          const message = signedMessage(secret);
          return { ...request, headers: message.headers, body: message.body };
        },
      },
    ],
  });
  const refused = Object.entries(result.statusCodeStats)
    .filter(([status]) => !status.startsWith('2'))
    .map(([status, { count }]) => `${count} × ${status}`);
  if (result.errors > 0) refused.push(`${result.errors} errors`);
  if (result.timeouts > 0) refused.push(`${result.timeouts} timeouts`);
  return {
    count: result['2xx'],
    perSecond: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    refused: refused.length > 0 ? refused.join(', ') : undefined,
  };
}

/** The receiver in a child process (this file with `--serve`), as `replyflow receiver` runs it. */
async function startReceiverProcess(
  env: Record<string, string>,
  profileDir?: string,
): Promise<{ url: string; child: ChildProcess }> {
  const child = fork(__filename, ['--serve'], {
    env: { ...process.env, ...env },
    stdio: 'inherit',
    execArgv: [...process.execArgv, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`the receiver exited (${code}) before it listened`)));
  });
  return { url, child };
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const pool = createPool(config.DATABASE_URL!, 2);
  // The default level (info) to a file: what a production receiver pays per request, minus the I/O.
  const logger = createLogger(
    'info',
    'replyflow',
    pino.destination({ dest: process.env.BENCH_LOG_FILE!, sync: false }),
  );
  const receiver = await startReceiver({
    config,
    pool,
    temporalAddress: config.TEMPORAL_ADDRESS!,
    encryptionKey: ENCRYPTION_KEY,
    logger,
    port: 0,
  });
  process.send?.({ url: receiver.url });
  process.once('disconnect', async () => {
    await receiver.stop();
    await pool.end();
    logger.flush();
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fixed = (n: number, digits = 0) => n.toFixed(digits);
/** The machine's 1-minute load average: other work on the machine moves every figure. */
const loadAverage = () => fixed(os.loadavg()[0]!, 1);
const cpuText = (f: Figures) =>
  Object.entries(f.cpu ?? {})
    .map(([name, ms]) => `${name} ${fixed(ms, 2)}`)
    .join(', ');
const latency = (f: Figures) => `p50 ${fixed(f.p50, 1)} ms, p99 ${fixed(f.p99, 1)} ms`;

/** Rounds of raw starts then receiver acks on one dev server, then the steady-rate run. */
async function measure(
  store: Store,
  opts: Options,
  env: { dir: string; databaseUrl: string },
): Promise<string[]> {
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const server: DevServer = await startDevServer({
      port: 0,
      dbFile: store === 'file' ? path.join(env.dir, 'temporal.sqlite') : undefined,
    });
    stops.unshift(() => server.stop());
    const { url, child } = await startReceiverProcess(
      {
        TEMPORAL_ADDRESS: server.address,
        DATABASE_URL: env.databaseUrl,
        TEMPORAL_TASK_QUEUE: TASK_QUEUE,
        SANDBOX_ENABLED: 'true',
        SANDBOX_WEBHOOK_SECRET: SECRET,
        SANDBOX_API_TOKEN: 'benchmark-sandbox-api-token',
        BENCH_LOG_FILE: path.join(env.dir, `receiver-${store}.log`),
      },
      opts.profile,
    );
    stops.unshift(async () => {
      child.disconnect();
      await new Promise((resolve) => child.once('exit', resolve));
    });
    const connection = await Connection.connect({ address: server.address });
    stops.unshift(() => connection.close());
    const client = new Client({ connection, dataConverter: dataConverter(ENCRYPTION_KEY) });

    const pids = { server: devServerPid(server.port), receiver: child.pid!, bench: process.pid };
    console.log(`\n[${store}] dev server ${store === 'file' ? 'on a SQLite file' : 'in memory'}`);
    // Warm both paths (JIT, connections, the server's caches) before measuring.
    await rawStarts(client, 3, opts.concurrency);
    await receiverAcks(url, { duration: 3, connections: opts.concurrency });

    // The steady runs first, while the server holds few workflows, in alternating pairs like the
    // rounds below; both paced the same way and timed from sending. The achieved rate shows whether
    // the rate held.
    const rawSteady: Figures[] = [];
    const steady: Figures[] = [];
    for (let round = 1; round <= opts.rounds; round++) {
      await settle(pids.server);
      const r = await paced(opts.rate, opts.rateSeconds, STEADY_LOOPS, () => rawStart(client));
      await settle(pids.server);
      const a = await paced(opts.rate, opts.rateSeconds, STEADY_LOOPS, () => postWebhook(url));
      rawSteady.push(r);
      steady.push(a);
      console.log(
        `  at ${opts.rate}/s, round ${round} (load ${loadAverage()}): raw ${fixed(r.perSecond)} starts/s (${latency(r)}); ` +
          `receiver ${fixed(a.perSecond)} acks/s (${latency(a)})${a.refused ? ` [${a.refused}]` : ''}`,
      );
    }

    const raw: Figures[] = [];
    const acks: Figures[] = [];
    for (let round = 1; round <= opts.rounds; round++) {
      await settle(pids.server);
      const r = await withCpu(pids, () => rawStarts(client, opts.seconds, opts.concurrency));
      await settle(pids.server);
      const a = await withCpu(pids, () =>
        receiverAcks(url, { duration: opts.seconds, connections: opts.concurrency }),
      );
      raw.push(r);
      acks.push(a);
      console.log(
        `  round ${round} (load ${loadAverage()}): raw ${fixed(r.perSecond)} starts/s (${latency(r)}); receiver ${fixed(a.perSecond)} acks/s ` +
          `(${latency(a)})${a.refused ? ` [not acknowledged: ${a.refused}]` : ''}; ratio ${fixed(a.perSecond / r.perSecond, 2)}`,
      );
      console.log(`    CPU ms per raw start: ${cpuText(r)}; per ack: ${cpuText(a)}`);
    }
    const ratios = acks.map((a, i) => a.perSecond / raw[i]!.perSecond);
    return [
      store,
      fixed(median(raw.map((r) => r.perSecond))),
      `${fixed(median(raw.map((r) => r.p50)), 1)} / ${fixed(median(raw.map((r) => r.p99)), 1)}`,
      fixed(median(acks.map((a) => a.perSecond))),
      `${fixed(median(acks.map((a) => a.p50)), 1)} / ${fixed(median(acks.map((a) => a.p99)), 1)}`,
      fixed(median(ratios), 2),
      `${fixed(median(steady.map((a) => a.p99)), 1)} at ${fixed(median(steady.map((a) => a.perSecond)))}/s`,
      `${fixed(median(rawSteady.map((r) => r.p99)), 1)} at ${fixed(median(rawSteady.map((r) => r.perSecond)))}/s`,
    ];
  } finally {
    for (const stop of stops) await stop().catch(() => {});
  }
}

/** Starts `count` events on the task queue of a `replyflow start`, C at a time: the work its worker drains. */
async function startBacklog(client: Client, count: number, concurrency: number): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) {
        const event = eventFor(signedMessage());
        await client.workflow.start<typeof handleEvent>(
          'handleEvent',
          eventStartOptions(event, SYSTEM_TASK_QUEUE),
        );
      }
    }),
  );
}

/** Events of the backlog its worker has not finished. */
async function openEvents(client: Client): Promise<number> {
  const { count } = await client.workflow.count(
    `WorkflowType = "handleEvent" AND ExecutionStatus = "Running" AND TaskQueue = "${SYSTEM_TASK_QUEUE}"`,
  );
  return count;
}

/**
 * The "worker busy" rounds: a `replyflow start` as `npm start` runs it (its receiver starts each event
 * eagerly on its own worker, on the same cores), with `opts.backlog` events waiting for that worker,
 * measured in (raw, receiver) pairs like the idle rounds while the worker drains them. Raw starts go
 * to a queue no worker polls, so they are the server's rate at that moment. Returns the row's cells.
 */
async function measureBusy(store: Store, opts: Options): Promise<string[]> {
  const system = await System.start({ combined: 1, receivers: 0, workers: 0, temporalStore: store });
  try {
    const client = system.client.client;
    const url = system.receiverUrls[0]!;
    const proc = system.combined[0]!;
    const pids = { server: devServerPid(system.temporal!.port), start: proc.pid, bench: process.pid };
    console.log(
      `\n[${store}, worker busy] replyflow start (pid ${proc.pid}), ${opts.backlog} events waiting`,
    );
    await startBacklog(client, opts.backlog, opts.concurrency);
    const raw: Figures[] = [];
    const acks: Figures[] = [];
    for (let round = 1; round <= opts.rounds; round++) {
      const left = await openEvents(client);
      // A drained backlog is no longer a busy worker: the rounds after it would measure an idle one.
      if (left < opts.backlog / 10) {
        console.log(`  the worker drained the backlog (${left} left): no more rounds`);
        break;
      }
      const r = await withCpu(pids, () => rawStarts(client, opts.seconds, opts.concurrency));
      const a = await withCpu(pids, () =>
        receiverAcks(url, { duration: opts.seconds, connections: opts.concurrency }, SYSTEM_SECRET),
      );
      raw.push(r);
      acks.push(a);
      console.log(
        `  round ${round} (load ${loadAverage()}, ${left} events waiting): raw ${fixed(r.perSecond)} starts/s (${latency(r)}); ` +
          `receiver ${fixed(a.perSecond)} acks/s (${latency(a)})${a.refused ? ` [not acknowledged: ${a.refused}]` : ''}; ratio ${fixed(a.perSecond / r.perSecond, 2)}`,
      );
      console.log(`    CPU ms per raw start: ${cpuText(r)}; per ack: ${cpuText(a)}`);
    }
    if (acks.length === 0) return ['-', '-', '-'];
    const refused = acks.filter((a) => a.refused).length;
    return [
      `${fixed(median(acks.map((a) => a.perSecond)))}${refused ? ` (${refused} rounds refused some)` : ''}`,
      `${fixed(median(acks.map((a) => a.p50)), 1)} / ${fixed(median(acks.map((a) => a.p99)), 1)}`,
      fixed(median(acks.map((a, i) => a.perSecond / raw[i]!.perSecond)), 2),
    ];
  } finally {
    await system.stop();
    system.remove();
  }
}

async function main(): Promise<void> {
  const opts = options();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-bench-'));
  chmodSync(dir, 0o755); // as root, PostgreSQL runs as its own user and must reach its data dir
  const cpus = os.cpus();
  console.log(
    `machine: ${cpus.length} × ${cpus[0]?.model}, ${fixed(os.totalmem() / 2 ** 30, 1)} GiB, ` +
      `load average ${os
        .loadavg()
        .map((l) => fixed(l, 1))
        .join(' ')}`,
  );
  console.log(
    `${opts.rounds} rounds per path of ${opts.rate} req/s for ${opts.rateSeconds} s, ` +
      `then ${opts.rounds} rounds of ${opts.seconds} s at concurrency ${opts.concurrency}`,
  );
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'postgres'), ephemeral: true });
  // Set up as the admin sets up a deployment; the receivers connect as the application's role.
  const admin = createPool(pg.adminUrl, 1);
  await setUpDatabase(admin, { appRole: APPLICATION_ROLE }).finally(() => admin.end());
  try {
    const rows: string[][] = [];
    for (const store of opts.stores) {
      const idle = await measure(store, opts, { dir, databaseUrl: pg.url });
      rows.push([...idle, ...(opts.backlog > 0 ? await measureBusy(store, opts) : ['-', '-', '-'])]);
    }
    const header = [
      'store',
      'raw starts/s',
      'raw p50 / p99 ms',
      'receiver acks/s',
      'ack p50 / p99 ms',
      'ratio',
      `ack p99 ms at ${opts.rate} req/s`,
      `raw p99 ms at ${opts.rate}/s`,
      'acks/s, worker busy',
      'ack p50 / p99 ms, worker busy',
      'ratio, worker busy (≥ 0.8)',
    ];
    console.log(`\nmedians of ${opts.rounds} rounds (targets: ratio ≥ 0.9, p99 at 100 req/s ≤ 100 ms)`);
    for (const row of [header, header.map(() => '---'), ...rows]) console.log(`| ${row.join(' | ')} |`);
  } finally {
    await pg.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes('--serve')) {
  serve().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
