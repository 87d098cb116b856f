// Where a receiver or a worker finds a tenant's credential: the tenant_credentials table through a short
// cache, so that verifying each LINE request or sending each reply does not read PostgreSQL every time,
// and a tenant added or rotated by an admin (or installed through Slack) is picked up within `ttlMs`
// without a restart. A caller whose credential was refused asks again with `fresh` (a rotated secret).
// The Slack target reads with `latest` every time (src/targets/slack-tokens.ts): an uninstall or a
// reinstall recorded by any receiver must count for that team's very next send.
// TENANTS_FILE's entries (read at start, src/tenants/tenants-file.ts) answer first, without a query.
import type { Pool } from '../db/pool';
import {
  createTenantCredentialStore,
  type TenantCredential,
  type TenantCredentialStore,
} from '../db/tenant-credentials';
import type { SecretKeys } from './secret-box';
import { NO_TENANTS_FILE, type TenantsFile } from './tenants-file';

/** The table's owner, for layers that may not import src/db/ (targets). */
export type TenantStore = TenantCredentialStore;

export interface TenantDirectory {
  /**
   * The tenant's credential, or undefined when it has none (unknown tenant). Revoked: `secret` undefined.
   * `fresh`: past the cache time, though a read at most FRESH_MIN_MS old still answers. `latest`: a
   * read of its own, begun now, so that whatever was committed before the call counts.
   */
  credential(
    tenant: string,
    options?: { fresh?: boolean; latest?: boolean },
  ): Promise<TenantCredential | undefined>;
  /** Forgets what the cache holds for the tenant (after this process changed it). */
  forget(tenant: string): void;
  /** TENANTS_FILE's entries, source 'file': they answer before the store's and change only with a restart. */
  readonly file: TenantsFile;
}

/** How long a found credential is reused; an unknown tenant is asked for again sooner. */
export const TENANT_CACHE_MS = 10_000;
const UNKNOWN_CACHE_MS = 1_000;
/**
 * A `fresh` read within this long of the last read is answered by that read: a sender of forged
 * requests (each one fails verification and asks for `fresh`) cannot turn each into a query. That read
 * may predate a change committed since, which is why a send asks for `latest` instead.
 */
export const FRESH_MIN_MS = 250;
/** A bound on the cache: tenants beyond it are read again when asked for. */
const MAX_CACHED = 10_000;

export function createTenantDirectory(
  store: Pick<TenantCredentialStore, 'get'>,
  options: { ttlMs?: number; now?: () => number; file?: TenantsFile } = {},
): TenantDirectory {
  const ttlMs = options.ttlMs ?? TENANT_CACHE_MS;
  const now = options.now ?? Date.now;
  const file = options.file ?? NO_TENANTS_FILE;
  const cache = new Map<
    string,
    { readAt: number; until: number; value: Promise<TenantCredential | undefined> }
  >();
  return {
    file,
    credential(tenant, { fresh = false, latest = false } = {}) {
      const listed = file.entries.get(tenant);
      if (listed) return Promise.resolve(listed);
      const hit = cache.get(tenant);
      if (!latest && hit && hit.until > now() && (!fresh || now() - hit.readAt < FRESH_MIN_MS))
        return hit.value;
      const value = store.get(tenant);
      if (cache.size >= MAX_CACHED) cache.clear();
      const entry = { readAt: now(), until: now() + ttlMs, value };
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

/**
 * The directory a receiver or a worker uses: TENANTS_FILE's entries (loaded at start), then the table,
 * opened with this process's payload keys.
 */
export function tenantDirectoryOf(
  pool: Pool,
  keys: SecretKeys,
  file: TenantsFile = NO_TENANTS_FILE,
): TenantDirectory {
  return createTenantDirectory(createTenantCredentialStore(pool, keys), { file });
}

/**
 * TENANTS_FILE alone, the store never asked: enough to tell which targets register (a route file's
 * check before anything connects).
 */
export function fileTenantDirectory(file: TenantsFile): TenantDirectory {
  return createTenantDirectory({ get: async () => undefined }, { file });
}
