// The event types the route file check knows (src/providers/sdk-event-types.ts) are exactly those the
// conformance corpora declare, and every example payload of GitHub's corpus is one of them: a list
// that drifted from the SDKs would refuse a real route, or let a misspelt one through.
import assert from 'node:assert/strict';
import examples from '@octokit/webhooks-examples';
import { sendsEventType } from '../../src/providers/event-types';
import { SDK_EVENT_TYPES } from '../../src/providers/sdk-event-types';
import { SLACK_INTERACTION_EVENT_TYPES } from '../../src/providers/slack-interactions';
import { declaredEventTypes } from './event-types';

describe('conformance: the event types a route may name', function () {
  this.timeout(120_000);

  it('lists exactly the event types the SDKs declare (else run scripts/generate-event-types.ts)', () => {
    const declared = declaredEventTypes();
    for (const provider of ['github', 'line', 'slack', 'stripe'] as const) {
      const listed = SDK_EVENT_TYPES[provider];
      assert.deepEqual(
        {
          missing: declared[provider].filter((t) => !listed.includes(t)),
          extra: listed.filter((t) => !declared[provider].includes(t)),
        },
        { missing: [], extra: [] },
        `${provider}: src/providers/sdk-event-types.ts is out of date: npx tsx scripts/generate-event-types.ts`,
      );
    }
  });

  it("names Slack's commands and interactions as @slack/bolt's types do", () => {
    const unknown = SLACK_INTERACTION_EVENT_TYPES.filter((t) => !sendsEventType('slack', t));
    assert.deepEqual(unknown, []);
  });

  it('knows the event type of every example payload of @octokit/webhooks-examples but ping', () => {
    const unknown = examples
      .filter((definition) => definition.name !== 'ping')
      .flatMap((definition) =>
        definition.examples.map((example) => {
          // As src/providers/github.ts names it: the X-GitHub-Event name, then the body's action.
          const action = (example as { action?: unknown }).action;
          return typeof action === 'string' ? `${definition.name}.${action}` : definition.name;
        }),
      )
      .filter((type) => !sendsEventType('github', type));
    assert.deepEqual([...new Set(unknown)], []);
  });
});
