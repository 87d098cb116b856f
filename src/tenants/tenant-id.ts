// A tenant is one account replyflow answers for, named `<provider>:<id>`: `slack:T…` (a workspace) or
// `slack:E…` (an Enterprise Grid organisation that installed the app org-wide), `line:U…` (a LINE
// channel, by the bot's user id that webhooks carry as `destination`), `github:<installation id>` (a
// GitHub App installation). Providers put it on each event (InboundEvent.tenant) and on the reply's
// destination (`destination.tenant`), targets choose their credential by it, and it is the `Tenant`
// search attribute: ids only, never a name, a secret or message text.

/** Providers whose events carry a tenant, and whose targets may choose a credential by it. */
export const TENANT_PROVIDERS = ['slack', 'line', 'github'] as const;
export type TenantProvider = (typeof TENANT_PROVIDERS)[number];

/** The id part: what Slack, LINE and GitHub use for teams, bot users and installations. */
const TENANT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const TENANT = /^(slack|line|github):([A-Za-z0-9_-]{1,64})$/;

export function tenantOf(provider: TenantProvider, id: string): string | undefined {
  return TENANT_ID.test(id) ? `${provider}:${id}` : undefined;
}

/** @returns the provider and id of a well-formed tenant, else undefined. */
export function parseTenant(tenant: string): { provider: TenantProvider; id: string } | undefined {
  const match = TENANT.exec(tenant);
  return match ? { provider: match[1] as TenantProvider, id: match[2]! } : undefined;
}

/** Which provider's tenants a target's credential belongs to (`slack-response` carries its own URL). */
export function tenantProviderOfTarget(target: string): TenantProvider | undefined {
  if (target === 'slack') return 'slack';
  if (target === 'line') return 'line';
  if (target === 'github') return 'github';
  return undefined;
}

/**
 * Which installation answers: the organisation for an org-wide install (Enterprise Grid), else the
 * workspace, as Bolt's authorize looks installations up (its `buildSource`).
 */
export function slackTenant(source: {
  team?: string;
  enterprise?: string;
  enterpriseInstall?: boolean;
}): string | undefined {
  if (source.enterpriseInstall && source.enterprise) return tenantOf('slack', source.enterprise);
  return source.team === undefined ? undefined : tenantOf('slack', source.team);
}
