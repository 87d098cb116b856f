// What an operator's machine needs for the CLI: replyflow's URL and the operator's token, nothing else.
// Every operator command against the real receiver, dev server and PostgreSQL, with the database and
// Temporal addresses pointed at closed ports and no payload key; how the URL is found (REPLYFLOW_URL,
// the older REPLYFLOW_CODEC_URL, the default of `replyflow start`); what an unreachable URL says; and
// ids with characters a URL path must not carry raw.
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AuditEntry } from '../../src/operator/audit';
import type { Inspection } from '../../src/operator/inspect';
import type { ReconcileReport } from '../../src/operator/reconcile';
import type { SelectionItem } from '../../src/operator/selection';
import type { WorkItem } from '../../src/operator/workflows';
import { eventually } from '../support/eventually';
import { type TestOperator, testOperator } from '../support/operators';
import { database } from '../support/servers';
import { sandboxEvent, uniqueId, workerSuite } from '../support/system';
import { auditRows, startEvent, waitForState } from '../support/workflows';
import { type CliResult, cli, cliCodecReceiver, cliJson, cliProcess } from './harness';

/** A port nothing listens on (just now): one was bound and closed again. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Where nothing listens: a CLI that tried to use these would fail. */
const NOWHERE = {
  DATABASE_URL: 'postgres://replyflow:nothing@127.0.0.1:1/replyflow',
  TEMPORAL_ADDRESS: '127.0.0.1:1',
};

