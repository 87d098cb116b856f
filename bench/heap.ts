// `npm run bench:heap`: what a heap limit for `replyflow start` costs and saves. For each setting, on a
// fresh system as `npm start` runs it (one `replyflow start` process, embedded PostgreSQL, the dev
// server on its file store, the sandbox target): its RSS fresh; a burst of `--burst` events over
// `--conversations` conversations at concurrency `--concurrency` (acks and replies a second, RSS
// after); then `--held` workflows held by a blind target (RSS with them). The settings run one after
// the other in one run, so that their figures compare on the same machine at the same time:
// `--settings "no-options;npm-start;--max-old-space-size=192 WORKER_MAX_CACHED_WORKFLOWS=50"`
// (with `=` when the first setting begins with `--`, which node's parseArgs would take for an option:
// `"--settings=--max-old-space-size=192 WORKER_MAX_CACHED_WORKFLOWS=64;npm-start"`)
// (`npm-start`: the Node.js options and environment package.json's start script gives it; NAME=value: a
// setting, also after `npm-start`, e.g. `npm-start TEMPORAL_GRPC_COMPRESSION=gzip`).
import os from 'node:os';
import { parseArgs } from 'node:util';
import { rssMiB, System } from './chaos/system';
import { Bench, spread } from './system';

/** Node.js options and settings (NAME=value) of the `replyflow start` process. */
interface Setting {
  name: string;
  /** Undefined: those npm start gives it (package.json). */
  nodeArgs?: string[];
  env: Record<string, string>;
}

async function measure(
  setting: Setting,
  opts: { burst: number; conversations: number; concurrency: number; held: number },
) {
  const system = await System.start({
    combined: 1,
    receivers: 0,
    workers: 0,
    temporalStore: 'file',
    workerNodeArgs: setting.nodeArgs,
    workerEnv: setting.env,
  });
  try {
    const pid = system.combined[0]!.pid;
    const freshMiB = rssMiB(pid);
    const bench = new Bench(system);
    const burst = spread('h', opts.burst, opts.conversations);
    const flood = await bench.flood(burst.ids, burst.messages, opts.concurrency);
    const afterBurstMiB = rssMiB(pid);
    const memory = await bench.heldMemory(opts.held);
    return { freshMiB, flood, afterBurstMiB, heldMiB: memory.heldMiB, held: memory.held };
  } finally {
    await system.stop();
    system.remove();
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      settings: {
        type: 'string',
        default: 'default;--max-old-space-size=192 WORKER_MAX_CACHED_WORKFLOWS=200',
      },
      burst: { type: 'string', default: '2000' },
      conversations: { type: 'string', default: '200' },
      concurrency: { type: 'string', default: '32' },
      held: { type: 'string', default: '1000' },
    },
  });
  const settings: Setting[] = values.settings.split(';').map((s) => {
    const name = s.trim();
    const words = name === 'no-options' ? [] : name.split(/\s+/);
    const env = words.filter((w) => /^[A-Z_]+=/.test(w)).map((w) => w.split('=') as [string, string]);
    const nodeArgs = words.filter((w) => w.startsWith('--'));
    return { name, nodeArgs: words[0] === 'npm-start' ? undefined : nodeArgs, env: Object.fromEntries(env) };
  });
  const opts = {
    burst: Number(values.burst),
    conversations: Number(values.conversations),
    concurrency: Number(values.concurrency),
    held: Number(values.held),
  };
  console.log(
    `machine: ${os.cpus().length} CPUs, node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const rows: string[] = [];
  for (const setting of settings) {
    console.log(
      `${setting.name}: ${opts.burst} events over ${opts.conversations} conversations, then ${opts.held} held…`,
    );
    const m = await measure(setting, opts);
    rows.push(
      `| ${setting.name} | ${m.freshMiB.toFixed(0)} MiB | ${m.flood.acksPerSecond.toFixed(1)}/s, ${m.flood.acks.unavailable} × 503 | ${m.flood.repliesPerSecond.toFixed(1)}/s (all in ${m.flood.allRepliedS.toFixed(1)} s) | ${m.afterBurstMiB.toFixed(0)} MiB | ${m.held} held: ${m.heldMiB.toFixed(0)} MiB |`,
    );
    console.log(rows.at(-1));
  }
  console.log(
    `\nload average at the end ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(
    '| setting | fresh RSS | burst acks | burst replies | RSS after the burst | RSS with the held |',
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const row of rows) console.log(row);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
