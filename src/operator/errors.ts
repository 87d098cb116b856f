// The ways an operator command stops before changing anything, each with its own exit code in the CLI.

/** Thrown when a command's input cannot be acted on (unknown workflow, wrong state, missing reason); nothing changed. */
export class OperatorInputError extends Error {
  override name = 'OperatorInputError';
}

/** Thrown when the operator's roles do not allow the action; the refusal is in the audit log. */
export class NotPermittedError extends Error {
  override name = 'NotPermittedError';
  constructor(
    readonly operator: string,
    readonly role: string,
  ) {
    super(`${operator} may not ${role} (no ${role} role); the refusal is in the audit log`);
  }
}

/**
 * Thrown when the operator token is refused (by replyflow's operator API, or the operators table):
 * unknown, disabled or rotated. The message never carries the token.
 */
export class OperatorTokenRefusedError extends Error {
  override name = 'OperatorTokenRefusedError';
  constructor(where: string) {
    super(`${where} (unknown, disabled or rotated): ask an admin for a valid one, then \`replyflow login\``);
  }
}

/** Thrown when a workflow exists but nobody answers its `status` query in time (no worker on its queue). */
export class WorkflowUnansweredError extends Error {
  override name = 'WorkflowUnansweredError';
}