describe("operator CLI: replyflow's URL and a token are all it needs (receiver, dev server, PostgreSQL)", function () {
  this.timeout(180_000);
  const suite = workerSuite();
  let desk: TestOperator;

  before(async () => {
    desk = await testOperator(['resend', 'mark-sent', 'discard', 'reprocess', 'conversation']);
  });

  async function held() {
    suite.fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' });
    const handle = await startEvent(suite.temporal.client, suite.config.TEMPORAL_TASK_QUEUE, event);
    await waitForState(handle, 'held');
    return handle;
  }

  const oneLine = (result: CliResult) => {
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    return result.stderr.trim();
  };

  it('runs every operator command with the database and Temporal out of reach and no payload key', async () => {
    const handle = await held();
    const id = handle.workflowId;
    const options = { as: desk, env: NOWHERE };
    const key = `sandbox:${uniqueId('c')}`;
    await (await database()).pool.query(
      `INSERT INTO conversations (id, machine, state, version) VALUES ($1, 'chat', 'bot_handling', 1)`,
      [key],
    );

    const listed = await eventually('visibility lists the held item', async () =>
      (await cliJson<WorkItem[]>(['held'], options)).find((w) => w.workflowId === id),
    );
    assert.equal(listed.state, 'held');
    assert.deepEqual(await cliJson<WorkItem[]>(['failed', '--integration', 'none-such'], options), []);
    const shown = await cliJson<Inspection>(['show', id], options);
    assert.deepEqual([shown.workflow.status.state, shown.effects.length], ['held', 1]);
    const plan = await cliJson<{ plan: SelectionItem[] }>(
      ['reprocess', id, '--dry-run', '--reason', 'look first'],
      options,
    );
    assert.deepEqual(
      plan.plan.map((p) => [p.workflowId, p.verdict]),
      [[id, 'skip']],
    );
    const reconciled = await cli(['reconcile', '--json'], options);
    assert.ok([0, 1].includes(reconciled.code), reconciled.stderr);
    assert.ok((JSON.parse(reconciled.stdout) as ReconcileReport).awaitingOperator.held >= 1);
    const moved = await cli(['conversation', 'handoff', key, '--reason', 'a person takes it'], options);
    assert.deepEqual(
      [moved.code, moved.stdout.trim()],
      [0, `handoff ${key}: bot_handling → human_handling.`],
    );

    // The real executable, whose environment holds no key, no database and no Temporal address either.
    const decided = await cliProcess(
      ['resolve', id, '--action', 'mark-sent', '--external-id', 'ext-9', '--reason', 'seen in the chat'],
      options,
    );
    assert.equal(decided.code, 0, decided.stderr);
    assert.equal(decided.stdout.trimEnd().split('\n')[1], 'Accepted: marked sent as ext-9');
    assert.equal((await handle.result()).state, 'succeeded');

    const audit = await cliJson<AuditEntry[]>(['audit', '--workflow', id], options);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.result]),
      [[desk.account.name, 'mark-sent', 'accepted: marked sent as ext-9']],
    );
  });

  it('finds replyflow from REPLYFLOW_URL, from the older REPLYFLOW_CODEC_URL, or on this machine’s PORT', async () => {
    const receiver = await cliCodecReceiver();
    const reaches = async (env: Record<string, string | undefined>) => {
      const result = await cli(['held', '--json'], { as: desk, env: { ...NOWHERE, ...env } });
      assert.equal(result.code, 0, `${JSON.stringify(env)}: ${result.stderr}`);
    };
    await reaches({ REPLYFLOW_URL: `${receiver.url}/` });
    await reaches({ REPLYFLOW_URL: undefined, REPLYFLOW_CODEC_URL: `${receiver.url}/codec` });
    await reaches({ REPLYFLOW_URL: undefined, REPLYFLOW_CODEC_URL: `${receiver.url}/codec/` });
    // Neither set: the receiver `replyflow start` runs here, on PORT.
    await reaches({ REPLYFLOW_URL: undefined, PORT: String(receiver.port) });

    const notCodec = await cli(['held'], {
      as: desk,
      env: { REPLYFLOW_URL: undefined, REPLYFLOW_CODEC_URL: `${receiver.url}/somewhere` },
    });
    assert.equal(notCodec.code, 2);
    assert.match(
      oneLine(notCodec),
      /^replyflow: REPLYFLOW_CODEC_URL .* set REPLYFLOW_URL to the receiver's URL/,
    );
  });

  it('says in one line that replyflow is out of reach, naming REPLYFLOW_URL, and exits 1', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    for (const argv of [['held'], ['resolve', 'webhook:sandbox:x', '--action', 'discard', '--reason', 'r']]) {
      const result = await cli(argv, { as: desk, env: { REPLYFLOW_URL: url } });
      assert.equal(result.code, 1, argv[0]);
      assert.equal(
        oneLine(result),
        `replyflow: cannot reach replyflow at ${url} (ECONNREFUSED; REPLYFLOW_URL): is \`replyflow start\` (or a receiver) running there? Set REPLYFLOW_URL to where it runs`,
      );
      assert.ok(!result.stderr.includes(desk.token));
    }
  });

  it('carries ids with :, /, ?, #, % and spaces intact to replyflow', async () => {
    const odd = `webhook:sandbox:a/b?c=1#d%2Fe f${uniqueId()}`;
    const shown = await cli(['show', odd], { as: desk });
    assert.deepEqual([shown.code, oneLine(shown)], [2, `replyflow: no workflow ${odd}`]);
    const decided = await cli(['approve', odd, '--reason', 'r'], { as: desk });
    assert.deepEqual([decided.code, oneLine(decided)], [2, `replyflow: no workflow ${odd}`]);

    const key = `sandbox:x/y?z#%41 ${uniqueId()}`;
    await (await database()).pool.query(
      `INSERT INTO conversations (id, machine, state, version) VALUES ($1, 'chat', 'bot_handling', 1)`,
      [key],
    );
    const moved = await cli(['conversation', 'close', key, '--reason', 'done'], { as: desk });
    assert.equal(moved.code, 0, moved.stderr);
    assert.deepEqual(
      (await auditRows(`conversation:${key}`)).map((a) => [a.action, a.result]),
      [['conversation:close', 'accepted']],
    );
  });
});
