// Work by tenant through the operator CLI, against the real dev server, PostgreSQL, a receiver (its
// operator API and codec server) and a worker whose sandbox target is a fake: the `Tenant` search
// attribute the receiver sets at start, `held`/`failed`/`reprocess --tenant`, and operators limited to
// tenants, who see only their tenants' work and are refused (audited, nothing sent) on another's: by
// the operator API, by the codec server's sealing endpoint, and by the workflow's own decision check.

import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { updateVerdict } from '../../src/operator/decisions';
import type { Inspection } from '../../src/operator/inspect';
import type { SelectionItem } from '../../src/operator/selection';
import type { WorkItem } from '../../src/operator/workflows';
import type { InboundEvent } from '../../src/providers/types';
import { eventStartOptions } from '../../src/receiver/start-event';
import { resolveUpdate, statusQuery } from '../../workflows/messages';
import { Tenant } from '../../workflows/search-attributes';
import { eventually } from '../support/eventually';
import {
  operatorAdmin,
  operatorDecides,
  sealFor,
  type TestOperator,
  testOperator,
} from '../support/operators';
import { sandboxEvent, uniqueId, workerSuite } from '../support/system';
import { auditRows, waitForState } from '../support/workflows';
import { adminEnv, cli, cliCodecReceiver, cliJson } from './harness';

