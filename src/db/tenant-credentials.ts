// The tenant_credentials table's one owner: per-tenant credentials (a Slack installation's tokens, a
// LINE channel's secret and access token), sealed under the payload key (src/tenants/secret-box.ts).
// Secrets go in and come out only here, opened for the process that sends or verifies with them;
// listings carry none. Every change made by a person, and every installation and revocation, is an
// audit row (`tenant:<tenant>`).
import { openSecret, type SecretKeys, sealSecret } from '../tenants/secret-box';
import { parseTenant } from '../tenants/tenant-id';
import { createAuditLog } from './audit-log';
import { TenantCredentialError } from './errors';
import type { Pool } from './pool';

/** How a credential came to be: Slack's install flow, the admin's `replyflow tenant` commands, or TENANTS_FILE. */
export type TenantSource = 'oauth' | 'admin' | 'file';

/** A tenant as it may be shown: no secret. */
export interface TenantRecord {
  tenant: string;
  provider: string;
  source: TenantSource;
  /** What may be shown (a team's name, the bot user id, scopes); never a secret. */
  details: Record<string, unknown>;
  /** When the access token expires (Slack token rotation); undefined: it does not. */
  expiresAt?: Date;
  /** Bumped by every change; a refresh replaces only the version it read (`replaceSecret`). */
  version: number;
  createdAt: Date;
  updatedAt: Date;
  revokedAt?: Date;
  revokedReason?: string;
}

/** A tenant with its opened secret; `secret` is undefined once revoked. */
export interface TenantCredential {
  record: TenantRecord;
  secret?: Record<string, string>;
}

/** Who made a change, and why: the audit row's actor and reason. */
export interface TenantChange {
  by: string;
  reason?: string;
}

type Row = {
  tenant: string;
  provider: string;
  source: TenantSource;
  details: Record<string, unknown>;
  key_id: string;
  secret: Buffer | null;
  expires_at: Date | null;
  version: number;
  created_at: Date;
  updated_at: Date;
  revoked_at: Date | null;
  revoked_reason: string | null;
};
const COLUMNS =
  'tenant, provider, source, details, key_id, secret, expires_at, version, created_at, updated_at, revoked_at, revoked_reason';

const record = (row: Row): TenantRecord => ({
  tenant: row.tenant,
  provider: row.provider,
  source: row.source,
  details: row.details,
  ...(row.expires_at ? { expiresAt: row.expires_at } : {}),
  version: row.version,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  ...(row.revoked_at ? { revokedAt: row.revoked_at } : {}),
  ...(row.revoked_reason ? { revokedReason: row.revoked_reason } : {}),
});

function validTenant(tenant: string): { provider: string; id: string } {
  const parsed = parseTenant(tenant);
  if (!parsed)
    throw new TenantCredentialError(
      `tenant "${tenant.slice(0, 80)}" must be slack:<team or enterprise id>, line:<channel's bot user id> or github:<installation id>`,
    );
  return parsed;
}

