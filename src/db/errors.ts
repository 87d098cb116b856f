// The errors of the database layer: each names the role, privilege or row it could not use.

/** Thrown when the application role cannot be given its privileges safely; the message says the fix. */
export class ApplicationRoleError extends Error {
  override name = 'ApplicationRoleError';
}

/** Thrown for a request about tenants that cannot be carried out (bad id, no such tenant). */
export class TenantCredentialError extends Error {
  override name = 'TenantCredentialError';
}

/** Thrown for a request about accounts that cannot be carried out (bad name, unknown role, no such operator). */
export class OperatorAccountError extends Error {
  override name = 'OperatorAccountError';
}

/** Thrown when migrations are pending and this role may not apply them: the admin's job. */
export class MigrationPrivilegeError extends Error {
  override name = 'MigrationPrivilegeError';
}