describe('operator CLI: work by tenant, operators limited to tenants (dev server, PostgreSQL, codec server, a worker, a fake target)', function () {
  this.timeout(180_000);
  const suite = workerSuite();
  // This run's own tenants: nothing else any test starts carries them.
  const T1 = `slack:${uniqueId('T')}`;
  const T2 = `slack:${uniqueId('T')}`;
  /** Every tenant, view only. */
  let viewer: TestOperator;
  /** Team T1's operator: may discard, reprocess and move conversations, only T1's work. */
  let teamA: TestOperator;

  before(async () => {
    viewer = await testOperator(['view']);
    const name = uniqueId('team-a-');
    const added = await cli(
      ['operator', 'add', name, '--roles', 'discard,reprocess,conversation', '--tenants', T1],
      {
        env: await adminEnv(),
      },
    );
    assert.equal(added.code, 0, added.stderr);
    const token = /^token: (\S+)$/m.exec(added.stdout)?.[1];
    assert.ok(token);
    const account = await (await operatorAdmin()).get(name);
    assert.ok(account);
    teamA = { account, token };
  });

  const queue = () => suite.config.TEMPORAL_TASK_QUEUE;

  /** A sandbox event that came through `tenant`, started as the receiver starts it (search attributes too). */
  async function start(tenant: string, event: InboundEvent): Promise<WorkflowHandle> {
    return suite.temporal.client.workflow.start(
      'handleEvent',
      eventStartOptions({ ...event, tenant }, queue()),
    );
  }

  async function held(tenant: string): Promise<WorkflowHandle> {
    suite.fake.next('accept-then-drop');
    const handle = await start(
      tenant,
      sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1', target: 'sandbox-blind' }),
    );
    await waitForState(handle, 'held');
    return handle;
  }

  async function failed(tenant: string): Promise<WorkflowHandle> {
    suite.fake.next({ status: 404 });
    const handle = await start(tenant, sandboxEvent({ conversationId: uniqueId('c'), messageId: 'm1' }));
    await waitForState(handle, 'failed');
    return handle;
  }

  const ids = (items: { workflowId: string }[]) => items.map((i) => i.workflowId).sort();
  /** What `replyflow <argv> --json` lists once visibility shows every workflow of `expected`. */
  const listedWhen = <T extends { workflowId: string }>(
    argv: string[],
    as: TestOperator,
    expected: string[],
  ) =>
    eventually(`replyflow ${argv.join(' ')} lists ${expected.join(', ')}`, () => cliJson<T[]>(argv, { as }), {
      until: (items) => expected.every((id) => ids(items).includes(id)),
      intervalMs: 200,
    });

  async function clean(...handles: WorkflowHandle[]) {
    for (const handle of handles) {
      assert.match(
        await operatorDecides(handle, 'resolve', { action: 'discard', reason: 'clean up' }),
        /^Accepted/,
      );
      await handle.result();
    }
  }

  it('sets the Tenant search attribute at start and lists held work of one tenant with held --tenant', async () => {
    const [a, b] = await Promise.all([held(T1), held(T2)]);
    const description = await a.describe();
    assert.equal(description.typedSearchAttributes.get(Tenant), T1);

    const onlyT1 = await listedWhen<WorkItem>(['held', '--tenant', T1], viewer, [a.workflowId]);
    assert.deepEqual(ids(onlyT1), [a.workflowId]);
    assert.equal(onlyT1[0]!.tenant, T1);
    const onlyT2 = await listedWhen<WorkItem>(['held', '--tenant', T2], viewer, [b.workflowId]);
    assert.deepEqual(ids(onlyT2), [b.workflowId]);
    const table = await cli(['held', '--tenant', T1], { as: viewer });
    assert.match(table.stdout.split('\n')[0]!, /INTEGRATION\s+TENANT\s+BUSINESS KEY/);
    assert.match(table.stdout, new RegExp(`${a.workflowId}\\s+held\\s+sandbox\\s+${T1}`));
    assert.doesNotMatch(table.stdout, new RegExp(b.workflowId));
    await clean(a, b);
  });

  it('filters failed and the reprocess selection by --tenant, and refuses a value that is not a tenant id', async () => {
    const [a, b] = await Promise.all([failed(T1), failed(T2)]);
    const failedT2 = await listedWhen<WorkItem>(['failed', '--tenant', T2], viewer, [b.workflowId]);
    assert.deepEqual(ids(failedT2), [b.workflowId]);
    const plan = await cliJson<{ plan: SelectionItem[]; results: unknown[] }>(
      ['reprocess', '--tenant', T1, '--dry-run', '--reason', 'see the plan'],
      { as: viewer },
    );
    assert.deepEqual(ids(plan.plan), [a.workflowId]);

    const sent = suite.fake.requests.length;
    for (const argv of [
      ['held', '--tenant', 'slack:T1" OR Tenant != "x'],
      ['failed', '--tenant', 'T1'],
      ['reprocess', '--tenant', 'acme', '--reason', 'r', '--yes'],
    ]) {
      const refused = await cli(argv, { as: viewer });
      assert.equal(refused.code, 2, argv.join(' '));
      assert.match(refused.stderr, /^replyflow: --tenant: not a tenant id \(slack:T…/);
    }
    // The operator API checks it too, for any client.
    const api = await fetch(
      `${(await cliCodecReceiver()).url}/operator/work/held?tenant=${encodeURIComponent('x" OR 1=1')}`,
      { headers: { authorization: `Bearer ${viewer.token}` } },
    );
    assert.equal(api.status, 400);
    assert.match(((await api.json()) as { error: string }).error, /^bad request: tenant: not a tenant id/);
    assert.equal(suite.fake.requests.length, sent, 'nothing was sent');
    await clean(a, b);
  });

  it("lets an operator of team A see only A's work: B's held work is not listed, not shown, not audited for them", async () => {
    const [a, b] = await Promise.all([held(T1), held(T2)]);
    // Both are visible to an operator of every tenant, so visibility has them.
    await listedWhen<WorkItem>(['held'], viewer, [a.workflowId, b.workflowId]);
    const mine = await cliJson<WorkItem[]>(['held'], { as: teamA });
    assert.ok(ids(mine).includes(a.workflowId));
    assert.ok(!ids(mine).includes(b.workflowId), 'B’s held work is not listed');
    assert.ok(
      mine.every((w) => w.tenant === T1),
      'only T1’s work is listed',
    );
    // Asking for B's tenant by name, or through a typed query, gives nothing of B's either.
    assert.deepEqual(await cliJson<WorkItem[]>(['held', '--tenant', T2], { as: teamA }), []);
    const widened = await cliJson<{ plan: SelectionItem[] }>(
      [
        'reprocess',
        '--query',
        `WorkflowId = "${b.workflowId}") OR (WorkflowId = "${b.workflowId}"`,
        '--dry-run',
        '--reason',
        'r',
      ],
      { as: teamA },
    );
    assert.deepEqual(widened.plan, []);

    const shown = await cli(['show', b.workflowId], { as: teamA });
    assert.equal(shown.code, 2);
    assert.equal(shown.stderr, `replyflow: no workflow ${b.workflowId}\n`);
    const own = await cliJson<Inspection>(['show', a.workflowId], { as: teamA });
    assert.deepEqual([own.workflow.status.state, own.workflow.tenant], ['held', T1]);
    await clean(b);
    assert.ok((await auditRows(b.workflowId)).length > 0, 'B’s workflow has audit rows');
    assert.deepEqual(await cliJson(['audit', '--workflow', b.workflowId], { as: teamA }), []);
    await clean(a);
  });

  it("refuses team A's operator a decision on B's work through the operator API: audited, nothing sent, still held", async () => {
    const b = await held(T2);
    const sent = suite.fake.requests.length;
    const refused = await cli(['resolve', b.workflowId, '--action', 'discard', '--reason', 'not mine'], {
      as: teamA,
    });
    assert.equal(refused.code, 2);
    assert.equal(refused.stderr, `replyflow: no workflow ${b.workflowId}\n`);
    const rows = await auditRows(b.workflowId);
    assert.deepEqual(
      rows.map((r) => [r.actor, r.action, r.reason, r.result]),
      [
        [
          teamA.account.name,
          'discard',
          'not mine',
          `rejected: not permitted: ${teamA.account.name} works for tenants ${T1}, and this work is tenant ${T2}'s`,
        ],
      ],
    );
    assert.equal((await b.query(statusQuery)).state, 'held');
    assert.equal(suite.fake.requests.length, sent, 'nothing was sent');

    // A's own work: decided as usual.
    const a = await failed(T1);
    const reprocessed = await cli(['reprocess', a.workflowId, '--reason', 'fixed the channel'], {
      as: teamA,
    });
    assert.equal(reprocessed.code, 0, reprocessed.stderr);
    assert.match(reprocessed.stdout, /Accepted/);
    assert.equal((await a.result()).state, 'succeeded');
    await clean(b);
  });

  it("refuses to seal team A's operator a decision on B's work at the codec server (the Web UI's path), audited", async () => {
    const b = await held(T2);
    const body = { workflowId: b.workflowId, action: 'discard', reason: 'from the web ui' };
    const response = await fetch(`${(await cliCodecReceiver()).url}/codec/encode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${teamA.token}` },
      body: JSON.stringify({
        payloads: [
          {
            metadata: { encoding: Buffer.from('json/plain').toString('base64') },
            data: Buffer.from(JSON.stringify(body)).toString('base64'),
          },
        ],
      }),
    });
    assert.equal(response.status, 422);
    assert.equal(
      ((await response.json()) as { error: string }).error,
      `the codec server encodes operator decisions only: no running workflow ${b.workflowId}`,
    );
    assert.deepEqual(
      (await auditRows(b.workflowId)).map((r) => [r.actor, r.action, r.reason, r.result]),
      [
        [
          teamA.account.name,
          'discard',
          'from the web ui',
          `rejected: not permitted: ${teamA.account.name} works for tenants ${T1}, and this work is tenant ${T2}'s`,
        ],
      ],
    );
    // Nor may they read payloads: a payload does not say whose workflow it is from.
    const decode = await fetch(`${(await cliCodecReceiver()).url}/codec/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${teamA.token}` },
      body: JSON.stringify({ payloads: [] }),
    });
    assert.equal(decode.status, 403);
    assert.equal((await b.query(statusQuery)).state, 'held');
    await clean(b);
  });

  it('refuses team A’s operator what spans every tenant: reconcile, patches and conversation moves, audited', async () => {
    for (const [argv, action, target] of [
      [['reconcile'], 'reconcile', 'reconcile'],
      [['patches'], 'patches', 'patches'],
      [
        ['conversation', 'handback', `sandbox:${uniqueId('c')}`, '--reason', 'r'],
        'conversation:handback',
        '',
      ],
    ] as const) {
      const refused = await cli([...argv], { as: teamA });
      assert.equal(refused.code, 2, argv.join(' '));
      assert.match(refused.stderr, /covers every tenant's work: \S+ works for some tenants only\n$/);
      const rows = await auditRows(target || `conversation:${argv[2]}`);
      assert.deepEqual(
        rows.filter((r) => r.actor === teamA.account.name).map((r) => [r.action, r.result]),
        [[action, "rejected: not permitted: every tenant's work"]],
      );
    }
  });

  it("refuses in the workflow's own decision check a sealed decision of team A's operator on B's work", async () => {
    // A seal made for them elsewhere (an older codec server, or before their tenants were limited).
    const b = await failed(T2);
    const sent = suite.fake.requests.length;
    const { hold } = await b.query(statusQuery);
    const sealed = sealFor(
      teamA.account,
      { workflowId: b.workflowId, action: 'discard', reason: 'sealed before' },
      { decision: 'resolve', hold },
    );
    const reason = `not permitted: ${teamA.account.name} works for tenants ${T1}, and this work is tenant ${T2}'s`;
    assert.equal(
      await updateVerdict(b.executeUpdate(resolveUpdate, { args: [sealed] })),
      `Rejected: ${reason}`,
    );
    const rows = await auditRows(b.workflowId);
    assert.deepEqual(
      rows.map((r) => [r.actor, r.action, r.result]),
      [[teamA.account.name, 'discard', `rejected: ${reason}`]],
    );
    assert.equal((await b.query(statusQuery)).state, 'failed');
    assert.equal(suite.fake.requests.length, sent, 'nothing was sent');
    await clean(b);
  });
});
