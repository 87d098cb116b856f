// What each adapter's errors say about whether the request was applied (unit), for the cases the
// workflow suites do not reach: Slack's own error codes, GitHub's primary rate limit, and which LINE
// attempts may be resent with the same key.
import assert from 'node:assert/strict';
import { ErrorCode } from '@slack/web-api';
import type { StepPlan } from '../../src/model';
import { classifyGithubStatus } from '../../src/targets/github';
import { classifyHttpStatus, type HttpEndpoint } from '../../src/targets/http';
import { lineTarget } from '../../src/targets/line';
import { classifySlackError } from '../../src/targets/slack';

const platform = (error: string) =>
  Object.assign(new Error(error), { code: ErrorCode.PlatformError, data: { error } });
const request = (code: string) =>
  Object.assign(new Error(code), { code: ErrorCode.RequestError, original: { code } });

describe('target error classes', () => {
  it('Slack: refusals are permanent with a fix; internal and fatal errors may have posted', () => {
    const cases: [Error, string][] = [
      [platform('channel_not_found'), 'permanent'],
      [platform('invalid_auth'), 'permanent'],
      [platform('some_new_error'), 'permanent'],
      [platform('ratelimited'), 'retryable'],
      [platform('service_unavailable'), 'retryable'],
      [platform('internal_error'), 'unknown'],
      [platform('fatal_error'), 'unknown'],
      [Object.assign(new Error('429'), { code: ErrorCode.RateLimitedError, retryAfter: 7 }), 'retryable'],
      [request('ECONNREFUSED'), 'retryable'],
      [request('ECONNRESET'), 'unknown'],
      [request('ERR_CANCELED'), 'unknown'],
      [Object.assign(new Error('http'), { code: ErrorCode.HTTPError, statusCode: 502 }), 'unknown'],
      [new Error('Retry header did not contain a valid timeout'), 'unknown'],
    ];
    for (const [err, errorClass] of cases)
      assert.equal(classifySlackError(err).errorClass, errorClass, err.message);
    assert.equal(
      classifySlackError(Object.assign(new Error(), { code: ErrorCode.RateLimitedError, retryAfter: 7 }))
        .details.retryAfterMs,
      7000,
    );
    assert.match(classifySlackError(platform('not_in_channel')).details.fix ?? '', /invite/);
  });

  it('GitHub: an exhausted primary rate limit waits until its reset; other 403s are permanent', () => {
    const reset = Math.floor(Date.now() / 1000) + 120;
    const limited = classifyGithubStatus(
      new Response('{}', {
        status: 403,
        headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
      }),
    );
    assert.equal(limited.errorClass, 'retryable');
    assert.ok((limited.details.retryAfterMs ?? 0) > 100_000);
    assert.equal(classifyGithubStatus(new Response('{}', { status: 403 })).errorClass, 'permanent');
    assert.equal(classifyGithubStatus(new Response('{}', { status: 500 })).errorClass, 'unknown');
  });

  it('generic HTTP: 409 and 422 mean in flight and key reused only where the API honours keys', () => {
    const endpoint = (honoured: boolean): HttpEndpoint => ({
      url: 'http://x/',
      method: 'POST',
      headers: {},
      idempotency: { header: 'Idempotency-Key', format: 'quoted', honoured },
      idField: 'id',
      consistencyDelayMs: 0,
    });
    const status = (s: number, honoured: boolean) =>
      classifyHttpStatus(new Response('{}', { status: s }), endpoint(honoured), 'http:x').errorClass;
    assert.deepEqual(
      [status(409, true), status(422, true), status(409, false), status(422, false)],
      ['retryable', 'permanent', 'permanent', 'permanent'],
    );
  });

  it('LINE: only a first attempt that may have used the reply token is unsafe to resend', () => {
    const target = lineTarget({ channelAccessToken: 't', apiUrl: 'http://127.0.0.1:1' });
    const step = (destination: Record<string, string>): StepPlan => ({
      name: 'reply',
      target: 'line',
      destination,
      content: { kind: 'reply' },
    });
    const withToken = step({ to: 'U1', replyToken: 'r', replyTokenExpiresAt: new Date().toISOString() });
    assert.equal(target.resendSafe?.(withToken, 1), false);
    assert.equal(target.resendSafe?.(withToken, 2), true);
    assert.equal(target.resendSafe?.(step({ to: 'U1' }), 1), true);
    assert.equal(target.capabilities.idempotencyKey, true);
    assert.equal(target.capabilities.lookup, false);
  });
});
