// The errors of the modules at the top of src/ (configuration, route files): each thrown when a setting
// or a route cannot be acted on, carrying what an operator needs to fix it.

/**
 * Thrown when the environment is invalid; lists every problem, never a secret's value, in one line
 * (what a start refusal prints: src/cli/main.ts).
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
  }
}

/** Thrown when the sandbox is switched on for a role that cannot generate its secrets. */
export class SandboxSettingsError extends Error {
  override name = 'SandboxSettingsError';
}

/** Thrown at worker start when the route file has problems; lists every one with its path. */
export class RouteFileError extends Error {
  override name = 'RouteFileError';
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`Invalid route file ${file}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** What a matching route could not map: the route, the field and where the route uses it, never a value. */
export interface MappingFailure {
  route: string;
  /** The route's integration (its `integration`, or its name). */
  integration: string;
  /** The field path, as the route file writes it between braces. */
  field: string;
  /** Where the route uses it: `businessKey`, `operationId`, `step <name> body.<key>`, … */
  where: string;
  /** `missing`: the event lacks it; `not-scalar`: an object where a string or number is needed. */
  problem: 'missing' | 'not-scalar';
}

/**
 * How a mapping failure is worded wherever it shows: `routes try`, and at run time the failed event's
 * status, search attributes and alert.
 */
function mappingFailureText(failure: MappingFailure): string {
  const what =
    failure.problem === 'missing' ? 'is missing from the event' : 'must be a string or number, not an object';
  return `route ${failure.route}: field ${failure.field} ${what} (${failure.where})`;
}

/**
 * Thrown when a matching route needs an event field the event lacks: the event's workflow parks as
 * failed at step `planEffects`, naming the route and the field, until the route is fixed and the
 * event reprocessed (or discarded).
 */
export class RouteMappingError extends Error {
  override name = 'RouteMappingError';
  constructor(readonly failure: MappingFailure) {
    super(mappingFailureText(failure));
  }
}
