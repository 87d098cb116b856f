// The webhook senders of the chaos run, in a process of their own that talks to the system only over
// HTTP. Each delivery is signed when it is sent and retried as providers retry: after 503 (honouring
// Retry-After), a 5xx, a timeout or a refused or reset connection (a `replyflow start` SIGKILLed and
// not yet back), until it is acknowledged or the give-up time passes. A 4xx is final. Retries go to
// the same receiver URL, as a provider keeps one URL per subscription: a delivery to a killed process
// waits for it to come back on its port. Started by `forkSender`, which passes the plan over IPC.

import { type ChildProcess, fork } from 'node:child_process';
import { errorMessage } from '../../src/failures';
import { signStandardWebhook } from '../../src/providers/standard-webhooks';
import type { Delivery } from './plan';

interface SenderJob {
  deliveries: Delivery[];
  receiverUrls: string[];
  secret: string;
  /** Epoch ms at which delivery offsets start. */
  startAt: number;
  /** A delivery not acknowledged this long after its first attempt is given up. */
  giveUpMs: number;
  /** Requests in flight at most (a provider's delivery workers). */
  concurrency: number;
  /** How long one request may take before the sender treats it as failed and retries. */
  requestTimeoutMs: number;
}

interface EventTally {
  /** Answers by status (`202`, `200`, `503`, …) and transport failures (`error`, `timeout`). */
  answers: Record<string, number>;
  acked: boolean;
  /** A 4xx or a give-up: the sender stopped trying. */
  finalFailure?: string;
}

export interface SenderReport {
  events: Record<string, EventTally>;
  deliveries: number;
  requests: number;
  elapsedMs: number;
  /**
   * When each 503 answer came (epoch ms) and from which receiver (an index into the receiver URLs): a
   * receiver may say so only while Temporal or PostgreSQL is disrupted.
   */
  unavailable: { at: number; receiver: number }[];
  /** When each request failed without an answer (epoch ms): refused, reset or timed out. */
  failedAt: number[];
}

type SenderMessage =
  | { kind: 'progress'; done: number; total: number }
  | { kind: 'done'; report: SenderReport };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runJob(job: SenderJob, progress: (done: number) => void): Promise<SenderReport> {
  const events: Record<string, EventTally> = {};
  const tally = (eventId: string) => {
    events[eventId] ??= { answers: {}, acked: false };
    return events[eventId]!;
  };
  let requests = 0;
  let done = 0;
  const unavailable: SenderReport['unavailable'] = [];
  const failedAt: number[] = [];

  async function deliver(delivery: Delivery): Promise<void> {
    const url = `${job.receiverUrls[delivery.receiver]}/webhooks/sandbox`;
    const entry = tally(delivery.eventId);
    const giveUpAt = Date.now() + job.giveUpMs;
    for (let attempt = 1; ; attempt++) {
      requests += 1;
      let outcome: string;
      let retryAfterMs: number | undefined;
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: signStandardWebhook(job.secret, delivery.eventId, delivery.body),
          body: delivery.body,
          signal: AbortSignal.timeout(job.requestTimeoutMs),
        });
        await response.arrayBuffer();
        outcome = String(response.status);
        if (response.status === 503) unavailable.push({ at: Date.now(), receiver: delivery.receiver });
        const retryAfter = Number(response.headers.get('retry-after'));
        if (retryAfter > 0) retryAfterMs = retryAfter * 1000;
      } catch (err) {
        outcome = (err as Error).name === 'TimeoutError' ? 'timeout' : 'error';
        failedAt.push(Date.now());
      }
      entry.answers[outcome] = (entry.answers[outcome] ?? 0) + 1;
      const status = Number(outcome);
      if (status >= 200 && status < 300) {
        entry.acked = true;
        return;
      }
      if (status >= 400 && status < 500) {
        entry.finalFailure = `answered ${status}`;
        return;
      }
      if (Date.now() >= giveUpAt) {
        entry.finalFailure = `gave up after ${attempt} attempts (last: ${outcome})`;
        return;
      }
      // Providers back off; this one waits at most 5 s so a run does not idle, plus jitter.
      const backoff = Math.min(retryAfterMs ?? 500 * 2 ** (attempt - 1), 5000);
      await sleep(backoff * (0.8 + 0.4 * Math.random()));
    }
  }

  const began = Date.now();
  await sleep(Math.max(0, job.startAt - Date.now()));
  let next = 0;
  let inFlight = 0;
  const all: Promise<void>[] = [];
  const ticker = setInterval(() => progress(done), 1000);
  try {
    while (next < job.deliveries.length) {
      const delivery = job.deliveries[next]!;
      const wait = job.startAt + delivery.atMs - Date.now();
      if (wait > 0) await sleep(Math.min(wait, 50));
      else if (inFlight >= job.concurrency) await sleep(5);
      else {
        next += 1;
        inFlight += 1;
        all.push(
          deliver(delivery).finally(() => {
            inFlight -= 1;
            done += 1;
          }),
        );
      }
    }
    await Promise.all(all);
  } finally {
    clearInterval(ticker);
  }
  return {
    events,
    deliveries: job.deliveries.length,
    requests,
    elapsedMs: Date.now() - began,
    unavailable,
    failedAt,
  };
}

interface SenderProcess {
  child: ChildProcess;
  /** Deliveries finished so far (acknowledged or given up). */
  done(): number;
  report: Promise<SenderReport>;
}

/** Starts the senders in a child process (through tsx, whoever runs this module) and hands them the job. */
export function forkSender(job: SenderJob): SenderProcess {
  const child = fork(__filename, ['--sender'], {
    execArgv: ['--require', require.resolve('tsx/cjs')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let done = 0;
  const report = new Promise<SenderReport>((resolve, reject) => {
    child.on('message', (message: SenderMessage) => {
      if (message.kind === 'progress') done = message.done;
      else resolve(message.report);
    });
    child.once('exit', (code) => reject(new Error(`the sender process exited (${code}) before its report`)));
  });
  child.send(job);
  return { child, done: () => done, report };
}

if (process.argv.includes('--sender')) {
  process.once('message', (job: SenderJob) => {
    runJob(job, (done) => process.send?.({ kind: 'progress', done, total: job.deliveries.length }))
      .then((report) => {
        const total = job.deliveries.length;
        process.send?.({ kind: 'progress', done: total, total });
        process.send?.({ kind: 'done', report }, () => process.exit(0));
      })
      .catch((err) => {
        console.error(`sender: ${errorMessage(err)}`);
        process.exit(1);
      });
  });
}
