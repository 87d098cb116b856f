// Where a receiver or a worker finds a tenant's credential: the tenant_credentials table through a short
// cache, so that verifying each LINE request or sending each reply does not read PostgreSQL every time,
// and a tenant added or rotated by an admin (or installed through Slack) is picked up within `ttlMs`
// without a restart. A caller whose credential was refused asks again with `fresh` (a rotated secret).
// The Slack target reads with `fresh` every time (src/targets/slack-tokens.ts): an uninstall recorded
// by any receiver must stop that team's very next send.
import type { Pool } from '../db/pool';
import {
  createTenantCredentialStore,
  type TenantCredential,
  type TenantCredentialStore,
} from '../db/tenant-credentials';
import type { SecretKeys } from './secret-box';

/** The table's owner, for layers that may not import src/db/ (targets). */
export type TenantStore = TenantCredentialStore;

export interface TenantDirectory {
  /** The tenant's credential, or undefined when it has none (unknown tenant). Revoked: `secret` undefined. */
  credential(tenant: string, options?: { fresh?: boolean }): Promise<TenantCredential | undefined>;
  /** Forgets what the cache holds for the tenant (after this process changed it). */
  forget(tenant: string): void;
}

/** How long a found credential is reused; an unknown tenant is asked for again sooner. */
export const TENANT_CACHE_MS = 10_000;
const UNKNOWN_CACHE_MS = 1_000;
/** A bound on the cache: tenants beyond it are read again when asked for. */
const MAX_CACHED = 10_000;

export function createTenantDirectory(
  store: Pick<TenantCredentialStore, 'get'>,
  options: { ttlMs?: number; now?: () => number } = {},
): TenantDirectory {
  const ttlMs = options.ttlMs ?? TENANT_CACHE_MS;
  const now = options.now ?? Date.now;
  const cache = new Map<string, { until: number; value: Promise<TenantCredential | undefined> }>();
  return {
    credential(tenant, { fresh = false } = {}) {
      const hit = cache.get(tenant);
      if (hit && !fresh && hit.until > now()) return hit.value;
      const value = store.get(tenant);
      if (cache.size >= MAX_CACHED) cache.clear();
      const entry = { until: now() + ttlMs, value };
      cache.set(tenant, entry);
      value.then(
        (found) => {
          if (!found) entry.until = Math.min(entry.until, now() + UNKNOWN_CACHE_MS);
        },
        () => {
          if (cache.get(tenant) === entry) cache.delete(tenant);
        },
      );
      return value;
    },
    forget(tenant) {
      cache.delete(tenant);
    },
  };
}

/** The directory a receiver or a worker uses: the table, opened with this process's payload keys. */
export function tenantDirectoryOf(pool: Pool, keys: SecretKeys): TenantDirectory {
  return createTenantDirectory(createTenantCredentialStore(pool, keys));
}
