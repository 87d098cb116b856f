// The errors of the Temporal plumbing (client settings, codec, codec server, dev server, binaries,
// workflow bundle, search attributes, Web UI guard): each says what to set or run to get past it.
import type { SearchAttributeProblem } from './search-attributes';

/** Thrown for a payload /codec/encode will not seal; the message names the problem, never the content. */
export class NotADecisionError extends Error {
  override name = 'NotADecisionError';
}

/** Thrown when the workflow's status, needed to bind a decision to its hold, cannot be read now. */
export class StatusUnavailableError extends Error {
  override name = 'StatusUnavailableError';
}

/** Thrown when the dev server cannot start; the message names the cause and what to do. */
export class DevServerStartError extends Error {
  override name = 'DevServerStartError';
}

/** Thrown when a port picked for this start was taken before the server bound it: start again. */
export class PortTakenError extends DevServerStartError {
  override name = 'PortTakenError';
}

/** Thrown when the bundle cannot be built: webpack's own message, from the child. */
export class WorkflowBundleError extends Error {
  override name = 'WorkflowBundleError';
}

/** Thrown when the guard cannot listen on the Web UI's port. */
export class WebUiGuardListenError extends Error {
  override name = 'WebUiGuardListenError';
}

/** Thrown when the TLS / API key settings contradict each other or name files that cannot be read. */
export class ConnectionSecurityError extends Error {
  override name = 'ConnectionSecurityError';
  constructor(readonly problems: string[]) {
    super(`Invalid Temporal connection settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/**
 * Thrown when a payload names a key id this process does not hold: a key rollout in progress (a
 * process that holds it may read it), or a payload that was never ours.
 */
export class UnknownPayloadKeyError extends Error {
  override name = 'UnknownPayloadKeyError';
}

/**
 * Thrown when a worker would start on a namespace its workflows cannot set their search attributes in;
 * the message is the advice (`searchAttributeAdvice`): what is missing and the command that creates it.
 */
export class SearchAttributesMissingError extends Error {
  override name = 'SearchAttributesMissingError';
  constructor(
    readonly problems: SearchAttributeProblem[],
    advice: string,
  ) {
    super(advice);
  }
}

/** Thrown when a Temporal binary can be found nowhere; the message says what to install. */
export class TemporalBinaryMissingError extends Error {
  override name = 'TemporalBinaryMissingError';
  constructor(
    readonly binary: string,
    advice: string,
  ) {
    super(advice);
  }
}
