// Runs the CLI for tests: in-process through run(argv, io) with captured output, a scripted
// confirmation and a scripted secret, or as the real `bin/replyflow.js` in a child process. Operator
// commands get what an operator's machine has: replyflow's URL (a receiver on the test servers) and
// the operator's token (REPLYFLOW_OPERATOR_TOKEN), no database, no Temporal address, no payload key.
// The admin's commands (`operator …`, `purge`) get the database as well.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../src/cli/main';
import type { ReceiverHandle } from '../../src/receiver';
import type { TestOperator } from '../support/operators';
import { startTestReceiver } from '../support/receiver';
import { database, devServer, stopWithServers } from '../support/servers';
import { testConfig } from '../support/system';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

let codecReceiver: Promise<ReceiverHandle> | undefined;

/** The receiver the CLI talks to (its operator API, its codec server): started once per run, stopped with the servers. */
export function cliCodecReceiver(): Promise<ReceiverHandle> {
  codecReceiver ??= (async () => {
    const receiver = await startTestReceiver({
      config: testConfig(),
      temporalAddress: (await devServer()).address,
    });
    stopWithServers(() => receiver.stop());
    return receiver;
  })();
  return codecReceiver;
}

/** A token file location of this run's own: the tests never read or write a real user's login. */
const TOKEN_DIR = mkdtempSync(path.join(os.tmpdir(), 'replyflow-cli-'));
/** An empty data dir: the CLI must not find a `replyflow start` of this checkout to lean on. */
const NO_DATA_DIR = mkdtempSync(path.join(os.tmpdir(), 'replyflow-cli-data-'));

/** Commands an admin runs where the database is reachable; every other command is an operator's. */
const ADMIN_COMMANDS = new Set(['operator', 'purge', 'tenant']);

/**
 * The environment a CLI user would set to reach the test system for `argv`; `as` puts that
 * operator's token in it. Only the admin's commands are given a database.
 */
async function cliEnv(
  argv: string[],
  as?: TestOperator,
  extra: Record<string, string | undefined> = {},
): Promise<Record<string, string>> {
  const receiver = await cliCodecReceiver();
  const env: Record<string, string | undefined> = {
    REPLYFLOW_URL: receiver.url,
    DATABASE_URL: ADMIN_COMMANDS.has(argv[0] ?? '') ? (await database()).url : undefined,
    REPLYFLOW_DATA_DIR: NO_DATA_DIR,
    REPLYFLOW_OPERATOR_TOKEN: as?.token,
    REPLYFLOW_OPERATOR_TOKEN_FILE: path.join(TOKEN_DIR, 'no-login-here'),
    LOG_LEVEL: 'silent',
    ...extra,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/**
 * What the admin adds to that environment: the admin credential (src/cli/admin.ts). Operators never
 * hold it, so only tests of the account and maintenance commands pass it.
 */
export async function adminEnv(
  extra: Record<string, string | undefined> = {},
): Promise<Record<string, string | undefined>> {
  return { REPLYFLOW_ADMIN_DATABASE_URL: (await database()).adminUrl, ...extra };
}

interface InProcessOptions {
  /** Acts as this operator (its token in REPLYFLOW_OPERATOR_TOKEN). */
  as?: TestOperator;
  env?: Record<string, string | undefined>;
  /** Answers the confirmation prompt; it may act first (change an item between plan and run). */
  confirm?: (question: string) => Promise<boolean>;
  /** What `replyflow login` reads as the token. */
  secret?: string;
}

/** `replyflow <argv>` in this process; resolves with its exit code and everything it printed. */
export async function cli(argv: string[], options: InProcessOptions = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    env: await cliEnv(argv, options.as, options.env),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    confirm: options.confirm ?? (async () => false),
    readSecret: async () => options.secret ?? '',
  });
  return { code, stdout, stderr };
}

/**
 * `replyflow <argv>` in this process with `env` as its whole environment (the test's files aside):
 * for commands that reach no server of this suite's (`routes check`, `routes try`), or a system the
 * test started itself.
 */
export async function cliOffline(argv: string[], env: Record<string, string> = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    env: { LOG_LEVEL: 'silent', ...env },
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    confirm: async () => false,
    readSecret: async () => '',
  });
  return { code, stdout, stderr };
}

/** `replyflow --json …` parsed; fails the test with the CLI's stderr when it did not exit 0. */
export async function cliJson<T>(argv: string[], options: InProcessOptions = {}): Promise<T> {
  const result = await cli([...argv, '--json'], options);
  if (result.code !== 0)
    throw new Error(`replyflow ${argv.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'replyflow.js');

/**
 * The real executable, as an operator runs it; `input` is written to its stdin. With `firstLineOnly`
 * its reader leaves after the first line, closing the pipe as `replyflow … | head -n 1` does.
 */
export async function cliProcess(
  argv: string[],
  options: {
    as?: TestOperator;
    env?: Record<string, string | undefined>;
    input?: string;
    firstLineOnly?: boolean;
  } = {},
): Promise<CliResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  // What the test process has must not help the CLI: it does without a key, a database and Temporal.
  for (const name of ['REPLYFLOW_ENCRYPTION_KEY', 'DATABASE_URL', 'TEMPORAL_ADDRESS']) delete childEnv[name];
  Object.assign(childEnv, await cliEnv(argv, options.as, options.env));
  const child = spawn(process.execPath, [BIN, ...argv], { env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end(options.input ?? '');
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (options.firstLineOnly && stdout.includes('\n')) {
      stdout = stdout.slice(0, stdout.indexOf('\n') + 1);
      child.stdout.destroy();
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exit) => resolve(exit ?? 1));
  });
  return { code, stdout, stderr };
}
