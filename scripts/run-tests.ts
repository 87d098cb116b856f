// `npm test`: the whole suite as two mocha runs side by side, each with its own servers (dev server,
// time-skipping server, PostgreSQL), because most tests wait on real time (leases, Retry-After, a
// browser) rather than on the CPU: one run alone took 11 minutes on 2 cores, mostly waiting. Files
// are split by folder, so that the time-skipping tests and the browsers share the first run. Each
// line is prefixed with its run; the last lines are the summed counts in mocha's own words
// ("N passing", "N failing"), which .ci/run reads. With file arguments it is one plain mocha run.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = path.resolve(__dirname, '..');
const MOCHA = require.resolve('mocha/bin/mocha.js');
const REPORTER = path.join(__dirname, 'file-timing-reporter.ts');
const FILE_TIME_PREFIX = '[file-time] ';
/** Each file's wall time (ms), from the reporter, for the list of the slowest at the end. */
const fileTimes: { run: string; file: string; ms: number }[] = [];
/**
 * The folders of the first run: the time-skipping server's users, the browsers, and enough besides to
 * balance the two (measured 2026-12-02: 8 and 6 minutes with test/integration/lease-stall.test.ts in
 * the first run, so it went back to the second).
 */
const FIRST = new Set(['browser', 'targets', 'conformance', 'workflow', 'cli', 'deploy']);
function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return testFiles(full);
    return name.endsWith('.test.ts') ? [path.relative(ROOT, full)] : [];
  });
}

interface Counts {
  passing: number;
  failing: number;
  pending: number;
}

/** Runs mocha on `files`, prefixing its lines; resolves with its counts and exit code. */
function runMocha(label: string, files: string[]): Promise<Counts & { code: number }> {
  const counts: Counts = { passing: 0, failing: 0, pending: 0 };
  const child = spawn(process.execPath, [MOCHA, '--reporter', REPORTER, ...files], {
    cwd: ROOT,
    env: { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      if (line.startsWith(FILE_TIME_PREFIX)) {
        const [ms, file] = line.slice(FILE_TIME_PREFIX.length).split(' ');
        fileTimes.push({ run: label, file: path.relative(ROOT, file ?? ''), ms: Number(ms) });
        return;
      }
      const count = /^ +(\d+) (passing|failing|pending)/.exec(line);
      if (count) counts[count[2] as keyof Counts] = Number(count[1]);
      process.stdout.write(`[${label}] ${line}\n`);
    });
  }
  return new Promise((resolve) => {
    child.on('close', (code) => resolve({ ...counts, code: code ?? 1 }));
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.length > 0) return (await runMocha('1', args)).code;
  const files = testFiles(path.join(ROOT, 'test')).filter((f) => !f.startsWith('test/cluster/'));
  const first = files.filter((f) => FIRST.has(f.split(path.sep)[1]!));
  const second = files.filter((f) => !first.includes(f));
  const started = Date.now();
  const runs = await Promise.all([runMocha('1', first), runMocha('2', second)]);
  const sum = (key: keyof Counts) => runs.reduce((n, r) => n + r[key], 0);
  const minutes = Math.round((Date.now() - started) / 60_000);
  // A run that crashed before its summary counts as one failure.
  const crashed = runs.filter((r) => r.code !== 0 && r.failing === 0).length;
  if (fileTimes.length > 0) {
    console.log('\n  slowest files (wall time, hooks included):');
    for (const { run, file, ms } of fileTimes.sort((a, b) => b.ms - a.ms).slice(0, 12))
      console.log(`    [${run}] ${(ms / 1000).toFixed(0).padStart(4)} s  ${file}`);
  }
  console.log(`\n  ${sum('passing')} passing (${minutes}m)`);
  if (sum('pending') > 0) console.log(`  ${sum('pending')} pending`);
  if (sum('failing') + crashed > 0) console.log(`  ${sum('failing') + crashed} failing`);
  return runs.some((r) => r.code !== 0) ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err);
    process.exitCode = 1;
  },
);
