// The failures activities build for the workflow: ApplicationFailures whose type is a name from
// src/failures.ts, keeping what caused them.
import { ApplicationFailure } from '@temporalio/activity';
import type { RouteMappingError } from '../src/errors';
import { Failure, type FailureType } from '../src/failures';
import type { PlanFailureDetails } from '../src/model';
import { mappingFailureFix } from '../src/routes';

/** A failure that no retry can mend, keeping what caused it. */
export function permanent(err: Error, type: FailureType): ApplicationFailure {
  return ApplicationFailure.create({ message: err.message, type, nonRetryable: true, cause: err });
}

/** A mapping failure, with what the workflow shows of it as the failure's details. */
export function mappingFailure(
  err: RouteMappingError,
  policy: PlanFailureDetails['policy'],
): ApplicationFailure {
  const { route, integration, field } = err.failure;
  const details: PlanFailureDetails = {
    route,
    integration,
    field,
    error: err.message,
    fix: mappingFailureFix(err.failure),
    policy,
  };
  return ApplicationFailure.create({
    message: err.message,
    type: Failure.RouteMapping,
    nonRetryable: true,
    cause: err,
    details: [details],
  });
}
