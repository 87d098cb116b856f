// One logger for every process. Bodies, tokens, secrets and message text are redacted by path, so a
// careless `log.info({ req })` cannot leak them; callers log identifiers, not payloads. A line written
// inside a span carries its trace_id and span_id (docs/runbook.md, "Traces").
import pino from 'pino';
import { PROVIDERS } from './providers/registry';
import { TARGETS } from './targets/registry';
import { traceFields } from './tracing';

/**
 * Request headers that carry credentials or signatures: our own (operator tokens, codec sessions),
 * each provider's signature headers and each target's credential headers, from their registries.
 */
const SECRET_HEADERS = [
  ...new Set([
    'authorization',
    'cookie',
    'x-api-key',
    ...PROVIDERS.flatMap((p) => p.signatureHeaders),
    ...TARGETS.flatMap((t) => t.secretHeaders),
  ]),
];

export const REDACTED_PATHS = [
  ...['body', 'rawBody', 'text', 'payload', 'message.text', 'token', 'secret', 'accessToken'].flatMap(
    (path) => [path, `*.${path}`],
  ),
  ...SECRET_HEADERS.flatMap((h) => {
    // pino's paths take a name with a dash in brackets.
    const path = /^[a-z_]+$/.test(h) ? `headers.${h}` : `headers["${h}"]`;
    return [path, `*.${path}`];
  }),
];

export type Logger = pino.Logger;

/**
 * @param level pino's level; the caller passes the validated LOG_LEVEL (src/config.ts), so that an
 *   unknown level is a config error listed with the others rather than pino's throw. No default here:
 *   LOG_LEVEL's one default is config.ts's.
 * @param destination where lines go. @default stdout (tests pass a stream to read what was logged)
 */
export function createLogger(
  level: pino.LevelWithSilent,
  name = 'replyflow',
  destination?: pino.DestinationStream,
): Logger {
  return pino(
    { name, level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, mixin: traceFields },
    destination,
  );
}

/** Causes followed into a stack: an SDK failure wraps ours, which may wrap a library's. */
const MAX_CAUSES = 5;

/**
 * `{ stack }` for a record about `err`, only where `logger` logs debug: a refusal or a handled failure
 * is one line that says what to fix, and its stack (often ~40 lines with the causes) is for whoever
 * debugs replyflow. Each cause's stack follows its error's.
 */
export function debugStack(logger: Logger, err: unknown): { stack?: string } {
  if (!logger.isLevelEnabled('debug') || !isErrorLike(err)) return {};
  const stacks: string[] = [];
  for (let e: unknown = err; isErrorLike(e) && stacks.length < MAX_CAUSES; e = e.cause)
    stacks.push(e.stack ?? `${e.name}: ${e.message}`);
  return { stack: stacks.join('\ncaused by: ') };
}

/** An Error by shape: one thrown in the workflow sandbox (another realm) fails `instanceof Error`. */
export function isErrorLike(value: unknown): value is Error {
  return typeof value === 'object' && value !== null && typeof (value as Error).message === 'string';
}
