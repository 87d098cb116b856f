// Runs the CLI for tests: in-process through run(argv, io) with captured output and a scripted
// confirmation, or as the real `bin/replyflow.js` in a child process; both against the test servers.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { run } from '../../src/cli/main';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../helpers/servers';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Roles the suites use: each person holds what their job needs, and no one approves their own resend. */
export const TEST_ROLES =
  'alice=mark-sent+resend+discard+reprocess+conversation,bob=approve,dave=*,carol=purge,*=view';

/** The environment a CLI user would set to reach the test servers. */
export async function cliEnv(
  extra: Record<string, string | undefined> = {},
): Promise<Record<string, string>> {
  const [server, db] = await Promise.all([devServer(), database()]);
  const env: Record<string, string | undefined> = {
    TEMPORAL_ADDRESS: server.address,
    DATABASE_URL: db.url,
    REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    REPLYFLOW_ROLES: TEST_ROLES,
    LOG_LEVEL: 'silent',
    ...extra,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

export interface InProcessOptions {
  env?: Record<string, string | undefined>;
  /** Answers the confirmation prompt; it may act first (change an item between plan and run). */
  confirm?: (question: string) => Promise<boolean>;
}

/** `replyflow <argv>` in this process; resolves with its exit code and everything it printed. */
export async function cli(argv: string[], options: InProcessOptions = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    env: await cliEnv(options.env),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    confirm: options.confirm ?? (async () => false),
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

/** The real executable, as an operator runs it. */
export async function cliProcess(
  argv: string[],
  env: Record<string, string | undefined> = {},
): Promise<CliResult> {
  const childEnv = { ...process.env, ...(await cliEnv(env)) };
  const child = spawn(process.execPath, [BIN, ...argv], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
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
