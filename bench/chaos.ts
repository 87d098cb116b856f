// `npm run chaos`: fault injection at scale. Starts the whole system (embedded PostgreSQL, a Temporal
// dev server on SQLite or with `--server cluster` two nodes of Temporal's own server on the
// PostgreSQL, a receiver, workers and a `replyflow start` as processes), delivers signed sandbox
// webhooks with duplicates from a separate process while workers and the `replyflow start` are
// SIGKILLed (it also while a workflow task it started eagerly is in flight), the target misbehaves
// and Temporal (on a cluster: a node, or both in turn) and PostgreSQL restart, then prints one table.
// Exits 1 when a must-be-0 row is not 0.
//   npm run chaos -- --events 200 --dup 3 --seed 42
//   npm run chaos -- --server cluster --temporal-fault rolling-restart
import { parseArgs } from 'node:util';
import { parseDuration } from '../src/config';
import { errorMessage } from '../src/failures';
import type { TemporalFault } from './chaos/injector';
import { formatInjectorLog, formatReport } from './chaos/report';
import { type ChaosOptions, DEFAULT_CHAOS, newSeed, runChaos } from './chaos/run';

/** What breaks in Temporal, by server: the default first. */
const TEMPORAL_FAULTS = {
  'dev-server': ['restart', 'none'],
  cluster: ['kill-node', 'rolling-restart', 'none'],
} as const;

