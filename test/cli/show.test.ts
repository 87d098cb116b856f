// `replyflow show` as an operator reads it: what a finished effect went through is history, not a
// problem of now, and a reader that stops early (`| head`) ends the command quietly. The real dev server, PostgreSQL, a receiver, and a worker on this suite's queue sending to
// a fake target.
import assert from 'node:assert/strict';
import { createAuditLog } from '../../src/db/audit-log';
import type { Inspection } from '../../src/operator/inspect';
import { operatorDecides, type TestOperator, testOperator } from '../support/operators';
import { database } from '../support/servers';
import { workerSuite } from '../support/system';
import { heldItem } from '../support/workflows';
import { cli, cliJson, cliProcess } from './harness';

describe('replyflow show (dev server, PostgreSQL, a receiver, a worker, a fake target)', function () {
  this.timeout(180_000);
  const suite = workerSuite();
  let viewer: TestOperator;

  before(async () => {
    viewer = await testOperator(['view']);
  });

  /** A held item (its send's answer lost: error class `unknown`) that an operator then marked sent. */
  async function succeededAfterAnError() {
    const item = await heldItem(suite);
    assert.match(
      await operatorDecides(item.handle, 'resolve', {
        action: 'mark-sent',
        externalId: 'ext-1',
        reason: 'seen in the chat',
      }),
      /^Accepted/,
    );
    await item.handle.result();
    return item;
  }

  it('shows the last error of a succeeded effect as what happened before it succeeded, not as its error class', async () => {
    const { handle, effectId } = await succeededAfterAnError();
    const shown = await cliJson<Inspection>(['show', handle.workflowId], { as: viewer });
    const effect = shown.effects.find((e) => e.id === effectId)!;
    assert.equal(effect.status, 'succeeded');
    assert.equal(effect.lastErrorClass, 'unknown', 'the JSON keeps the row as it is');

    const text = await cli(['show', handle.workflowId], { as: viewer });
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.split('\n');
    const effectLine = lines.find((l) => l.startsWith(effectId))!;
    assert.ok(effectLine, text.stdout);
    assert.ok(!/\bunknown\b/.test(effectLine), `the effect's line names no error class: ${effectLine}`);
    assert.ok(
      !lines.some((l) => /^last error( class)? {2}/.test(l)),
      `no current error among the fields:\n${text.stdout}`,
    );
    assert.ok(
      lines.some((l) => /^last error before it succeeded {2,}unknown — connection lost/.test(l)),
      `the workflow's old error is a field that says it came before:\n${text.stdout}`,
    );
    assert.ok(
      lines.includes(`  ${effectId}: last error before it succeeded: unknown — ${effect.lastError}`),
      `the effect's old error is shown as history:\n${text.stdout}`,
    );
  });

  it('exits 0 with no stack trace when its reader closes the pipe after the first line (| head -n 1)', async () => {
    const { handle } = await succeededAfterAnError();
    // More than a pipe holds (64 KiB), so the CLI is still writing when its reader has left.
    const { pool } = await database();
    await createAuditLog(pool).append(
      Array.from({ length: 600 }, (_, i) => ({
        actor: viewer.account.name,
        action: 'approve',
        workflowId: handle.workflowId,
        reason: `refusal number ${i} of a long audit trail, to make the output longer than a pipe`,
        result: 'rejected: nothing awaits a decision in state succeeded',
      })),
    );
    const result = await cliProcess(['show', handle.workflowId], { as: viewer, firstLineOnly: true });
    assert.equal(
      result.stdout,
      `${handle.workflowId}  (completed, task queue ${suite.config.TEMPORAL_TASK_QUEUE})\n`,
    );
    assert.equal(result.stderr, '', 'nothing on stderr: no EPIPE, no stack trace');
    assert.equal(result.code, 0);
  });
});
