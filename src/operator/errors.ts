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
    readonly source: string,
  ) {
    super(`${operator} may not ${role} according to ${source}; the refusal is in the audit log`);
  }
}
