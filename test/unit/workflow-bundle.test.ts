// The worker's workflow bundle (src/temporal/workflow-bundle.ts): built in a child process, kept on
// disk under a name that changes with its sources, loaded from there by the next process; a bundle
// that cannot be built fails with webpack's reason, not a hang, and caches nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseWorkflowCode } from '@temporalio/worker/lib/worker';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';
import { WorkflowBundleError } from '../../src/temporal/errors';
import { bundleKey, workflowBundleFor } from '../../src/temporal/workflow-bundle';
import { WORKFLOWS_PATH } from '../../src/worker';

describe('workflow bundle, built in a child process and cached', function () {
  this.timeout(120_000);
  let cacheDir: string;
  beforeEach(() => {
    cacheDir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-bundle-cache-'));
  });
  afterEach(() => rmSync(cacheDir, { recursive: true, force: true }));

  /** Runs `fn` on a workflows dir holding `index.ts` as given, inside the project (where @temporalio/workflow resolves). */
  async function withWorkflows(index: string, fn: (dir: string) => Promise<void>): Promise<void> {
    const dir = mkdtempSync(path.join(__dirname, '.bundle-'));
    try {
      writeFileSync(path.join(dir, 'index.ts'), index);
      await fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('bundles the real workflows once, and the next call loads the same file', async () => {
    const first = await workflowBundleFor(WORKFLOWS_PATH, cacheDir);
    assert.ok('codePath' in first, 'cached on disk');
    const code = readFileSync(first.codePath, 'utf8');
    assert.match(code, /handleEvent/);
    assert.ok(code.length > 100_000, `bundle of ${code.length} bytes`);
    // Its inline source map still maps every file, without the files' text.
    const map = JSON.parse(
      Buffer.from(code.slice(code.lastIndexOf('base64,') + 'base64,'.length), 'base64').toString('utf8'),
    );
    assert.equal(map.sourcesContent, undefined);
    assert.ok(map.sources.some((source: string) => source.endsWith('workflows/handle-event.ts')));
    assert.ok(map.mappings.length > 100_000, `mappings of ${map.mappings.length} characters`);
    assert.deepEqual(readdirSync(cacheDir), [path.basename(first.codePath)]);
    const written = statSync(first.codePath).mtimeMs;
    const second = await workflowBundleFor(WORKFLOWS_PATH, cacheDir);
    assert.deepEqual(second, first);
    assert.equal(statSync(first.codePath).mtimeMs, written, 'loaded, not built and written again');
  });

  it('loads our workflow modules once for all runs, and OpenTelemetry only in a traced run', async () => {
    // The SDK's reusable context gives each run a module cache of its own; a module preloaded before
    // any run exists sits in the shared one instead (66 KiB of heap per cached run without it, 14 with).
    const bundle = await workflowBundleFor(WORKFLOWS_PATH, cacheDir);
    assert.ok('codePath' in bundle);
    const creator = await ReusableVMWorkflowCreator.create(
      parseWorkflowCode(readFileSync(bundle.codePath, 'utf8'), bundle.codePath),
      5_000,
      new Set(),
      undefined,
    );
    try {
      // `context` is the creator's V8 context (protected in its type); its module cache answers from
      // the shared modules first, and from no run's own cache while no run exists.
      const shared = (
        creator as unknown as { context: { __webpack_module_cache__: Record<string, unknown> } }
      ).context.__webpack_module_cache__;
      for (const id of [
        './workflows/index.ts',
        './workflows/handle-event.ts',
        './workflows/otel-interceptors.ts',
      ])
        assert.ok(shared[id], `${id} is in the shared module cache`);
      assert.equal(
        shared['./node_modules/@temporalio/interceptors-opentelemetry/lib/workflow/index.js'],
        undefined,
        'OpenTelemetry is not loaded for every run',
      );
    } finally {
      await creator.destroy();
    }
  });

  it('names the bundle after its sources: an edit gives another name, and the old bundle goes', async () => {
    await withWorkflows('export async function one(): Promise<number> { return 1; }\n', async (dir) => {
      const before = await workflowBundleFor(dir, cacheDir);
      const key = bundleKey(dir);
      writeFileSync(
        path.join(dir, 'index.ts'),
        'export async function one(): Promise<number> { return 2; }\n',
      );
      assert.notEqual(bundleKey(dir), key);
      const after = await workflowBundleFor(dir, cacheDir);
      assert.ok('codePath' in before && 'codePath' in after);
      assert.notEqual(after.codePath, before.codePath);
      assert.match(readFileSync(after.codePath, 'utf8'), /return 2/);
      assert.deepEqual(readdirSync(cacheDir), [path.basename(after.codePath)]);
    });
  });

  it('fails with the reason when the workflows do not build, and caches nothing', async () => {
    await withWorkflows("import { nothing } from './missing-module';\nexport { nothing };\n", async (dir) => {
      await assert.rejects(workflowBundleFor(dir, cacheDir), (err: unknown) => {
        assert.ok(err instanceof WorkflowBundleError);
        assert.match(err.message, /missing-module/);
        return true;
      });
      assert.deepEqual(readdirSync(cacheDir), []);
    });
  });
});
