// `replyflow show` as an operator reads it: a reader that stops early (`| head`) ends the command
// quietly. The real dev server, PostgreSQL, a receiver, and a worker on this suite's queue sending to
// a fake target.
import assert from 'node:assert/strict';
import { createAuditLog } from '../../src/db/audit-log';
import { operatorDecides, type TestOperator, testOperator } from '../helpers/operators';
import { database } from '../helpers/servers';
import { workerSuite } from '../helpers/system';
import { heldItem } from '../helpers/workflows';
import { cliProcess } from './harness';

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
