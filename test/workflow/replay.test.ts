// Determinism guard: recorded histories of every workflow path must replay against the current
// workflow code. A change that would break running workflows fails here (re-record only for a
// deliberate, versioned change: npm run record-histories).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { dataConverter } from '../../src/temporal/client';
import { TEST_ENCRYPTION_KEY, workflowBundle } from '../support/servers';

const HISTORIES = path.resolve(__dirname, '..', 'histories');

describe('workflow histories replay against the current code', () => {
  const entries = readdirSync(HISTORIES);
  const files = entries.filter((f) => f.endsWith('.json'));

  /** What scripts/record-histories.ts records for the current code: one per path of the workflow. */
  const CURRENT = [
    'succeeded',
    'duplicate',
    'retried',
    'held-mark-sent',
    'held-resend-approved',
    'failed-reprocessed',
    'mapping-failed-reprocessed',
    'held-discarded-by-signal',
    'held-ended-by-revocation',
    'tenant-revoked',
    'contended-earlier',
    'contended-later',
    'tells-next-in-line',
    'told-its-turn',
    'stale',
    'reset-adopts-held',
    'continued-after-flood',
    'answer-continued-after-flood',
  ];

  it('has a recorded history for each path, and keeps those of earlier versions', () => {
    const names = files.map((f) => f.replace(/\.json$/, ''));
    assert.deepEqual(
      CURRENT.filter((name) => !names.includes(name)),
      [],
      'a path without its history: npm run record-histories',
    );
    for (const version of [1, 2, 3, 4, 5, 6, 7, 8, 9])
      assert.ok(
        names.some((n) => n.startsWith(`v${version}-`)),
        `the histories of v${version} are gone: runs it started must still replay`,
      );
  });

  it('holds only recorded histories, each one a whole workflow run', () => {
    assert.deepEqual(
      entries.filter((f) => !f.endsWith('.json')),
      [],
      'a file in test/histories that no test replays',
    );
    const started = temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED;
    for (const { file, workflowId, history } of readHistories()) {
      assert.ok(workflowId, `${file}: no workflowId`);
      assert.equal(history.events[0]?.eventType, started, `${file}: does not start with the run's start`);
    }
  });

  it('replays every recorded history, one result each, without nondeterminism', async () => {
    const histories = readHistories();
    const fileOf = new Map(histories.map(({ file, workflowId }) => [workflowId, file]));
    assert.equal(
      fileOf.size,
      histories.length,
      'two histories share a workflow id: results would be ambiguous',
    );
    const replayed: string[] = [];
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: await workflowBundle(), dataConverter: dataConverter(TEST_ENCRYPTION_KEY) },
      histories.map(({ workflowId, history }) => ({ workflowId, history })),
    )) {
      const file = fileOf.get(result.workflowId) ?? result.workflowId;
      replayed.push(file);
      if (result.error) failures.push(`${file}: ${result.error.message}`);
    }
    assert.deepEqual(failures, []);
    // Every file, none skipped: an empty or short replay would otherwise pass.
    assert.deepEqual(replayed.sort(), [...files].sort());
  });

  function readHistories() {
    return files.map((file) => {
      const recorded = JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8'));
      return {
        file,
        workflowId: recorded.workflowId as string,
        history: temporal.api.history.v1.History.fromObject(recorded.history),
      };
    });
  }
});
