// Readiness tells the truth about search attributes: on a namespace that lacks the ones replyflow
// sets, /readyz refuses and the worker does not start, both naming the exact command that fixes it;
// running that command makes both ready. A start Temporal refuses keeps Temporal's reason.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal as proto } from '@temporalio/proto';
import type { ReceiverHandle } from '../../src/receiver';
import { DeadlineCalls } from '../../src/receiver/deadline-calls';
import { TemporalUnavailableError } from '../../src/receiver/errors';
import { temporalEventStarter } from '../../src/receiver/start-event';
import { StartQueue } from '../../src/receiver/start-queue';
import { findTemporalCli } from '../../src/temporal/binaries';
import { connectClient, payloadCodec, type TemporalClient } from '../../src/temporal/client';
import { SearchAttributesMissingError } from '../../src/temporal/errors';
import { createWorker } from '../../src/worker';
import { ALL_SEARCH_ATTRIBUTES, Tenant } from '../../workflows/search-attributes';
import { startTestReceiver } from '../support/receiver';
import { database, devServer, TEST_ENCRYPTION_KEY, workflowBundle } from '../support/servers';
import { sandboxEvent, silentLogger, testConfig, uniqueId } from '../support/system';

/** Polls `check` until it holds or the deadline passes (namespace changes reach the frontend's cache). */
async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('search attributes: readiness and the worker start check (dev server)', function () {
  this.timeout(180_000);
  const namespace = uniqueId('bare-');
  const config = testConfig({ TEMPORAL_NAMESPACE: namespace });
  let address: string;
  let temporal: TemporalClient;
  let receiver: ReceiverHandle;

  const readyz = async () => {
    const response = await fetch(`${receiver.url}/readyz`);
    return {
      status: response.status,
      body: (await response.json()) as { checks: Record<string, string>; problems?: string[] },
    };
  };

  before(async () => {
    address = (await devServer()).address;
    temporal = await connectClient(address, 'default', TEST_ENCRYPTION_KEY);
    // A namespace of its own, registered without any of replyflow's search attributes.
    await temporal.connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    await eventually('the namespace is served', async () => {
      await temporal.connection.workflowService.describeNamespace({ namespace });
      return true;
    });
    receiver = await startTestReceiver({ config, temporalAddress: address });
  });
  after(async () => {
    await receiver?.stop();
    await temporal?.close();
  });

  it("keeps Temporal's own reason when it refuses a start (a 503, whose cause names the attribute)", async () => {
    const calls = new DeadlineCalls(temporal.connection);
    const starter = temporalEventStarter({
      client: new Client({ connection: temporal.connection, namespace }),
      calls,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      deadlineMs: 10_000,
      queue: new StartQueue(1),
      inputCodec: payloadCodec(TEST_ENCRYPTION_KEY, {}, { refuseUnencrypted: true }),
    });
    await assert.rejects(starter.start(sandboxEvent({ conversationId: uniqueId('c') })), (err: unknown) => {
      assert.ok(err instanceof TemporalUnavailableError);
      assert.ok(err.cause instanceof Error, 'the client error is kept as the cause');
      assert.match(err.message, /search attribute/i);
      return true;
    });
  });

  it('refuses to start a worker, naming every missing attribute and the command', async () => {
    await assert.rejects(
      createWorker({
        config,
        pool: (await database()).pool,
        temporalAddress: address,
        encryptionKey: TEST_ENCRYPTION_KEY,
        logger: silentLogger,
        workerOptions: { workflowBundle: await workflowBundle() },
      }),
      (err: unknown) => {
        assert.ok(err instanceof SearchAttributesMissingError);
        assert.deepEqual(
          err.problems.map((p) => p.name).sort(),
          ALL_SEARCH_ATTRIBUTES.map((k) => k.name).sort(),
        );
        return true;
      },
    );
  });

  it('answers /readyz 503 with the command, and ready once the command has run', async () => {
    const before = await readyz();
    assert.equal(before.status, 503);
    assert.deepEqual(before.body.checks, { temporal: 'up', postgres: 'up', searchAttributes: 'down' });
    const command = /temporal operator search-attribute create .*$/.exec(
      before.body.problems?.[0] ?? '',
    )?.[0];
    assert.ok(command, `a command in ${JSON.stringify(before.body.problems)}`);

    // Run it exactly as printed (the words after `temporal`), with the CLI the project installs.
    const ran = spawnSync(findTemporalCli(), command.split(' ').slice(1), { encoding: 'utf8' });
    assert.equal(ran.status, 0, ran.stderr);

    await eventually('/readyz says ready', async () => (await readyz()).status === 200);
    const { worker, connection } = await createWorker({
      config,
      pool: (await database()).pool,
      temporalAddress: address,
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      workerOptions: { workflowBundle: await workflowBundle() },
    });
    await worker.runUntil(async () => assert.equal(worker.getState(), 'RUNNING'));
    await connection.close();
  });
});

describe('search attributes: a namespace set up before Tenant existed (dev server)', function () {
  this.timeout(180_000);
  const namespace = uniqueId('pre-tenant-');
  const config = testConfig({ TEMPORAL_NAMESPACE: namespace });
  let temporal: TemporalClient;
  let receiver: ReceiverHandle;

  before(async () => {
    const address = (await devServer()).address;
    temporal = await connectClient(address, 'default', TEST_ENCRYPTION_KEY);
    await temporal.connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    await eventually('the namespace is served', async () => {
      await temporal.connection.workflowService.describeNamespace({ namespace });
      return true;
    });
    const { IndexedValueType } = proto.api.enums.v1;
    await temporal.connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        ALL_SEARCH_ATTRIBUTES.filter((key) => key.name !== Tenant.name).map((key) => [
          key.name,
          IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`],
        ]),
      ),
    });
    receiver = await startTestReceiver({ config, temporalAddress: address });
  });
  after(async () => {
    await receiver?.stop();
    await temporal?.close();
  });

  it('answers /readyz 503 naming only Tenant and the one command that adds it', async () => {
    let problems: string[] = [];
    await eventually('/readyz names what is missing', async () => {
      const response = await fetch(`${receiver.url}/readyz`);
      problems = ((await response.json()) as { problems?: string[] }).problems ?? [];
      return response.status === 503 && problems.length > 0 && !/ReplyState/.test(problems.join(' '));
    });
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /lacks the search attributes Tenant;/);
    assert.match(
      problems[0]!,
      new RegExp(
        `temporal operator search-attribute create .* --namespace ${namespace} --name Tenant --type Keyword$`,
      ),
    );
  });
});
