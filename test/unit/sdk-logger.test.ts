// The Temporal SDK's lines through our logger: an activity that failed as planned (a responder that
// refuses) is one record with the error's message and type, its stack only at debug; the SDK's own
// level threshold (REPLYFLOW_SDK_LOG_LEVEL) and opaque fields are honoured.
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { LogTimestamp } from '@temporalio/worker';
import { PermanentResponderError } from '../../src/responders/errors';
import { sdkLogger } from '../../src/temporal/sdk-logger';
import { capturedLogger } from '../support/receiver';

/** What the SDK's worker passes when an activity throws: the failure wrapping our error. */
function activityFailed() {
  const cause = new PermanentResponderError(
    'responder answered 400: check RESPONDER_URL and its credentials',
  );
  const error = ApplicationFailure.create({
    message: cause.message,
    type: 'PermanentResponderError',
    nonRetryable: true,
    cause,
  });
  return {
    sdkComponent: 'worker',
    activityType: 'prepareReply',
    workflowId: 'webhook:sandbox:evt_1',
    taskToken: 'CiQwMWEyMzE1NS1hMGExLTczNTctYmU2Yi00OWM3MDdjOGNhZmI=',
    attempt: 1,
    error,
    durationMs: 51,
    [LogTimestamp]: 1n,
  };
}

describe('the Temporal SDK logger', () => {
  it('logs a failed activity as one record without a stack below debug', () => {
    const log = capturedLogger('info');
    sdkLogger(log.logger, 'WARN').warn('Activity failed', activityFailed());

    const records = log.lines();
    assert.equal(records.length, 1);
    const [record] = records as [Record<string, unknown>];
    assert.equal(record.level, 40);
    assert.equal(record.msg, 'Activity failed');
    assert.equal(record.error, 'responder answered 400: check RESPONDER_URL and its credentials');
    assert.equal(record.errorType, 'PermanentResponderError');
    assert.equal(record.activityType, 'prepareReply');
    assert.equal(record.taskToken, undefined, 'the opaque task token is left out');
    assert.equal(record.stack, undefined);
    assert.doesNotMatch(log.raw(), /\\n\s+at /);
  });

  it('adds the stack, causes included, at debug', () => {
    const log = capturedLogger('debug');
    sdkLogger(log.logger, 'WARN').warn('Activity failed', activityFailed());

    const [record] = log.lines() as [Record<string, unknown>];
    assert.match(String(record.stack), /^ApplicationFailure: responder answered 400/);
    assert.match(
      String(record.stack),
      /caused by: PermanentResponderError: responder answered 400[\s\S]*\n\s+at /,
    );
  });

  it('drops SDK lines below REPLYFLOW_SDK_LOG_LEVEL, whatever LOG_LEVEL allows', () => {
    const log = capturedLogger('trace');
    const sdk = sdkLogger(log.logger, 'WARN');
    sdk.info('Worker state changed', { state: 'RUNNING' });
    sdk.debug('Workflow bundle created');
    sdk.log('ERROR', 'Worker failed', { error: new Error('boom') });

    assert.deepEqual(
      log.lines().map((r) => [r.level, r.msg]),
      [[50, 'Worker failed']],
    );
  });
});
