// A workflow started under an event's id by someone other than the receiver must not make the real,
// signed delivery of that event a "duplicate" (the event would be lost). Played as an attacker with
// access to Temporal would play it: the `temporal` CLI starts `handleEvent` under a future event id,
// with plaintext input or with another event's captured ciphertext. The real delivery is then
// answered 202 and processed once; a real redelivery, concurrent ones included, is still 200
// duplicate. Real dev server, PostgreSQL, receiver and worker over HTTP.
import assert from 'node:assert/strict';
import type { ReceiverHandle } from '../../src/receiver';
import { eventually } from '../support/eventually';
import { post, sandboxRequest, startTestReceiver } from '../support/receiver';
import { devServer } from '../support/servers';
import { sandboxEvent, uniqueId, workerSuite } from '../support/system';
import { temporalCli } from '../support/temporal-cli';

describe('a start under a future event id that the receiver did not make (dev server, the temporal CLI)', function () {
  this.timeout(180_000);
  const suite = workerSuite();
  let receiver: ReceiverHandle;
  before(async () => {
    receiver = await startTestReceiver({
      config: suite.config,
      temporalAddress: (await devServer()).address,
    });
  });
  after(() => receiver?.stop());

  /** `temporal workflow start --type handleEvent …` against the suite's dev server, as anyone with access can. */
  const impostorStart = async (workflowId: string, taskQueue: string, input: string[]) => {
    const started = await temporalCli([
      'workflow',
      'start',
      '--type',
      'handleEvent',
      '--task-queue',
      taskQueue,
      '--workflow-id',
      workflowId,
      ...input,
    ]);
    assert.ok(started.ok, started.out);
  };
  const plaintext = (event: object) => ['--input', JSON.stringify(event)];

  const runsOf = async (workflowId: string) => {
    const runs: { runId: string; status: string }[] = [];
    for await (const info of suite.temporal.client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
      runs.push({ runId: info.runId, status: info.status.name });
    return runs;
  };
  const statusOf = async (workflowId: string) =>
    (await suite.temporal.client.workflow.getHandle(workflowId).describe()).status.name;

  /** The real delivery of a sandbox event, signed as the sandbox page signs it. */
  const delivery = (eventId: string, conversationId: string) =>
    sandboxRequest(suite.config, { eventId, conversationId, messageId: 'm1' });
  const answerTo = async (request: ReturnType<typeof delivery>) => {
    const response = await post(receiver, request);
    return { status: response.status, body: (await response.json()) as unknown };
  };

  /** A plaintext start of the event under its id, which the worker has failed as refused. */
  async function refusedImpostor(workflowId: string, conversationId: string, eventId: string) {
    await impostorStart(
      workflowId,
      suite.config.TEMPORAL_TASK_QUEUE,
      plaintext(sandboxEvent({ conversationId, eventId, messageId: 'm1' })),
    );
    await eventually(
      'the worker fails the plaintext start',
      async () => (await statusOf(workflowId)) === 'FAILED',
    );
  }

  /** The id's runs end up in these states (visibility, which lags a little behind the runs themselves). */
  const runsAre = (workflowId: string, statuses: string[]) =>
    eventually(`the runs of ${workflowId} are ${statuses.join(', ')}`, () => runsOf(workflowId), {
      until: (runs) =>
        runs
          .map((r) => r.status)
          .sort()
          .join() === [...statuses].sort().join(),
      describe: (runs) => runs.map((r) => r.status).join(', '),
    });

  /** The delivery's own workflow ran to the end and replied once. */
  async function processedOnce(workflowId: string, conversationId: string) {
    const result = await suite.temporal.client.workflow.getHandle(workflowId).result();
    assert.equal(result.state, 'succeeded');
    assert.equal(suite.fake.deliveredTo(conversationId).length, 1, 'one bot reply');
  }

  it('answers 202 to the real delivery after a plaintext start failed as refused, and processes it once', async () => {
    const conversationId = uniqueId('c');
    const eventId = uniqueId('evt_');
    const workflowId = `webhook:sandbox:${eventId}`;
    await refusedImpostor(workflowId, conversationId, eventId);

    assert.deepEqual(await answerTo(delivery(eventId, conversationId)), {
      status: 202,
      body: { status: 'accepted', workflowId },
    });
    await processedOnce(workflowId, conversationId);
    // A real redelivery afterwards is a duplicate, as ever.
    assert.deepEqual(await answerTo(delivery(eventId, conversationId)), {
      status: 200,
      body: { status: 'duplicate', workflowId },
    });
    await runsAre(workflowId, ['COMPLETED', 'FAILED']);
  });

  it('terminates a plaintext start that is still running (no worker took it yet) and starts the real one', async () => {
    const conversationId = uniqueId('c');
    const eventId = uniqueId('evt_');
    const workflowId = `webhook:sandbox:${eventId}`;
    // On a queue no worker polls: nothing refuses it, it just waits there.
    await impostorStart(
      workflowId,
      uniqueId('nobody-polls-'),
      plaintext(sandboxEvent({ conversationId, eventId, messageId: 'm1' })),
    );
    assert.equal(await statusOf(workflowId), 'RUNNING');

    assert.equal((await answerTo(delivery(eventId, conversationId))).status, 202);
    await processedOnce(workflowId, conversationId);
    await runsAre(workflowId, ['COMPLETED', 'TERMINATED']);
  });

  it("does not take another event's captured ciphertext, run under this id, for this event", async () => {
    // Event X, delivered for real: its encrypted input is in its history, readable by anyone with access.
    const earlier = uniqueId('c');
    const x = delivery(uniqueId('evt_'), earlier);
    assert.equal((await answerTo(x)).status, 202);
    const xId = `webhook:sandbox:${x.eventId}`;
    await processedOnce(xId, earlier);
    const history = await suite.temporal.client.workflow.getHandle(xId).fetchHistory();
    const [captured] = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
    const meta = Object.entries(captured!.metadata!).flatMap(([key, value]) => [
      '--input-meta',
      `${key}=${Buffer.from(value).toString()}`,
    ]);

    // Started under a future event id Y: the worker refuses it (it is X's event, not Y's).
    const conversationId = uniqueId('c');
    const eventId = uniqueId('evt_');
    const workflowId = `webhook:sandbox:${eventId}`;
    await impostorStart(workflowId, suite.config.TEMPORAL_TASK_QUEUE, [
      '--input',
      Buffer.from(captured!.data!).toString('base64'),
      '--input-base64',
      ...meta,
    ]);
    // The worker refuses it: the input is another workflow's event.
    assert.equal(
      await eventually('the replayed start closes', async () => {
        const status = await statusOf(workflowId);
        return status !== 'RUNNING' && status;
      }),
      'FAILED',
    );

    assert.equal((await answerTo(delivery(eventId, conversationId))).status, 202);
    await processedOnce(workflowId, conversationId);
    assert.equal(suite.fake.deliveredTo(earlier).length, 1, 'X was not answered twice');
  });

  it('starts the real event once when its deliveries arrive together after a plaintext start', async () => {
    const conversationId = uniqueId('c');
    const eventId = uniqueId('evt_');
    const workflowId = `webhook:sandbox:${eventId}`;
    await refusedImpostor(workflowId, conversationId, eventId);

    const request = delivery(eventId, conversationId);
    const answers = await Promise.all(Array.from({ length: 10 }, () => answerTo(request)));
    assert.deepEqual(
      answers.map((a) => a.status).sort(),
      [200, 200, 200, 200, 200, 200, 200, 200, 200, 202],
      JSON.stringify(answers),
    );
    await processedOnce(workflowId, conversationId);
    await runsAre(workflowId, ['COMPLETED', 'FAILED']);
  });
});
