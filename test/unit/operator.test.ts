import assert from 'node:assert/strict';
import { judge, type OperatorMessage, unsealedSignal } from '../../workflows/operator';

const held = { state: 'held' as const, seenRequestIds: new Set<string>() };
const resolve = (payload: object): OperatorMessage => unsealedSignal('resolve', payload);

describe('judging an operator message (workflows/operator.ts judge)', () => {
  it('accepts a valid mark-sent with an external id', () => {
    assert.deepEqual(
      judge(resolve({ action: 'mark-sent', operator: 'a', reason: 'seen', externalId: 'x1' }), held),
      {
        ok: true,
        action: 'mark-sent',
        externalId: 'x1',
      },
    );
  });

  for (const [name, payload, detail] of [
    ['unknown action', { action: 'explode', operator: 'a', reason: 'r' }, /action must be one of/],
    ['missing reason', { action: 'discard', operator: 'a' }, /reason is required/],
    ['missing operator', { action: 'discard', reason: 'r' }, /operator is required/],
    ['mark-sent without external id', { action: 'mark-sent', operator: 'a', reason: 'r' }, /externalId/],
  ] as const) {
    it(`rejects a held item's resolve with ${name}, saying what is wrong`, () => {
      const verdict = judge(resolve(payload), held);
      assert.equal(verdict.ok, false);
      assert.match((verdict as { detail: string }).detail, detail);
    });
  }

  it('rejects a repeated request id', () => {
    const verdict = judge(resolve({ action: 'discard', operator: 'a', reason: 'r', requestId: 'r1' }), {
      ...held,
      seenRequestIds: new Set(['r1']),
    });
    assert.deepEqual(verdict, { ok: false, detail: 'repeated requestId r1' });
  });

  it('refuses an approval by the person who asked for the resend', () => {
    const ctx = {
      state: 'awaiting_approval' as const,
      seenRequestIds: new Set<string>(),
      resendRequestedBy: 'alice',
    };
    assert.equal(judge(unsealedSignal('approve', { approver: 'alice', reason: 'r' }), ctx).ok, false);
    assert.deepEqual(judge(unsealedSignal('approve', { approver: 'bob', reason: 'r' }), ctx), {
      ok: true,
      action: 'approve-resend',
    });
  });

  it('sends failed work again only through reprocess', () => {
    const failed = { state: 'failed' as const, seenRequestIds: new Set<string>() };
    assert.equal(judge(resolve({ action: 'resend', operator: 'a', reason: 'r' }), failed).ok, false);
    assert.deepEqual(judge(unsealedSignal('reprocess', { operator: 'a', reason: 'r' }), failed), {
      ok: true,
      action: 'reprocess',
    });
    assert.equal(judge(unsealedSignal('reprocess', { operator: 'a', reason: 'r' }), held).ok, false);
  });
});
