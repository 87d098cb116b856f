// Operators limited to tenants (operators.tenants, migration 017): whose work a workflow is, and why
// such an operator may not see or decide it. A workflow's tenant is its event's, from the ledger row
// the workflow's own input wrote (src/db/events.ts): never what a client sent, nor a search attribute.
// The decision check (activities/decisions.ts), the codec server's sealer and the operator API ask here.
import type { EventLedger } from '../db/events';
import { mayWorkFor, type OperatorAccount, tenantsInWords } from '../db/operators';

/** Why `account` may not see or decide workflow `workflowId`, or undefined when it may. */
export async function tenantRefusal(
  ledger: Pick<EventLedger, 'tenantOf'>,
  account: Pick<OperatorAccount, 'name' | 'tenants'>,
  workflowId: string,
): Promise<string | undefined> {
  if (account.tenants === null) return undefined;
  const work = await ledger.tenantOf(workflowId);
  const tenant = work.recorded ? work.tenant : undefined;
  if (mayWorkFor(account, tenant)) return undefined;
  const whose = tenant ? `is tenant ${tenant}'s` : work.recorded ? 'has no tenant' : 'has no recorded tenant';
  return `not permitted: ${account.name} works for ${tenantsInWords(account.tenants)}, and this work ${whose}`;
}
