// The worker's workflow bundle is built in a child process (src/temporal/workflow-bundle.ts): the real
// workflows bundle there, and a bundle that cannot be built fails with webpack's reason, not a hang.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleOutOfProcess, WorkflowBundleError } from '../../src/temporal/workflow-bundle';
import { WORKFLOWS_PATH } from '../../src/worker';

describe('workflow bundle, built in a child process', function () {
  this.timeout(120_000);

  it('bundles the real workflows', async () => {
    const { code } = await bundleOutOfProcess(WORKFLOWS_PATH);
    assert.match(code, /handleEvent/);
    assert.ok(code.length > 100_000, `bundle of ${code.length} bytes`);
  });

  it('fails with the reason when the workflows do not build', async () => {
    // Inside the project, where @temporalio/workflow resolves: only our own import is missing.
    const dir = mkdtempSync(path.join(__dirname, '.bundle-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      path.join(dir, 'index.ts'),
      "import { nothing } from './missing-module';\nexport { nothing };\n",
    );
    await assert.rejects(bundleOutOfProcess(dir), (err: unknown) => {
      assert.ok(err instanceof WorkflowBundleError);
      assert.match(err.message, /missing-module/);
      return true;
    });
  });
});
