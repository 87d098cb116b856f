// Determinism guard: recorded histories of every workflow path must replay against the current
// workflow code. A change that would break running workflows fails here (re-record only for a
// deliberate, versioned change: npm run record-histories).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { dataConverter } from '../../src/temporal/client';
import { TEST_ENCRYPTION_KEY, workflowBundle } from '../helpers/servers';

const HISTORIES = path.resolve(__dirname, '..', 'histories');

describe('workflow histories replay against the current code', () => {
  const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json'));

  it('has a recorded history for each path', () => {
    assert.ok(files.length >= 8, `only ${files.length} histories in test/histories`);
  });

  it('replays every recorded history without nondeterminism', async () => {
    const histories = files.map((file) => {
      const recorded = JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8'));
      return {
        workflowId: recorded.workflowId,
        history: temporal.api.history.v1.History.fromObject(recorded.history),
      };
    });
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: await workflowBundle(), dataConverter: dataConverter(TEST_ENCRYPTION_KEY) },
      histories,
    )) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    assert.deepEqual(failures, []);
  });
});
