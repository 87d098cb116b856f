// `npm run bench:workflow-heap`: what a workflow run costs the worker before its first command, in the
// SDK's reusable V8 context as `replyflow start` runs it. The context keeps one module cache per run,
// so each run executes every module its start loads for itself (the module state), on its first task
// and again on each replay after an eviction, but for the modules preloaded into the shared cache
// (ours: src/temporal/workflow-bundle.ts); the history a run holds comes on top. Creates `--runs`
// runs of `--type` from the bundle `replyflow start` uses and prints the heap they hold after a full
// GC, per run; then creates and disposes as many again and prints the CPU time per run. Uses the SDK's
// internal workflow creator: the figures are the ones the worker's workflow thread pays, without a
// server. `--bundle FILE`: another bundle, such as one an older commit builds (`node --require tsx/cjs
// src/temporal/workflow-bundle.ts --replyflow-bundle-child workflows > FILE` in its checkout).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseWorkflowCode } from '@temporalio/worker/lib/worker';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';
import { PROJECT_ROOT } from '../src/temporal/binaries';
import { workflowBundleFor } from '../src/temporal/workflow-bundle';

const gc = globalThis.gc;

async function cachedBundle(): Promise<string> {
  const bundle = await workflowBundleFor(`${PROJECT_ROOT}/workflows`);
  if (!('codePath' in bundle) || !bundle.codePath) throw new Error('the workflow bundle could not be cached');
  return bundle.codePath;
}

async function main() {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '200' },
      type: { type: 'string', default: 'handleEvent' },
      bundle: { type: 'string' },
    },
  });
  if (!gc) throw new Error('run with node --expose-gc (npm run bench:workflow-heap does)');
  const runs = Number(values.runs);
  const codePath = values.bundle ?? (await cachedBundle());
  const parsed = parseWorkflowCode(readFileSync(codePath, 'utf8'), codePath);
  const creator = await ReusableVMWorkflowCreator.create(parsed, 5_000, new Set(), undefined);
  gc();
  const before = process.memoryUsage().heapUsed;
  const create = (i: number) => {
    const runId = `bench-run-${i}`;
    const now = new Date();
    return creator.createWorkflow({
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
    } as any);
  };
  const held = [];
  for (let i = 0; i < runs; i++) held.push(await create(i));
  gc();
  const perRun = (process.memoryUsage().heapUsed - before) / runs;
  for (const run of held) await run.dispose();
  const cpu = process.cpuUsage();
  for (let i = runs; i < 2 * runs; i++) await (await create(i)).dispose();
  const spent = process.cpuUsage(cpu);
  console.log(
    `${runs} runs of ${values.type}: ${(perRun / 1024).toFixed(0)} KiB of heap each while cached (module state, before any history), ${((spent.user + spent.system) / 1000 / runs).toFixed(2)} ms of CPU each to create`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
