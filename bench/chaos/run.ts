// One chaos run, end to end: start the system, send the planned webhooks from a separate process while
// the injector breaks things, wait until everything settled, and reconcile. `npm run chaos` and the
// reduced run in CI (test/integration/chaos.test.ts) both call `runChaos`.

import { randomInt } from 'node:crypto';
import { errorMessage } from '../../src/failures';
import { Injector, type InjectorOptions } from './injector';
import { buildPlan, seededRandom } from './plan';
import { type ChaosReport, passed, reconcileRun, waitUntilQuiet } from './report';
import { forkSender } from './sender';
import { SYSTEM_SECRET, System, type TemporalServerKind } from './system';

export interface ChaosOptions extends InjectorOptions {
  /** The Temporal dev server, or a two-node cluster of Temporal's own server on PostgreSQL. */
  server: TemporalServerKind;
  /** Distinct event ids (a share of them second ids for an already planned message). */
  events: number;
  dup: number;
  sameMessageShare: number;
  ratePerSecond: number;
  laterMaxMs: number;
  receivers: number;
  workers: number;
  /**
   * `replyflow start` processes (a receiver and a worker in one, eager starts, as `npm start` runs it)
   * beside the receivers and workers: they take deliveries like the receivers and are killed like the
   * workers, and besides while a workflow task they started eagerly is in flight (`combinedKills`).
   */
  combined: number;
  /** SEND_TIMEOUT of the workers: a send attempt's timeout and lease. */
  sendTimeout: string;
  /** WEBHOOK_START_DEADLINE_MS of the receivers: past it they answer 503. */
  startDeadlineMs: number;
  seed: number;
  /** How long to wait for the system to settle after the last delivery. */
  quietTimeoutMs: number;
  /** Keep the run's directory (logs, data) even when the run passed. */
  keep: boolean;
  log: (line: string) => void;
}

export const DEFAULT_CHAOS: Omit<ChaosOptions, 'seed' | 'log'> = {
  events: 2000,
  dup: 3,
  sameMessageShare: 0.1,
  ratePerSecond: 25,
  laterMaxMs: 120_000,
  // Two receiver URLs and four processes, as before the combined process was in the default run: one
  // of the two receivers is the `replyflow start` users run.
  receivers: 1,
  workers: 2,
  combined: 1,
  combinedKills: 2,
  sendTimeout: '10s',
  startDeadlineMs: 1500,
  faultsPerKind: 6,
  inflightKills: 3,
  killEveryMs: 20_000,
  server: 'dev-server',
  temporalFault: 'restart',
  restartPostgres: true,
  downMs: 3000,
  quietTimeoutMs: 20 * 60_000,
  keep: false,
};

export interface ChaosResult {
  report: ChaosReport;
  passed: boolean;
  elapsedMs: number;
  /** The run's directory when kept (failed runs are always kept). */
  dir?: string;
  /** When the last event's first delivery was due, in ms after the senders' start. */
  sendWindowMs: number;
}

export function newSeed(): number {
  return randomInt(2 ** 31);
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const began = Date.now();
  const random = seededRandom(options.seed);
  const log = (line: string) =>
    options.log(`[${((Date.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}`);
  log(
    `starting PostgreSQL, ${options.server === 'cluster' ? 'a two-node Temporal cluster' : 'the Temporal dev server'}, ${options.receivers} receivers, ${options.workers} workers${options.combined ? `, ${options.combined} replyflow start` : ''}`,
  );
  const system = await System.start({
    server: options.server,
    receivers: options.receivers,
    workers: options.workers,
    combined: options.combined,
    env: {
      SEND_TIMEOUT: options.sendTimeout,
      WEBHOOK_START_DEADLINE_MS: String(options.startDeadlineMs),
    },
  });
  let keep = options.keep;
  try {
    const startAt = Date.now() + 2000;
    const plan = buildPlan(
      {
        events: options.events,
        dup: options.dup,
        sameMessageShare: options.sameMessageShare,
        ratePerSecond: options.ratePerSecond,
        laterMaxMs: options.laterMaxMs,
        receivers: options.combined + options.receivers,
        runId: options.seed.toString(36),
        startedAt: startAt,
      },
      random,
    );
    log(
      `sending ${plan.events.length} events in ${plan.deliveries.length} deliveries over ${plan.conversations.length} conversations (${(plan.sendWindowMs / 1000).toFixed(0)} s of first deliveries)`,
    );
    const sender = forkSender({
      deliveries: plan.deliveries,
      receiverUrls: system.receiverUrls,
      secret: SYSTEM_SECRET,
      startAt,
      giveUpMs: 15 * 60_000,
      concurrency: 64,
      requestTimeoutMs: 10_000,
    });
    const deadline = startAt + plan.sendWindowMs + options.laterMaxMs + options.quietTimeoutMs;
    const injector = new Injector(system, options, random, startAt, deadline);
    injector.start(plan);
    const ticker = setInterval(
      () =>
        log(
          `delivered ${sender.done()} of ${plan.deliveries.length}; ${Math.round(injector.progress() * 100)}% of messages settled; ${injector.log.length} injector actions`,
        ),
      15_000,
    );
    let senderReport: Awaited<typeof sender.report>;
    try {
      senderReport = await sender.report;
      const acked = Object.values(senderReport.events).filter((e) => e.acked).length;
      log(
        `senders done: ${acked} of ${plan.events.length} events acked; the injector goes on while work settles`,
      );
      await injector.finish();
    } catch (err) {
      sender.child.kill();
      throw err;
    } finally {
      clearInterval(ticker);
    }
    const acked = Object.values(senderReport.events).filter((e) => e.acked).length;
    await waitUntilQuiet(system, acked, options.quietTimeoutMs, log);
    const report = await reconcileRun({
      system,
      plan,
      sender: senderReport,
      injector: injector.log,
      startAt,
      startDeadlineMs: options.startDeadlineMs,
    });
    const ok = passed(report);
    keep ||= !ok;
    return {
      report,
      passed: ok,
      elapsedMs: Date.now() - began,
      dir: keep ? system.dir : undefined,
      sendWindowMs: plan.sendWindowMs,
    };
  } catch (err) {
    keep = true;
    throw new Error(`${errorMessage(err)} (logs and data kept in ${system.dir})`);
  } finally {
    await system.stop();
    if (!keep) system.remove();
  }
}
