// The workflow bundle a worker runs, built by webpack in a child process. Bundling in the worker's own
// process grew its heap by ~110 MiB that V8 never gives back (measured: 139 → 260 MiB RSS, 248 after
// a GC), a third of the memory `replyflow start` may use with 1,000 held workflows (docs/benchmarks.md).
// The child runs this same file through tsx, prints the code on stdout and exits, and its memory with it.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';

/** Thrown when the bundle cannot be built: webpack's own message, from the child. */
export class WorkflowBundleError extends Error {
  override name = 'WorkflowBundleError';
}

const CHILD_FLAG = '--replyflow-bundle-child';
/** Webpack's output for our workflows is ~2 MiB. */
const MAX_BUNDLE_BYTES = 64 * 2 ** 20;

/** Builds the bundle of `workflowsPath` in a child process. */
export function bundleOutOfProcess(workflowsPath: string): Promise<WorkflowBundle> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--require', require.resolve('tsx/cjs'), __filename, CHILD_FLAG, workflowsPath],
      { maxBuffer: MAX_BUNDLE_BYTES, encoding: 'utf8', env: process.env },
      (err, stdout, stderr) => {
        if (err) {
          // Webpack's verdicts ("Module not found: …"), else the end of what the child printed.
          const lines = stderr.trim().split('\n');
          const verdicts = lines.filter((line) => /error|not found/i.test(line)).slice(0, 10);
          const why = (verdicts.length > 0 ? verdicts : lines.slice(-15)).join('\n') || err.message;
          reject(
            new WorkflowBundleError(`the workflow bundle could not be built (${workflowsPath}):\n${why}`),
          );
        } else resolve({ code: stdout });
      },
    );
  });
}

async function child(workflowsPath: string): Promise<void> {
  const quiet = () => {};
  // Webpack's errors (a module not found, a syntax error) go to stderr: the parent's message quotes them.
  const toStderr = (message: string, meta?: unknown) =>
    console.error(meta === undefined ? message : `${message} ${JSON.stringify(meta)}`);
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.resolve(workflowsPath),
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: toStderr, error: toStderr },
  });
  process.stdout.write(code);
}

if (require.main === module && process.argv[2] === CHILD_FLAG)
  child(process.argv[3]!).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  });
