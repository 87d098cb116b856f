// Revocations are announced once, whoever finds them: receivers side by side, and one started after the
// announcement closed, start one `tenantRevoked` per revocation; a tenant installed and revoked again
// is a new revocation, announced again; one older than the look-back is left. Dev server, PostgreSQL;
// no worker, so the announcements stay as they were started.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { createTenantCredentialStore, revocationOf, revokedSince } from '../../src/db/tenant-credentials';
import { connectClient, payloadCodec, type TemporalClient } from '../../src/temporal/client';
import { LOOKBACK_MS, revocationAnnouncer } from '../../src/tenants/revocation-announcer';
import { tenantRevokedWorkflowId } from '../../workflows/messages';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { silentLogger, uniqueId } from '../support/system';

describe('revocation announcer: one tenantRevoked per revocation (dev server, PostgreSQL)', function () {
  this.timeout(60_000);
  let temporal: TemporalClient;
  before(async () => {
    temporal = await connectClient((await devServer()).address, 'default', TEST_ENCRYPTION_KEY);
  });
  after(() => temporal?.close());

  it('starts one announcement per revocation however many receivers look, and one for a new revocation', async () => {
    const { pool } = await database();
    const store = createTenantCredentialStore(pool, payloadCodec(TEST_ENCRYPTION_KEY));
    const taskQueue = uniqueId('q-');
    const receiver = () =>
      revocationAnnouncer({
        pool,
        client: temporal.client,
        taskQueue,
        logger: silentLogger,
        call: (start) => start(),
        everyMs: 0,
      });
    const tenant = `slack:T${randomBytes(6).toString('hex').toUpperCase()}`;
    const by = { by: 'test' };
    const install = () => store.put(tenant, { source: 'admin', secret: { botToken: 'xoxb-test' } }, by);
    const announcement = async () => {
      const revocation = await revocationOf(pool, tenant);
      assert.ok(revocation, 'revoked');
      return temporal.client.workflow.getHandle(
        tenantRevokedWorkflowId(tenant, String(revocation.revokedAt.getTime())),
      );
    };

    await install();
    await store.revoke(tenant, 'app_uninstalled', by);
    const [first, second] = [receiver(), receiver()];
    await Promise.all([first.look(), second.look(), first.look()]);
    const told = await announcement();
    const { runId, taskQueue: queue } = await told.describe();
    assert.equal(queue, taskQueue);
    // It ran and closed; a receiver started later does not start it again.
    await told.terminate('done');
    await receiver().look();
    const after = await told.describe();
    assert.deepEqual([after.runId, after.status.name], [runId, 'TERMINATED']);

    // Installed again and revoked again: a new revocation, a new announcement.
    await install();
    await store.revoke(tenant, 'tokens_revoked', by);
    await first.look();
    const again = await announcement();
    assert.notEqual(again.workflowId, told.workflowId);
    assert.equal((await again.describe()).status.name, 'RUNNING');
    await again.terminate('done');

    // A revocation older than the look-back is not announced.
    await install();
    await store.revoke(tenant, 'app_uninstalled', by);
    await pool.query(
      "UPDATE tenant_credentials SET revoked_at = revoked_at - interval '25 hours' WHERE tenant = $1",
      [tenant],
    );
    await receiver().look();
    await assert.rejects((await announcement()).describe(), WorkflowNotFoundError);
  });

  it('announces the revocations after one whose start failed, and that one at the next look', async () => {
    const { pool } = await database();
    const store = createTenantCredentialStore(pool, payloadCodec(TEST_ENCRYPTION_KEY));
    const by = { by: 'test' };
    const [refused, next] = [0, 1].map(() => `slack:T${randomBytes(6).toString('hex').toUpperCase()}`);
    for (const tenant of [refused!, next!]) {
      await store.put(tenant, { source: 'admin', secret: { botToken: 'xoxb-test' } }, by);
      await store.revoke(tenant, 'app_uninstalled', by);
    }
    // The look goes through the revocations in the order they were made: the refused one's start is
    // the call at its place in that list (earlier tests' revocations come first).
    const refusedAt = (await revokedSince(pool, LOOKBACK_MS)).length - 2;
    let calls = 0;
    const announcer = revocationAnnouncer({
      pool,
      client: temporal.client,
      taskQueue: uniqueId('q-'),
      logger: silentLogger,
      call: (start) => {
        if (calls++ === refusedAt) return Promise.reject(new Error('Temporal did not answer in time (test)'));
        return start();
      },
      everyMs: 0,
    });
    const handleOf = async (tenant: string) => {
      const revocation = await revocationOf(pool, tenant);
      return temporal.client.workflow.getHandle(
        tenantRevokedWorkflowId(tenant, String(revocation!.revokedAt.getTime())),
      );
    };

    await assert.rejects(announcer.look(), /did not answer in time/);
    assert.equal(
      (await (await handleOf(next!)).describe()).status.name,
      'RUNNING',
      'the next one was announced',
    );
    await assert.rejects((await handleOf(refused!)).describe(), WorkflowNotFoundError);
    await announcer.look();
    assert.equal(
      (await (await handleOf(refused!)).describe()).status.name,
      'RUNNING',
      'announced at the next look',
    );
    for (const tenant of [refused!, next!]) await (await handleOf(tenant)).terminate('done');
  });
});
