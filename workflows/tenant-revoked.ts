// After a tenant's installation was revoked (Slack's app_uninstalled or tokens_revoked), tells each of
// its held runs, which then end their held work by themselves (workflows/operator-desk.ts). Told twice:
// at once, and once what was in flight at the revocation has settled (a send whose outcome is unknown
// goes held only after its lookups, and visibility lags a little).
import { sleep } from '@temporalio/workflow';
import { announcer } from './activity-stubs';

/** How long after the revocation the held runs are told again, by default. */
const REVOCATION_SETTLE_MS = 5 * 60_000;

export async function tenantRevoked(input: { tenant: string; settleMs?: number }): Promise<{ told: number }> {
  const first = await announcer.announceRevocation({ tenant: input.tenant });
  await sleep(input.settleMs ?? REVOCATION_SETTLE_MS);
  const second = await announcer.announceRevocation({ tenant: input.tenant });
  return { told: first + second };
}
