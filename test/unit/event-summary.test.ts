// The summary the Web UI shows above an event's workflow (src/receiver/start-event.ts eventSummary):
// identifiers only, the ones the search attributes already hold, never message text.
import assert from 'node:assert/strict';
import type { InboundEvent } from '../../src/providers/types';
import { eventStartOptions, eventSummary, SUMMARY_CHARS } from '../../src/receiver/start-event';

const chat: InboundEvent = {
  provider: 'slack',
  eventId: 'Ev1',
  workflowId: 'webhook:slack:Ev1',
  eventType: 'message',
  receivedAt: '2026-12-01T00:00:00.000Z',
  correlationId: 'c1',
  tenant: 'slack:T1',
  conversation: { id: 'T1:C1' },
  message: { id: '1712345678.000200', text: 'my card number is 4242' },
  payload: { event: { text: 'my card number is 4242' } },
};

describe('event summaries in the Web UI', () => {
  it('names the provider, the event type, the conversation and the tenant, and is what the workflow starts with', () => {
    assert.equal(eventSummary(chat), 'slack message · conversation T1:C1 · tenant slack:T1');
    assert.equal(eventStartOptions(chat, 'q').staticSummary, eventSummary(chat));
  });

  it('leaves out what is no identifier: an event type or a conversation with spaces, a malformed tenant', () => {
    const odd = {
      ...chat,
      eventType: 'my card number is 4242',
      conversation: { id: 'my card number' },
      tenant: 'slack:T1 my card',
    };
    assert.equal(eventSummary(odd), 'slack');
    assert.ok(!JSON.stringify(eventStartOptions(odd, 'q').staticSummary).includes('card'));
  });

  it('stays within its length on long ids', () => {
    const long = { ...chat, conversation: { id: `U${'a'.repeat(99)}` }, eventType: 'x'.repeat(100) };
    assert.ok(eventSummary(long).length <= SUMMARY_CHARS);
  });
});
