// Whose share of the task queue an event's work counts against (src/receiver/start-event.ts): the
// conversation, else the tenant, else the sender; always within Temporal's 64-byte limit.
import assert from 'node:assert/strict';
import type { InboundEvent } from '../../src/providers/types';
import { eventStartOptions, fairnessKeyOf } from '../../src/receiver/start-event';

const base: InboundEvent = {
  provider: 'std.orders',
  eventId: 'e1',
  workflowId: 'webhook:std.orders:e1',
  eventType: 'order.paid',
  receivedAt: '2026-12-01T00:00:00.000Z',
  correlationId: 'c1',
  payload: {},
};

describe('fairness keys of event workflows', () => {
  it('takes the conversation, else the tenant, else the sender', () => {
    assert.equal(fairnessKeyOf({ ...base, conversation: { id: 'T1:C1' }, tenant: 'slack:T1' }), 'T1:C1');
    assert.equal(fairnessKeyOf({ ...base, tenant: 'github:42' }), 'github:42');
    assert.equal(fairnessKeyOf(base), 'std.orders');
  });

  it('hashes a key longer than 64 bytes, the same way every time, and tells two apart', () => {
    const line = (chat: string) => ({ ...base, conversation: { id: `U${'a'.repeat(32)}:${chat}` } });
    const one = fairnessKeyOf(line(`U${'b'.repeat(32)}`));
    assert.ok(Buffer.byteLength(one) <= 64, one);
    assert.equal(one, fairnessKeyOf(line(`U${'b'.repeat(32)}`)));
    assert.notEqual(one, fairnessKeyOf(line(`U${'c'.repeat(32)}`)));
  });

  it('is what the workflow starts with', () => {
    const options = eventStartOptions({ ...base, conversation: { id: 'T1:C9' } }, 'q');
    assert.deepEqual(options.priority, { fairnessKey: 'T1:C9' });
  });
});
