// The real `temporal` CLI against the run's dev server, as anyone with access to Temporal can use it:
// attack and operations tests start, signal, reset or terminate workflows with it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findTemporalCli } from '../../src/temporal/binaries';
import { devServer } from './servers';

const run = promisify(execFile);

/** Runs `temporal <args>` against the dev server: whether it succeeded, and what it printed. */
export async function temporalCli(args: string[]): Promise<{ ok: boolean; out: string }> {
  const { address } = await devServer();
  return run(findTemporalCli(), [...args, '--address', address, '--namespace', 'default'], {
    timeout: 30_000,
  }).then(
    ({ stdout, stderr }) => ({ ok: true, out: `${stdout}${stderr}` }),
    (err: { stdout?: string; stderr?: string }) => ({ ok: false, out: `${err.stdout}${err.stderr}` }),
  );
}
