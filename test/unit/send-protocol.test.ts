import assert from 'node:assert/strict';
import { retryDelayMs } from '../../activities/send';
import { classifyStatus } from '../../src/targets/http-errors';
import { parseRetryAfter } from '../../src/targets/types';

describe('retry delays and error classes', () => {
  it('backs off exponentially with at most 20 % jitter, never before Retry-After', () => {
    assert.equal(
      retryDelayMs(1, undefined, () => 0),
      1000,
    );
    assert.equal(
      retryDelayMs(4, undefined, () => 0),
      8000,
    );
    assert.equal(
      retryDelayMs(4, undefined, () => 1),
      9600,
    );
    assert.equal(
      retryDelayMs(30, undefined, () => 0),
      600_000,
    );
    assert.equal(
      retryDelayMs(1, 120_000, () => 0),
      120_000,
    );
    assert.equal(
      retryDelayMs(1, 120_000, () => 0.5),
      132_000,
    );
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('120'), 120_000);
    const now = Date.parse('2026-11-30T00:00:00Z');
    assert.equal(parseRetryAfter('Mon, 30 Nov 2026 00:01:00 GMT', now), 60_000);
    assert.equal(parseRetryAfter('soon'), undefined);
    assert.equal(parseRetryAfter(null), undefined);
  });

  it('classifies statuses by what they say about the request having been applied', () => {
    const h = new Headers({ 'retry-after': '3' });
    assert.deepEqual(
      [classifyStatus(429, h, 't').errorClass, classifyStatus(429, h, 't').details.retryAfterMs],
      ['retryable', 3000],
    );
    assert.equal(classifyStatus(503, new Headers(), 't').errorClass, 'retryable');
    assert.equal(classifyStatus(500, new Headers(), 't').errorClass, 'unknown');
    assert.equal(classifyStatus(504, new Headers(), 't').errorClass, 'unknown');
    for (const status of [400, 401, 403, 404, 422])
      assert.equal(classifyStatus(status, new Headers(), 't').errorClass, 'permanent');
  });
});
