// The errors of the CLI's own steps (admin credential, operator API, route checks); operator commands'
// errors are in src/operator/errors.ts.
import { OperatorInputError } from '../operator/errors';

/** Thrown when an admin command finds no admin credential; the message names the setting. */
export class AdminCredentialError extends OperatorInputError {
  override name = 'AdminCredentialError';
}

/** Thrown when the admin's PostgreSQL is out of reach; the message names the setting that points there. */
export class AdminDatabaseUnreachableError extends Error {
  override name = 'AdminDatabaseUnreachableError';
}

/** Thrown when replyflow cannot be reached, or cannot do what was asked (other than a refusal). */
export class OperatorApiError extends Error {
  override name = 'OperatorApiError';
}

/** Thrown when a routes command cannot do what it was asked (no file, an unreadable sample): one line, exit 2. */
export class RoutesInputError extends Error {
  override name = 'RoutesInputError';
}
