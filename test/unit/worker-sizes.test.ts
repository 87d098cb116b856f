// The sizes of a worker beside a receiver (`replyflow start`): it runs at most a quarter as many
// workflow tasks as it caches, so that a new run's task never waits for a cached run to be evicted,
// which one with a task or a send open cannot be (bench:fairness and bench:tenants: another
// conversation's or tenant's first task then waited out its 10 s task timeout behind a burst, with as
// many and with half as many task slots; docs/benchmarks.md, "Fair shares", "Lost tasks came back").
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config';
import { eagerWorkerSizes } from '../../src/worker';

describe('the sizes of a worker beside a receiver', () => {
  it('caches twice as many workflows as it runs sends, and runs a quarter as many workflow tasks', () => {
    assert.deepEqual(eagerWorkerSizes(loadConfig({})), { workflowTaskSlots: 100, cachedWorkflows: 400 });
    assert.deepEqual(eagerWorkerSizes(loadConfig({ WORKER_ACTIVITY_SLOTS: '50' })), {
      workflowTaskSlots: 25,
      cachedWorkflows: 100,
    });
  });

  it('keeps a quarter of a set cache for the tasks, never more than the sends it runs', () => {
    assert.deepEqual(eagerWorkerSizes(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '64' })), {
      workflowTaskSlots: 16,
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
