// Owns: operators
// The operators table's one owner: accounts with roles and one credential each. A token is shown once
// when it is made and stored only as its SHA-256; every change to an account is an audit row. The CLI's `replyflow operator` commands, the codec server
// (which authenticates operators before it seals) and the workflow's decision check all come here.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { OPERATOR_ROLES, type OperatorRole } from '../model';
import { parseTenant } from '../tenants/tenant-id';
import { createAuditLog } from './audit-log';
import { OperatorAccountError } from './errors';
import type { Pool } from './pool';

/** Operator names: short, lower-case, safe in logs and audit rows. */
const OPERATOR_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const TOKEN_PREFIX = 'rfo_';

export interface OperatorAccount {
  name: string;
  roles: OperatorRole[];
  /**
   * The tenants (src/tenants/tenant-id.ts) whose work the operator may see and decide; null: every
   * tenant. A limited operator sees no work of another tenant, nor work without one.
   */
  tenants: string[] | null;
  /** The current credential: seals made with another one are revoked. */
  credentialId: string;
  disabled: boolean;
  createdAt: Date;
  rotatedAt: Date;
}

const hashOf = (token: string) => createHash('sha256').update(token, 'utf8').digest();
const newToken = () => `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;

/** Every role given includes `view`: whoever may decide must be able to see what they decide on. */
function validRoles(roles: readonly string[]): OperatorRole[] {
  const unknown = roles.filter((r) => !(OPERATOR_ROLES as readonly string[]).includes(r));
  if (unknown.length > 0)
    throw new OperatorAccountError(
      `unknown role ${unknown.join(', ')} (known: ${OPERATOR_ROLES.join(', ')})`,
    );
  return OPERATOR_ROLES.filter((r) => r === 'view' || roles.includes(r));
}

/** The tenants as given, each a well-formed tenant id, without repeats; null (every tenant) stays null. */
function validTenants(tenants: readonly string[] | null): string[] | null {
  if (tenants === null) return null;
  const bad = tenants.filter((t) => !parseTenant(t));
  if (bad.length > 0)
    throw new OperatorAccountError(
      `not a tenant: ${bad.map((t) => JSON.stringify(t.slice(0, 80))).join(', ')} (slack:T…, slack:E…, line:U… or github:<installation id>)`,
    );
  if (tenants.length === 0)
    throw new OperatorAccountError('give at least one tenant, or let the operator see every tenant');
  return [...new Set(tenants)];
}

/** Whether the operator may see and decide work of `tenant` (undefined: work without a tenant). */
export function mayWorkFor(account: Pick<OperatorAccount, 'tenants'>, tenant: string | undefined): boolean {
  return account.tenants === null || (tenant !== undefined && account.tenants.includes(tenant));
}

/** The operator's tenants in words, for audit rows and refusals. */
export function tenantsInWords(tenants: string[] | null): string {
  return tenants === null ? 'every tenant' : `tenants ${tenants.join(',')}`;
}

function validName(name: string): string {
  if (!OPERATOR_NAME.test(name))
    throw new OperatorAccountError(
      `operator name "${name.slice(0, 64)}" must be 1 to 63 lower-case letters, digits, ".", "_" or "-"`,
    );
  return name;
}

type Row = {
  name: string;
  roles: OperatorRole[];
  tenants: string[] | null;
  credential_id: string;
  disabled_at: Date | null;
  created_at: Date;
  rotated_at: Date;
};
const COLUMNS = 'name, roles, tenants, credential_id, disabled_at, created_at, rotated_at';
const account = (row: Row): OperatorAccount => ({
  name: row.name,
  roles: row.roles,
  tenants: row.tenants,
  credentialId: row.credential_id,
  disabled: row.disabled_at !== null,
  createdAt: row.created_at,
  rotatedAt: row.rotated_at,
});

/** Who changed an account, and why: written to the audit log with the change. */
export interface AccountChange {
  by: string;
  reason?: string;
}

export function createOperatorStore(pool: Pool) {
  const auditLog = createAuditLog(pool);
  async function audit(change: AccountChange, action: string, name: string, result: string): Promise<void> {
    await auditLog.append([
      { actor: change.by, action, workflowId: `operator:${name}`, reason: change.reason, result },
    ]);
  }

  async function update(name: string, set: string, values: unknown[]): Promise<OperatorAccount> {
    const { rows } = await pool.query<Row>(
      `UPDATE operators SET ${set} WHERE name = $1 RETURNING ${COLUMNS}`,
      [validName(name), ...values],
    );
    if (!rows[0]) throw new OperatorAccountError(`no operator named ${name}`);
    return account(rows[0]);
  }

  return {
    /**
     * Creates an account, for every tenant unless `tenants` lists the ones it may work for.
     * @returns it and its token, which is shown this once and never stored.
     */
    async add(
      name: string,
      roles: readonly string[],
      change: AccountChange,
      tenants: readonly string[] | null = null,
    ): Promise<{ account: OperatorAccount; token: string }> {
      const token = newToken();
      const granted = validRoles(roles);
      const scope = validTenants(tenants);
      const { rows } = await pool.query<Row>(
        `INSERT INTO operators (name, roles, token_hash, credential_id, tenants) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`,
        [validName(name), granted, hashOf(token), randomUUID(), scope],
      );
      if (!rows[0]) throw new OperatorAccountError(`an operator named ${name} exists already`);
      const result = `accepted: roles ${granted.join(',')}${scope ? `; ${tenantsInWords(scope)}` : ''}`;
      await audit(change, 'operator add', name, result);
      return { account: account(rows[0]), token };
    },

    async list(): Promise<OperatorAccount[]> {
      const { rows } = await pool.query<Row>(`SELECT ${COLUMNS} FROM operators ORDER BY name`);
      return rows.map(account);
    },

    async get(name: string): Promise<OperatorAccount | undefined> {
      const { rows } = await pool.query<Row>(`SELECT ${COLUMNS} FROM operators WHERE name = $1`, [name]);
      return rows[0] && account(rows[0]);
    },

    /** Revokes the account's credential now: its token, its sessions and its sealed decisions. */
    async disable(name: string, change: AccountChange): Promise<OperatorAccount> {
      const changed = await update(name, 'disabled_at = COALESCE(disabled_at, now())', []);
      await audit(change, 'operator disable', name, 'accepted');
      return changed;
    },

    async enable(name: string, change: AccountChange): Promise<OperatorAccount> {
      const changed = await update(name, 'disabled_at = NULL', []);
      await audit(change, 'operator enable', name, 'accepted');
      return changed;
    },

    /** A new token; the old one, its sessions and every decision sealed with it stop counting. */
    async rotate(name: string, change: AccountChange): Promise<{ account: OperatorAccount; token: string }> {
      const token = newToken();
      const changed = await update(name, 'token_hash = $2, credential_id = $3, rotated_at = now()', [
        hashOf(token),
        randomUUID(),
      ]);
      await audit(change, 'operator rotate', name, 'accepted');
      return { account: changed, token };
    },

    async setRoles(name: string, roles: readonly string[], change: AccountChange): Promise<OperatorAccount> {
      const granted = validRoles(roles);
      const changed = await update(name, 'roles = $2', [granted]);
      await audit(change, 'operator roles', name, `accepted: roles ${granted.join(',')}`);
      return changed;
    },

    /** Limits the operator to `tenants`, or (null) lets them see and decide every tenant's work. */
    async setTenants(
      name: string,
      tenants: readonly string[] | null,
      change: AccountChange,
    ): Promise<OperatorAccount> {
      const scope = validTenants(tenants);
      const changed = await update(name, 'tenants = $2', [scope]);
      await audit(change, 'operator tenants', name, `accepted: ${tenantsInWords(scope)}`);
      return changed;
    },

    /** The enabled account a token belongs to, or undefined. Looked up by the token's hash. */
    async authenticate(token: string): Promise<OperatorAccount | undefined> {
      if (!token.startsWith(TOKEN_PREFIX) || token.length > 200) return undefined;
      const { rows } = await pool.query<Row>(
        `SELECT ${COLUMNS} FROM operators WHERE token_hash = $1 AND disabled_at IS NULL`,
        [hashOf(token)],
      );
      return rows[0] && account(rows[0]);
    },
  };
}

export type OperatorStore = ReturnType<typeof createOperatorStore>;