function options(): ChaosOptions {
  const d = DEFAULT_CHAOS;
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: String(d.events) },
      dup: { type: 'string', default: String(d.dup) },
      'same-message': { type: 'string', default: String(d.sameMessageShare) },
      rate: { type: 'string', default: String(d.ratePerSecond) },
      'later-max': { type: 'string', default: `${d.laterMaxMs / 1000}s` },
      receivers: { type: 'string', default: String(d.receivers) },
      combined: { type: 'string', default: String(d.combined) },
      'combined-kills': { type: 'string', default: String(d.combinedKills) },
      workers: { type: 'string', default: String(d.workers) },
      'send-timeout': { type: 'string', default: d.sendTimeout },
      'start-deadline': { type: 'string', default: `${d.startDeadlineMs}ms` },
      'faults-per-kind': { type: 'string', default: String(d.faultsPerKind) },
      'inflight-kills': { type: 'string', default: String(d.inflightKills) },
      'kill-every': { type: 'string', default: `${d.killEveryMs / 1000}s` },
      server: { type: 'string', default: d.server },
      'temporal-fault': { type: 'string' },
      'no-temporal-restart': { type: 'boolean', default: false },
      'no-postgres-restart': { type: 'boolean', default: false },
      down: { type: 'string', default: `${d.downMs}ms` },
      'disrupt-at': { type: 'string' },
      'quiet-timeout': { type: 'string', default: `${d.quietTimeoutMs / 60_000}m` },
      seed: { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(
      'npm run chaos -- [--events N] [--dup N] [--same-message SHARE] [--rate PER_S] [--later-max 120s]\n' +
        '  [--receivers N] [--workers N] [--combined N] [--combined-kills N] [--send-timeout 10s]\n' +
        '  [--start-deadline 1500ms] [--faults-per-kind N] [--inflight-kills N] [--kill-every 20s|0s]\n' +
        '  [--server dev-server|cluster] [--temporal-fault restart|kill-node|rolling-restart|none]\n' +
        '  [--no-temporal-restart] [--no-postgres-restart] [--down 3000ms] [--disrupt-at 20s]\n' +
        '  [--quiet-timeout 20m] [--seed N] [--keep]\n\n' +
        `Processes: --receivers receivers (default ${d.receivers}), --workers workers (${d.workers}) and --combined\n` +
        `\`replyflow start\` processes (${d.combined}: receiver and worker in one, eager starts). --kill-every: the\n` +
        'mean time between SIGKILLs of a random worker or `replyflow start`; --inflight-kills: SIGKILLs of\n' +
        'the process whose send is in flight; --combined-kills: SIGKILLs of a `replyflow start` while a\n' +
        `workflow task it started eagerly is in flight (${d.combinedKills}, spread over the first deliveries; killed anyway\n` +
        'if none is seen). Each killed process is started again (a `replyflow start` on its port); senders retry\n' +
        'to the same URL.',
    );
    process.exit(0);
  }
  const problems: string[] = [];
  const count = (name: string, value: string, min: number) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < min) problems.push(`--${name} must be a number ≥ ${min}`);
    return n;
  };
  const duration = (name: string, value: string) => {
    const ms = parseDuration(value);
    if (ms === undefined) problems.push(`--${name} must be a duration such as 500ms, 30s or 2m`);
    return ms ?? 0;
  };
  const server = values.server;
  let temporalFault: TemporalFault = 'none';
  if (server !== 'dev-server' && server !== 'cluster')
    problems.push('--server must be dev-server or cluster');
  else {
    const allowed: readonly string[] = TEMPORAL_FAULTS[server];
    const asked = values['no-temporal-restart'] ? 'none' : (values['temporal-fault'] ?? allowed[0]!);
    if (allowed.includes(asked)) temporalFault = asked as TemporalFault;
    else problems.push(`--temporal-fault on the ${server} must be one of ${allowed.join(', ')}`);
  }
  const parsed: ChaosOptions = {
    server: server === 'cluster' ? 'cluster' : 'dev-server',
    events: count('events', values.events, 1),
    dup: count('dup', values.dup, 1),
    sameMessageShare: count('same-message', values['same-message'], 0),
    ratePerSecond: count('rate', values.rate, 0.1),
    laterMaxMs: duration('later-max', values['later-max']),
    receivers: count('receivers', values.receivers, 1),
    workers: count('workers', values.workers, 2),
    combined: count('combined', values.combined, 0),
    combinedKills: count('combined-kills', values['combined-kills'], 0),
    sendTimeout: values['send-timeout'],
    startDeadlineMs: duration('start-deadline', values['start-deadline']),
    faultsPerKind: count('faults-per-kind', values['faults-per-kind'], 0),
    inflightKills: count('inflight-kills', values['inflight-kills'], 0),
    killEveryMs: duration('kill-every', values['kill-every']),
    temporalFault,
    disruptAtMs:
      values['disrupt-at'] === undefined ? undefined : duration('disrupt-at', values['disrupt-at']),
    restartPostgres: !values['no-postgres-restart'],
    downMs: duration('down', values.down),
    quietTimeoutMs: duration('quiet-timeout', values['quiet-timeout']),
    seed: values.seed === undefined ? newSeed() : count('seed', values.seed, 0),
    keep: values.keep,
    log: (line) => console.log(line),
  };
  duration('send-timeout', values['send-timeout']);
  if (parsed.sameMessageShare >= 1) problems.push('--same-message must be below 1');
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    process.exit(2);
  }
  return parsed;
}

async function main(): Promise<void> {
  const opts = options();
  const { report, passed, elapsedMs, dir } = await runChaos(opts);
  const title =
    `chaos run: ${opts.events} events ×${opts.dup}, ${opts.sameMessageShare * 100}% second ids, ` +
    `seed ${opts.seed}, ${(elapsedMs / 1000).toFixed(0)} s`;
  console.log(`\ninjector log:\n${formatInjectorLog(report.injector)}\n`);
  console.log(formatReport(report, title));
  if (dir) console.log(`\nlogs and data kept in ${dir}`);
  console.log(passed ? '\nPASS' : '\nFAIL: a must-be-0 row is not 0');
  process.exitCode = passed ? 0 : 1;
}

main().catch((err) => {
  console.error(`chaos: ${errorMessage(err)}`);
  process.exitCode = 1;
});
