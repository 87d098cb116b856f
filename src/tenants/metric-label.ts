// The `tenant` label of replyflow's metrics, with bounded cardinality: each process labels the first
// MAX_TENANT_LABELS distinct tenants it sees by their id and every later one `other`, so that a
// replyflow serving thousands of workspaces never grows a Prometheus series per workspace. Only a
// well-formed tenant id (src/tenants/tenant-id.ts) ever becomes a value: nothing a sender typed.
import { parseTenant } from './tenant-id';

/** Distinct tenants one process labels by id; Prometheus keeps one series per label value. */
export const MAX_TENANT_LABELS = 100;
/** The label of every tenant past the first MAX_TENANT_LABELS, and of a value that is not a tenant id. */
export const OTHER_TENANT = 'other';

export class TenantLabels {
  private readonly seen = new Set<string>();

  constructor(private readonly max = MAX_TENANT_LABELS) {}

  /**
   * The label value for `tenant`: its id while it is among the first `max` this process saw, else
   * `other`; undefined for work that has no tenant (the series then carries no tenant label).
   */
  of(tenant: string | undefined): string | undefined {
    if (tenant === undefined || tenant === '') return undefined;
    if (!parseTenant(tenant)) return OTHER_TENANT;
    if (this.seen.has(tenant)) return tenant;
    if (this.seen.size >= this.max) return OTHER_TENANT;
    this.seen.add(tenant);
    return tenant;
  }
}

/** `labels` with `tenant` added when the work has one. */
export function withTenant<T extends Record<string, string>>(
  labels: T,
  tenant: string | undefined,
): T & { tenant?: string } {
  return tenant === undefined ? labels : { ...labels, tenant };
}
