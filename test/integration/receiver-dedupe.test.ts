// Dedupe at the front door: the workflow id `webhook:<provider>:<eventId>` lets exactly one of many
// concurrent deliveries start a workflow; the rest, and any redelivery after it closed, are answered
// `200 duplicate` and change nothing.
import assert from 'node:assert/strict';
import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import {
  counterValue,
  metricsOf,
  post,
  receiverSuite,
  STD_SECRET,
  STD_SOURCE,
  sandboxRequest,
  standardRequest,
} from '../support/receiver';
import { devServer } from '../support/servers';
import { testConfig, withWorker } from '../support/system';
import { effectRows } from '../support/workflows';

const DELIVERIES = 50;

describe('receiver: concurrent and late redeliveries (dev server, PostgreSQL, HTTP)', function () {
  this.timeout(120_000);
  const config = testConfig({ STANDARD_WEBHOOKS_SECRETS: `${STD_SOURCE}=${STD_SECRET}` });
  const suite = receiverSuite(config);
  const target = new FakeTarget();

  before(() => target.start());
  after(async () => {
    await target.stop();
  });

  /** The id's runs, once visibility (which lags a little behind the runs) lists any. */
  const runsOf = (workflowId: string) =>
    eventually(`visibility lists ${workflowId}`, async () => {
      const runs: string[] = [];
      for await (const run of suite.client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
        runs.push(run.runId);
      return runs.length > 0 && runs;
    });

  it(`starts one workflow for ${DELIVERIES} concurrent deliveries of one event and answers the rest 200 duplicate`, async () => {
    const request = sandboxRequest(config);
    const workflowId = `webhook:sandbox:${request.eventId}`;
    const before = await metricsOf(suite.receiver);

    const responses = await Promise.all(
      Array.from({ length: DELIVERIES }, () => post(suite.receiver, request)),
    );
    const answers = await Promise.all(
      responses.map(async (r) => ({ status: r.status, body: (await r.json()) as unknown })),
    );
    const accepted = answers.filter((a) => a.status === 202);
    const duplicates = answers.filter((a) => a.status === 200);
    assert.deepEqual(accepted, [{ status: 202, body: { status: 'accepted', workflowId } }]);
    assert.equal(duplicates.length, DELIVERIES - 1);
    for (const d of duplicates) assert.deepEqual(d.body, { status: 'duplicate', workflowId });
    assert.equal((await runsOf(workflowId)).length, 1, 'exactly one workflow run');

    const after = await metricsOf(suite.receiver);
    const moved = (outcome: string) =>
      counterValue(after, 'replyflow_webhook_requests_total', { provider: 'sandbox', outcome }) -
      counterValue(before, 'replyflow_webhook_requests_total', { provider: 'sandbox', outcome });
    assert.equal(moved('accepted'), 1);
    assert.equal(moved('duplicate'), DELIVERIES - 1);

    const server = await devServer();
    const result = await withWorker(
      { address: server.address, config: { ...config, SANDBOX_API_URL: target.url } },
      () => suite.client.workflow.getHandle(workflowId).result(),
    );
    assert.equal(result.state, 'succeeded');
    const [effect, ...others] = await effectRows(`chat:sandbox:${request.conversationId}:`);
    assert.equal(others.length, 0);
    assert.equal(target.sendsFor(effect.id).length, 1, 'one reply reached the target');
  });

  it('answers 200 duplicate to a redelivery after the workflow closed, and starts no new run', async () => {
    const first = standardRequest();
    const workflowId = `webhook:std.orders:${first.eventId}`;
    const accepted = await post(suite.receiver, first);
    assert.equal(accepted.status, 202);
    const server = await devServer();
    await withWorker({ address: server.address, config }, () =>
      suite.client.workflow.getHandle(workflowId).result(),
    );
    assert.equal((await suite.client.workflow.getHandle(workflowId).describe()).status.name, 'COMPLETED');

    // A sender's later retry: same id, a fresh timestamp and signature.
    const redelivery = standardRequest({ eventId: first.eventId, body: first.body });
    const answer = await post(suite.receiver, redelivery);
    assert.equal(answer.status, 200);
    assert.deepEqual(await answer.json(), { status: 'duplicate', workflowId });
    assert.equal((await runsOf(workflowId)).length, 1);
  });
});
