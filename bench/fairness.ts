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
import { System } from './chaos/system';
import { addPhases, noPhases, type Phases, phasesOf, showPhases } from './phases';
import { Bench, envOption, percentile, spread } from './system';

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
    const phasesOfWait = (w: { conversationId: string; sent: number; ms: number }) =>
      phasesOf(system, `webhook:sandbox:evt_${w.conversationId}`, w);
    const slow = [];
    for (const w of waits.filter((w) => w.ms > bound))
      slow.push({ atS: (w.sent - firstSent) / 1000, ms: w.ms, phases: await phasesOfWait(w) });
    let withinPhases = noPhases();
    const within = waits.filter((w) => w.ms <= bound);
    for (const w of within) withinPhases = addPhases(withinPhases, await phasesOfWait(w));
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
