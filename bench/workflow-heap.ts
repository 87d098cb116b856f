// `npm run bench:workflow-heap`: the heap one cached workflow costs before its first command, in the
// SDK's reusable V8 context as `replyflow start` runs it. The context keeps one module cache per run,
// so each run executes every module its start loads for itself (the module state); the history a run
// holds comes on top. Creates `--runs` runs of `--type` from the bundle `replyflow start` uses and
// prints the heap they hold after a full GC, per run. Uses the SDK's internal workflow creator: the
// figure is the one the worker's workflow thread pays, without a server.
import { parseArgs } from 'node:util';
import { parseWorkflowCode } from '@temporalio/worker/lib/worker';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';
import { PROJECT_ROOT } from '../src/temporal/binaries';
import { workflowBundleFor } from '../src/temporal/workflow-bundle';

const gc = globalThis.gc;

async function main() {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '200' },
      type: { type: 'string', default: 'handleEvent' },
    },
  });
  if (!gc) throw new Error('run with node --expose-gc (npm run bench:workflow-heap does)');
  const runs = Number(values.runs);
  const bundle = await workflowBundleFor(`${PROJECT_ROOT}/workflows`);
  if (!('codePath' in bundle) || !bundle.codePath) throw new Error('the workflow bundle could not be cached');
  const { readFileSync } = await import('node:fs');
  const parsed = parseWorkflowCode(readFileSync(bundle.codePath, 'utf8'), bundle.codePath);
  const creator = await ReusableVMWorkflowCreator.create(parsed, 5_000, new Set(), undefined);
  gc();
  const before = process.memoryUsage().heapUsed;
  const held: unknown[] = [];
  for (let i = 0; i < runs; i++) {
    const runId = `bench-run-${i}`;
    const now = new Date();
    held.push(
      await creator.createWorkflow({
        info: {
          runId,
          firstExecutionRunId: runId,
          workflowId: `bench-${i}`,
          workflowType: values.type,
          taskQueue: 'bench',
          namespace: 'default',
          attempt: 1,
          historyLength: 1,
          historySize: 0,
          continueAsNewSuggested: false,
          startTime: now,
          runStartTime: now,
          searchAttributes: {},
          typedSearchAttributes: [],
          memo: {},
          priority: {},
          unsafe: { isReplaying: false, now: Date.now },
        },
        randomnessSeed: [1, 2],
        now: now.getTime(),
        showStackTraceSources: false,
        // biome-ignore lint/suspicious/noExplicitAny: the internal creator's options, filled as the worker fills them
      } as any),
    );
  }
  gc();
  const perRun = (process.memoryUsage().heapUsed - before) / runs;
  console.log(
    `${runs} runs of ${values.type} created: ${(perRun / 1024).toFixed(0)} KiB of heap each (module state, before any history)`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