export function createTenantCredentialStore(pool: Pool, keys: SecretKeys) {
  const auditLog = createAuditLog(pool);
  const audit = (change: TenantChange, action: string, tenant: string, result: string) =>
    auditLog.append([
      { actor: change.by, action, workflowId: `tenant:${tenant}`, reason: change.reason, result },
    ]);

  const opened = (row: Row): TenantCredential => ({
    record: record(row),
    ...(row.secret ? { secret: openSecret(keys, row.tenant, row.key_id, row.secret) } : {}),
  });

  return {
    /**
     * Stores a tenant's credential, replacing any earlier one (a reinstall, a new channel secret) and
     * lifting a revocation.
     */
    async put(
      tenant: string,
      value: {
        source: TenantSource;
        secret: Record<string, string>;
        details?: Record<string, unknown>;
        expiresAt?: Date;
      },
      change: TenantChange,
    ): Promise<TenantRecord> {
      const { provider } = validTenant(tenant);
      const { keyId, sealed } = sealSecret(keys, tenant, value.secret);
      const { rows } = await pool.query<Row & { inserted: boolean }>(
        `INSERT INTO tenant_credentials (tenant, provider, source, details, key_id, secret, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (tenant) DO UPDATE SET source = EXCLUDED.source, details = EXCLUDED.details,
           key_id = EXCLUDED.key_id, secret = EXCLUDED.secret, expires_at = EXCLUDED.expires_at,
           version = tenant_credentials.version + 1, updated_at = now(), revoked_at = NULL, revoked_reason = NULL
         RETURNING ${COLUMNS}, (xmax = 0) AS inserted`,
        [tenant, provider, value.source, value.details ?? {}, keyId, sealed, value.expiresAt ?? null],
      );
      const row = rows[0]!;
      await audit(
        change,
        row.inserted ? 'tenant add' : 'tenant replace',
        tenant,
        `accepted: ${value.source}`,
      );
      return record(row);
    },

    /** The tenant's credential, opened; undefined when there is no such tenant. */
    async get(tenant: string): Promise<TenantCredential | undefined> {
      const { rows } = await pool.query<Row>(`SELECT ${COLUMNS} FROM tenant_credentials WHERE tenant = $1`, [
        tenant,
      ]);
      return rows[0] && opened(rows[0]);
    },

    /** Every tenant (of one provider), without secrets. */
    async list(provider?: string): Promise<TenantRecord[]> {
      const { rows } = await pool.query<Row>(
        `SELECT ${COLUMNS} FROM tenant_credentials WHERE $1::text IS NULL OR provider = $1 ORDER BY tenant`,
        [provider ?? null],
      );
      return rows.map(record);
    },

    /**
     * Replaces the secret if the row is still at `version` and not revoked (a token refresh: whoever
     * refreshed first wins, the others read theirs). @returns the new record, or undefined when
     * another change came first.
     */
    async replaceSecret(
      tenant: string,
      version: number,
      secret: Record<string, string>,
      expiresAt?: Date,
    ): Promise<TenantRecord | undefined> {
      const { keyId, sealed } = sealSecret(keys, tenant, secret);
      const { rows } = await pool.query<Row>(
        `UPDATE tenant_credentials SET key_id = $3, secret = $4, expires_at = $5, version = version + 1, updated_at = now()
          WHERE tenant = $1 AND version = $2 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
        [tenant, version, keyId, sealed, expiresAt ?? null],
      );
      return rows[0] && record(rows[0]);
    },

    /**
     * Gives a tenant a new secret by hand (`replyflow tenant rotate`), keeping its source and details;
     * the expiry is dropped (a token given by hand has none we know). `version`: only if the row is
     * still at it (the secret was read and merged). @throws TenantCredentialError for an unknown,
     * revoked or since-changed tenant.
     */
    async rotate(
      tenant: string,
      secret: Record<string, string>,
      change: TenantChange,
      version?: number,
    ): Promise<TenantRecord> {
      validTenant(tenant);
      const { keyId, sealed } = sealSecret(keys, tenant, secret);
      const { rows } = await pool.query<Row>(
        `UPDATE tenant_credentials SET key_id = $2, secret = $3, expires_at = NULL, version = version + 1, updated_at = now()
          WHERE tenant = $1 AND revoked_at IS NULL AND ($4::integer IS NULL OR version = $4) RETURNING ${COLUMNS}`,
        [tenant, keyId, sealed, version ?? null],
      );
      if (!rows[0])
        throw new TenantCredentialError(
          `${tenant} is unknown, revoked, or changed meanwhile: \`replyflow tenant list\` shows it (a revoked tenant is added again)`,
        );
      await audit(change, 'tenant rotate', tenant, 'accepted');
      return record(rows[0]);
    },

    /**
     * Revokes the credential now: its secret is erased, so nothing is sent with it again. Revoking a
     * revoked or unknown tenant changes nothing (Slack may tell us twice). @returns whether it changed.
     */
    async revoke(tenant: string, reason: string, change: TenantChange): Promise<boolean> {
      const revoked = await revokeRow(tenant, reason);
      if (revoked) await audit(change, 'tenant revoke', tenant, `accepted: ${reason}`);
      return revoked;
    },

    /**
     * Removes a tenant (the admin's: the application role may not delete), in two steps. A live
     * credential is revoked, its secret erased (reason `removed`): nothing is verified or sent with it
     * again, and its held work ends as an uninstalled team's does (src/tenants/revocation-announcer.ts),
     * which needs the revoked record. A record revoked longer than REVOKED_RECORD_KEPT_MS ago, when its
     * held work has been told, is deleted. @returns which step this was.
     */
    async remove(tenant: string, change: TenantChange): Promise<'revoked' | 'deleted'> {
      validTenant(tenant);
      if (await revokeRow(tenant, REMOVED)) {
        await audit(change, 'tenant remove', tenant, 'accepted: revoked');
        return 'revoked';
      }
      const { rowCount } = await pool.query(
        `DELETE FROM tenant_credentials WHERE tenant = $1 AND revoked_at < now() - $2 * interval '1 millisecond'`,
        [tenant, REVOKED_RECORD_KEPT_MS],
      );
      if (rowCount === 1) {
        await audit(change, 'tenant remove', tenant, 'accepted: deleted');
        return 'deleted';
      }
      const revocation = await revocationOf(pool, tenant);
      if (!revocation) throw new TenantCredentialError(`no tenant ${tenant}`);
      const deletable = new Date(revocation.revokedAt.getTime() + REVOKED_RECORD_KEPT_MS);
      throw new TenantCredentialError(
        `${tenant} is revoked (${revocation.reason ?? 'revoked'}, ${revocation.revokedAt.toISOString()}) and its held work is still being told: its record can be deleted from ${deletable.toISOString()}`,
      );
    },
  };

  /** Erases the secret and marks the credential revoked, unless it is already. @returns whether it changed. */
  async function revokeRow(tenant: string, reason: string): Promise<boolean> {
    const { rowCount } = await pool.query(
      `UPDATE tenant_credentials SET secret = NULL, revoked_at = now(), revoked_reason = $2,
              version = version + 1, updated_at = now()
        WHERE tenant = $1 AND revoked_at IS NULL`,
      [tenant, reason],
    );
    return rowCount === 1;
  }
}

