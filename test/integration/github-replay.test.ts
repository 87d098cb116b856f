// GitHub signs only the body: the same signed bytes re-sent under a new delivery id must start
// nothing within the replay window, while GitHub's own redelivery (same delivery id) and several
// hooks sharing a delivery id go through as before. Real receiver, dev server and PostgreSQL.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createPool } from '../../src/db/pool';
import { GITHUB_REPLAY_WINDOW_DAYS } from '../../src/providers/github';
import { receiverSuite } from '../support/receiver';
import { database } from '../support/servers';
import { signGitHubDelivery } from '../support/signers';
import { testConfig, uniqueId } from '../support/system';

const SECRET = 'github-replay-test-secret';

describe('GitHub replayed bodies (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(120_000);
  const config = testConfig({ GITHUB_WEBHOOK_SECRET: SECRET });
  const suite = receiverSuite(config);

  const issueOpened = () =>
    JSON.stringify({
      action: 'opened',
      issue: { id: uniqueId(''), number: 7, title: 'Where are your opening hours?' },
      repository: { name: 'r', full_name: 'o/r', owner: { login: 'o' } },
    });
  const deliver = async (body: string, deliveryId: string, hookId = '77') => {
    const headers = await signGitHubDelivery(SECRET, body, { event: 'issues', deliveryId, hookId });
    const response = await fetch(`${suite.receiver.url}/webhooks/github`, { method: 'POST', headers, body });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const exists = (workflowId: string) =>
    suite.client.workflow
      .getHandle(workflowId)
      .describe()
      .then(
        () => true,
        () => false,
      );

  it('starts nothing for the same signed body under a new delivery id', async () => {
    const body = issueOpened();
    const first = randomUUID();
    const replay = randomUUID();
    assert.equal((await deliver(body, first)).status, 202);
    assert.deepEqual(await deliver(body, replay), {
      status: 200,
      body: { status: 'ignored', reason: 'replayed_body' },
    });
    assert.equal(await exists(`webhook:github:77:${replay}`), false);
    assert.equal(await exists(`webhook:github:77:${first}`), true);
  });

  it("answers GitHub's own redelivery (the same delivery id) as a duplicate", async () => {
    const body = issueOpened();
    const id = randomUUID();
    assert.equal((await deliver(body, id)).status, 202);
    assert.deepEqual(await deliver(body, id), {
      status: 200,
      body: { status: 'duplicate', workflowId: `webhook:github:77:${id}` },
    });
  });

  it('starts one workflow per hook when several hooks deliver the same body under one delivery id', async () => {
    const body = issueOpened();
    const id = randomUUID();
    assert.equal((await deliver(body, id, '1')).status, 202);
    assert.equal((await deliver(body, id, '2')).status, 202);
  });

  it(`accepts the same body under a new delivery id once the ${GITHUB_REPLAY_WINDOW_DAYS}-day window has passed`, async () => {
    const body = issueOpened();
    assert.equal((await deliver(body, randomUUID())).status, 202);
    const admin = createPool((await database()).adminUrl, 1);
    try {
      await admin.query(
        `UPDATE github_signed_bodies SET first_seen = now() - make_interval(days => $1 + 1)
          WHERE first_seen > now() - interval '1 minute'`,
        [GITHUB_REPLAY_WINDOW_DAYS],
      );
    } finally {
      await admin.end();
    }
    const later = randomUUID();
    assert.equal((await deliver(body, later)).status, 202);
    assert.equal(await exists(`webhook:github:77:${later}`), true);
  });
});
