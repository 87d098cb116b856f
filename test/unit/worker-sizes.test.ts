// The sizes of a worker beside a receiver (`replyflow start`): it runs at most half as many workflow
// tasks as it caches, so that a new run's task never waits for a cached run to be evicted, which one
// with a task or a send open cannot be (bench:fairness: another conversation's first task then waited
// out its 10 s task timeout behind a burst; docs/benchmarks.md, "Fair shares").
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config';
import { eagerWorkerSizes } from '../../src/worker';

describe('the sizes of a worker beside a receiver', () => {
  it('caches as many workflows as it runs sends, and runs half as many workflow tasks', () => {
    assert.deepEqual(eagerWorkerSizes(loadConfig({})), { workflowTaskSlots: 100, cachedWorkflows: 200 });
    assert.deepEqual(eagerWorkerSizes(loadConfig({ WORKER_ACTIVITY_SLOTS: '50' })), {
      workflowTaskSlots: 25,
      cachedWorkflows: 50,
    });
  });

  it('keeps half of a set cache for the tasks, never more than the sends it runs', () => {
    assert.deepEqual(eagerWorkerSizes(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '64' })), {
      workflowTaskSlots: 32,
      cachedWorkflows: 64,
    });
    assert.deepEqual(eagerWorkerSizes(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '1000' })), {
      workflowTaskSlots: 200,
      cachedWorkflows: 1000,
    });
    assert.deepEqual(eagerWorkerSizes(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '3' })), {
      workflowTaskSlots: 2,
      cachedWorkflows: 3,
    });
  });
});
