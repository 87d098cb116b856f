// What ends an uninstalled team's held work: the revocation, read again by the run it is announced
// to, and the announcement itself, sent to each held run of the tenant.
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { revocationOf } from '../src/db/tenant-credentials';
import { Failure } from '../src/failures';
import { parseTenant } from '../src/tenants/tenant-id';
import { tenantRevokedSignal } from '../workflows/messages';
import type { ActivityDeps } from './deps';

export function tenantActivities({ pool }: ActivityDeps) {
  return {
    /** Whether the tenant is revoked now: a run ends its held work only on the store's word. */
    async tenantRevocation(input: {
      tenant: string;
    }): Promise<{ revokedAt: string; reason?: string } | undefined> {
      const revocation = await revocationOf(pool, input.tenant);
      return revocation && { revokedAt: revocation.revokedAt.toISOString(), reason: revocation.reason };
    },

    /**
     * Tells every running event workflow of the tenant that is held or awaiting approval that the
     * tenant was revoked. @returns how many were told. A run that ended meanwhile is skipped.
     */
    async announceRevocation(input: { tenant: string }): Promise<number> {
      if (!parseTenant(input.tenant))
        throw ApplicationFailure.nonRetryable('not a tenant id', Failure.InvalidTenant);
      const { client } = Context.current();
      // The tenant id is checked above, so it is a plain literal here (the query `replyflow held --tenant` makes).
      const query = `WorkflowType = "handleEvent" AND ExecutionStatus = "Running" AND ReplyState IN ("held", "awaiting_approval") AND Tenant = ${JSON.stringify(input.tenant)}`;
      let told = 0;
      for await (const held of client.workflow.list({ query })) {
        Context.current().heartbeat(told);
        try {
          await client.workflow
            .getHandle(held.workflowId)
            .signal(tenantRevokedSignal, { tenant: input.tenant });
          told += 1;
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
      }
      return told;
    },
  };
}
