// The operator API over real HTTP on a receiver (dev server, PostgreSQL, a worker on this suite's own
// queue, a fake sandbox target): only a bearer token opens it, never a browser's cookie or origin;
// wrong tokens share one budget per source with the codec server; a decision counts as the operator
// the token proves, whatever the body says; and a verdict that takes longer than one request is asked
// for again by its update id.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateRPCTimeoutOrCancelledError, WorkflowUpdateStage } from '@temporalio/client';
import type { Config } from '../../src/config';
import { openSeal } from '../../src/decision-seal';
import type { DecisionAnswer } from '../../src/operator/api';
import type { ReceiverHandle } from '../../src/receiver';
import { connectClient, payloadCodec, type TemporalClient } from '../../src/temporal/client';
import { FAILED_SIGN_INS_PER_SOURCE, SESSION_COOKIE } from '../../src/temporal/codec-server';
import { resolveUpdate, statusQuery } from '../../workflows/messages';
import { FakeTarget } from '../support/fake-target';
import { sealFor, type TestOperator, testOperator } from '../support/operators';
import { requestFrom, startTestReceiver } from '../support/receiver';
import { devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { sandboxEvent, startTestWorker, testConfig, uniqueId } from '../support/system';
import { auditRows, startEvent, waitForState } from '../support/workflows';

const UI_ORIGIN = 'http://127.0.0.1:8233';

describe('operator API: bearer tokens only, decisions as the token’s operator, verdicts asked for again (receiver, HTTP)', function () {
  this.timeout(180_000);
  let receiver: ReceiverHandle;
  let fake: FakeTarget;
  let config: Config;
  let temporal: TemporalClient;
  let worker: { stop(): Promise<void> } | undefined;
  let ana: TestOperator;

  const startWorker = async () => {
    worker = await startTestWorker({ address: (await devServer()).address, config });
  };
  before(async () => {
    const server = await devServer();
    fake = await new FakeTarget().start();
    config = testConfig({ SANDBOX_API_URL: fake.url, CODEC_CORS_ORIGINS: UI_ORIGIN });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    receiver = await startTestReceiver({ config, temporalAddress: server.address });
    await startWorker();
    ana = await testOperator(['discard', 'mark-sent']);
  });
  after(async () => {
    await worker?.stop();
    await receiver?.stop();
    await temporal?.close();
    await fake?.stop();
  });

  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${receiver.url}/operator${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', ...init.headers },
    });
  const bearer = (op: TestOperator) => ({ authorization: `Bearer ${op.token}` });
  const path = (workflowId: string) => `/workflows/${encodeURIComponent(workflowId)}`;

  async function held() {
    fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' });
    const handle = await startEvent(temporal.client, config.TEMPORAL_TASK_QUEUE, event);
    await waitForState(handle, 'held');
    return handle;
  }

  it('answers 401 without a bearer token, for a browser session or a listed origin too, with no CORS answer', async () => {
    const signedIn = await fetch(`${receiver.url}/codec/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: ana.token }),
    });
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    assert.ok(cookie.startsWith(`${SESSION_COOKIE}=`), 'the browser is signed in to the codec server');

    const attempts: Record<string, string>[] = [
      {},
      { cookie },
      { origin: UI_ORIGIN, cookie },
      { authorization: 'Bearer rfo_not-a-token-anyone-was-given-0123456789abcdefghijk' },
      { authorization: `Basic ${Buffer.from(`x:${ana.token}`).toString('base64')}` },
    ];
    for (const headers of attempts) {
      for (const response of [
        await api('/whoami', { headers }),
        await api('/work/held', { headers }),
        await api(`${path('webhook:sandbox:x')}/resolve`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ action: 'discard', reason: 'r' }),
        }),
      ]) {
        assert.equal(response.status, 401, `${response.url} with ${Object.keys(headers)}`);
        assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer/);
        assert.equal(response.headers.get('access-control-allow-origin'), null);
        assert.equal(((await response.json()) as { code: string }).code, 'token_refused');
      }
    }
    // A page on the UI's origin cannot even ask: the preflight gets no CORS answer.
    const preflight = await api('/whoami', {
      method: 'OPTIONS',
      headers: {
        origin: UI_ORIGIN,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });
    assert.notEqual(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), null);
    const me = await api('/whoami', { headers: bearer(ana) });
    assert.deepEqual(await me.json(), {
      operator: ana.account.name,
      roles: ['view', 'mark-sent', 'discard'],
    });
  });

  it('counts wrong tokens at the operator API and the codec server against one budget per source', async () => {
    const source = '127.0.0.41';
    const wrong = { authorization: 'Bearer rfo_guess-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG' };
    const status = async (from: string, path: string, headers: Record<string, string>) =>
      (await requestFrom(from, `${receiver.url}${path}`, { headers })).status;
    for (let i = 0; i < FAILED_SIGN_INS_PER_SOURCE; i++)
      assert.equal(await status(source, '/operator/whoami', wrong), 401);
    assert.equal(await status(source, '/codec/whoami', bearer(ana)), 429);
    assert.equal(await status(source, '/operator/whoami', bearer(ana)), 429);
    assert.equal(await status('127.0.0.42', '/operator/whoami', bearer(ana)), 200);
  });

  it('decides as the operator the token proves: names or seals typed into the body count for nothing', async () => {
    const handle = await held();
    const other = await testOperator(['discard']);
    const response = await api(`${path(handle.workflowId)}/resolve`, {
      method: 'POST',
      headers: bearer(ana),
      body: JSON.stringify({
        action: 'discard',
        reason: 'helped by phone',
        operator: other.account.name,
        seal: `rfs1.${randomUUID()}.typed`,
      }),
    });
    assert.equal(response.status, 200);
    const answer = (await response.json()) as DecisionAnswer;
    assert.deepEqual([answer.operator, answer.verdict], [ana.account.name, 'Accepted: discard']);
    assert.equal((await handle.result()).state, 'discarded');
    assert.deepEqual(
      (await auditRows(handle.workflowId)).map((a) => [a.actor, a.action, a.request_id !== null]),
      [[ana.account.name, 'discard', true]],
    );
    // What reached Temporal: ciphertext whose seal names ana, this workflow and this decision.
    const history = await handle.fetchHistory();
    const accepted = history.events!.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes)!;
    const [payload] =
      accepted.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.args!.payloads!;
    assert.equal(Buffer.from(payload!.metadata!.encoding!).toString(), 'binary/encrypted');
    const codec = payloadCodec(TEST_ENCRYPTION_KEY);
    const [plain] = await codec.decode([payload!]);
    const body = JSON.parse(Buffer.from(plain!.data!).toString()) as Record<string, unknown>;
    assert.equal(body.operator, undefined, 'fields a decision does not have never reach the workflow');
    const opened = openSeal(body, codec.keys);
    assert.ok(opened.ok);
    assert.deepEqual(
      [opened.claims.operator, opened.claims.workflowId, opened.claims.decision],
      [ana.account.name, handle.workflowId, 'resolve'],
    );
  });

  it('answers an update no worker has judged yet without a verdict, and with it when asked again later', async () => {
    const handle = await held();
    const { hold } = await handle.query(statusQuery);
    await worker?.stop();
    worker = undefined;
    // Sent while no worker runs (the operator API reads the status first, which needs a worker): the
    // server keeps the update until a worker takes the workflow's next task.
    const updateId = randomUUID();
    const input = sealFor(
      ana.account,
      { workflowId: handle.workflowId, action: 'mark-sent', externalId: 'ext-5', reason: 'seen it' },
      { hold },
    );
    await assert.rejects(
      temporal.client.withDeadline(Date.now() + 1000, () =>
        handle.startUpdate(resolveUpdate, {
          args: [input],
          updateId,
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        }),
      ),
      WorkflowUpdateRPCTimeoutOrCancelledError,
    );
    const { runId } = await handle.describe();
    const ask = (waitMs: number) =>
      api(`${path(handle.workflowId)}/updates/${updateId}?runId=${runId}&waitMs=${waitMs}`, {
        headers: bearer(ana),
      });
    const early = await ask(1000);
    assert.equal(early.status, 200);
    assert.deepEqual(await early.json(), {
      workflowId: handle.workflowId,
      runId,
      updateId,
      operator: ana.account.name,
    });

    await startWorker();
    const late = (await (await ask(15_000)).json()) as DecisionAnswer;
    assert.equal(late.verdict, 'Accepted: marked sent as ext-5');
    assert.equal((await handle.query(statusQuery)).state, 'succeeded');
    const unknown = await api(`${path(handle.workflowId)}/updates/no-such-update?runId=${runId}`, {
      headers: bearer(ana),
    });
    assert.equal(unknown.status, 400);
  });

  it('answers a body that is not JSON, or an endpoint it does not have, as bad input', async () => {
    const broken = await api(`${path('webhook:sandbox:x')}/resolve`, {
      method: 'POST',
      headers: bearer(ana),
      body: '{"action": "discard", "reason":',
    });
    assert.equal(broken.status, 400);
    assert.deepEqual(await broken.json(), { error: 'the request body is not valid JSON', code: 'bad_input' });
    const missing = await api('/nothing-here', { headers: bearer(ana) });
    assert.equal(missing.status, 404);
    const wrongDecision = await api(`${path('webhook:sandbox:x')}/undo`, {
      method: 'POST',
      headers: bearer(ana),
      body: JSON.stringify({ reason: 'r' }),
    });
    assert.deepEqual(
      [wrongDecision.status, ((await wrongDecision.json()) as { error: string }).error],
      [400, 'a decision is resolve, approve or reprocess'],
    );
  });
});