/** The revocation reason of a tenant the admin removed. */
const REMOVED = 'removed';

/**
 * How long a revoked record stays before `remove` may delete it: the revocation is announced to the
 * tenant's held runs within seconds and again 5 minutes later (workflows/tenant-revoked.ts), and each
 * run reads the record before it ends its held work.
 */
export const REVOKED_RECORD_KEPT_MS = 10 * 60_000;

export type TenantCredentialStore = ReturnType<typeof createTenantCredentialStore>;

/**
 * Whether the tenant's credential is revoked now, and why: read without its secret (by the workers,
 * which end an uninstalled team's held work). Undefined: installed, never seen, or removed.
 */
export async function revocationOf(
  pool: Pool,
  tenant: string,
): Promise<{ revokedAt: Date; reason?: string } | undefined> {
  const { rows } = await pool.query<{ revoked_at: Date | null; revoked_reason: string | null }>(
    'SELECT revoked_at, revoked_reason FROM tenant_credentials WHERE tenant = $1',
    [tenant],
  );
  const row = rows[0];
  if (!row?.revoked_at) return undefined;
  return { revokedAt: row.revoked_at, ...(row.revoked_reason ? { reason: row.revoked_reason } : {}) };
}

/** The tenants revoked within the last `withinMs`, oldest first: the revocations still to be announced. */
export async function revokedSince(
  pool: Pool,
  withinMs: number,
): Promise<{ tenant: string; revokedAt: Date }[]> {
  const { rows } = await pool.query<{ tenant: string; revoked_at: Date }>(
    `SELECT tenant, revoked_at FROM tenant_credentials
      WHERE revoked_at > now() - $1 * interval '1 millisecond' ORDER BY revoked_at`,
    [withinMs],
  );
  return rows.map((row) => ({ tenant: row.tenant, revokedAt: row.revoked_at }));
}
