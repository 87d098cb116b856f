// The workflow bundle a worker runs, built by webpack in a child process and kept on disk. Bundling in
// the worker's own process grew its heap by ~110 MiB that V8 never gives back (measured: 139 → 260 MiB
// RSS, 248 after a GC), a third of the memory `replyflow start` may use with 1,000 held workflows
// (docs/benchmarks.md). The child runs this same file through tsx, prints the code on stdout and exits,
// and its memory with it. The code is kept under node_modules/.cache, named by a hash of everything it
// is built from (our sources, the lockfile), so each later start, restart and test process loads it
// instead of running webpack again (~10 s of CPU each).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type WorkflowBundle, type WorkflowBundleOption } from '@temporalio/worker';
import { PROJECT_ROOT } from './binaries';
import { WorkflowBundleError } from './errors';

const CHILD_FLAG = '--replyflow-bundle-child';
/** Webpack's output for our workflows is ~2 MiB. */
const MAX_BUNDLE_BYTES = 64 * 2 ** 20;

/**
 * The workflow interceptors bundled with the workflows, when `workflowsPath` has them: the trace
 * propagation of workflows/otel-interceptors.ts, which does nothing for a run started untraced.
 */
const INTERCEPTOR_MODULES = ['otel-interceptors.ts'];

const BUNDLE_CACHE_DIR = path.join(PROJECT_ROOT, 'node_modules', '.cache', 'replyflow');
const PREFIX = 'workflow-bundle-';

/** Every .ts file under `dir`, sorted. */
function sources(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) return sources(full);
      return name.endsWith('.ts') ? [full] : [];
    });
}

/**
 * A hash of what the bundle of `workflowsPath` is built from: its files, src/ (workflows import from
 * it) and package-lock.json (the SDK and webpack; package.json where there is no lockfile). Any edit
 * gives another name, so a stale bundle is never loaded.
 */
export function bundleKey(workflowsPath: string): string {
  const hash = createHash('sha256');
  const files = [...sources(workflowsPath), ...sources(path.join(PROJECT_ROOT, 'src'))];
  // The image has no lockfile: its package.json pins what `npm ci` installed there.
  const lockfile = ['package-lock.json', 'package.json']
    .map((name) => path.join(PROJECT_ROOT, name))
    .find((file) => existsSync(file));
  for (const file of [...new Set(files), ...(lockfile ? [lockfile] : [])]) {
    hash.update(path.relative(PROJECT_ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 20);
}

/**
 * The bundle of `workflowsPath`: from the cache when built before from the same sources, else built
 * in a child process and cached (older bundles removed). A cache that cannot be written (a read-only
 * install) costs only the reuse.
 */
export async function workflowBundleFor(
  workflowsPath: string,
  cacheDir = BUNDLE_CACHE_DIR,
): Promise<WorkflowBundleOption> {
  const codePath = path.join(cacheDir, `${PREFIX}${bundleKey(workflowsPath)}.js`);
  try {
    if (statSync(codePath).isFile()) return { codePath };
  } catch {
    // Not built yet from these sources.
  }
  const { code } = await bundleOutOfProcess(workflowsPath);
  try {
    mkdirSync(cacheDir, { recursive: true });
    // Written whole, then renamed: a process starting beside this one never reads half a bundle.
    const partial = `${codePath}.${process.pid}.partial`;
    writeFileSync(partial, code);
    renameSync(partial, codePath);
    for (const name of readdirSync(cacheDir))
      if (name.startsWith(PREFIX) && path.join(cacheDir, name) !== codePath && !name.endsWith('.partial'))
        rmSync(path.join(cacheDir, name), { force: true });
    return { codePath };
  } catch {
    return { code };
  }
}

/** Builds the bundle of `workflowsPath` in a child process. */
function bundleOutOfProcess(workflowsPath: string): Promise<WorkflowBundle> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--require', require.resolve('tsx/cjs'), __filename, CHILD_FLAG, workflowsPath],
      { maxBuffer: MAX_BUNDLE_BYTES, encoding: 'utf8' },
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
  const workflowInterceptorModules = INTERCEPTOR_MODULES.map((name) =>
    path.resolve(workflowsPath, name),
  ).filter((file) => existsSync(file));
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.resolve(workflowsPath),
    workflowInterceptorModules,
    // Loaded once for the whole context instead of once per run: the SDK's reusable context keeps a
    // module cache per run, so every cached run held its own copy of our workflow modules and of the
    // SDK's (66 KiB of heap per run, 18 KiB preloaded; 1.9 ms of CPU to create a run, 1.2 preloaded;
    // docs/benchmarks.md, "Our modules loaded once"). Safe because none of them keeps state at module
    // level (a run's state lives in its function's scope and its objects), and the SDK deep-freezes
    // what is preloaded, so a module that tried would throw rather than leak between runs.
    // OpenTelemetry stays per run and only for a traced run (workflows/otel-interceptors.ts).
    preloadModules: [path.resolve(workflowsPath), ...workflowInterceptorModules],
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: toStderr, error: toStderr },
  });
  process.stdout.write(withoutSourcesContent(code));
}

const INLINE_MAP = '//# sourceMappingURL=data:application/json;';

/**
 * The bundle with its inline source map kept for stack traces but without the sources' text (1.3 MB
 * of its 1.8 MB). The SDK parses the map in the worker's main thread and again in its workflow thread,
 * and reads the text only for the enhanced stack-trace query with `showStackTraceSources`, which the
 * worker leaves off; stack traces still name each file, line and column. Measured apart: 5.3 MiB less
 * heap in a thread that parses and queries the map (docs/benchmarks.md).
 */
function withoutSourcesContent(code: string): string {
  const at = code.lastIndexOf(INLINE_MAP);
  const comma = at < 0 ? -1 : code.indexOf('base64,', at);
  if (comma < 0) return code;
  const map = JSON.parse(Buffer.from(code.slice(comma + 'base64,'.length).trim(), 'base64').toString('utf8'));
  delete map.sourcesContent;
  const encoded = Buffer.from(JSON.stringify(map)).toString('base64');
  return `${code.slice(0, at)}${INLINE_MAP}charset=utf-8;base64,${encoded}\n`;
}

// `node --require tsx/cjs src/temporal/workflow-bundle.ts --cache`: builds the cache ahead (the image
// does, its code being read-only at run time).
if (require.main === module && process.argv[2] === '--cache')
  workflowBundleFor(path.join(PROJECT_ROOT, 'workflows')).then(
    (bundle) => {
      if ('codePath' in bundle) return;
      console.error(`could not write the bundle cache under ${BUNDLE_CACHE_DIR}`);
      process.exitCode = 1;
    },
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exitCode = 1;
    },
  );

if (require.main === module && process.argv[2] === CHILD_FLAG)
  child(process.argv[3]!).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  });
