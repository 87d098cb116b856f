// The Temporal SDK's own log lines (the worker's, the core's, the workflow and activity context
// loggers) through our pino logger: one JSON line each, like ours, with an error as its message and
// type. The SDK's DefaultLogger printed an activity that failed as planned (a responder refusing, a
// target's 4xx) as a ~40-line object with every stack; that stack is now only logged at debug.
import type { LogMetadata, Logger as SdkLogger, LogLevel as SdkLogLevel } from '@temporalio/worker';
import { errorMessage } from '../failures';
import { debugStack, isErrorLike, type Logger } from '../logger';

/** The SDK's levels, least severe first. */
const SDK_LEVELS: readonly SdkLogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

const PINO_LEVEL = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
} as const satisfies Record<SdkLogLevel, string>;

/** Fields the SDK adds that tell an operator nothing: the task token is ~200 bytes of opaque base64. */
const DROPPED_FIELDS = new Set(['taskToken']);

/**
 * @param least the least severe SDK level logged (REPLYFLOW_SDK_LOG_LEVEL); `logger`'s own level
 *   (LOG_LEVEL) filters on top, so LOG_LEVEL=error also hides the SDK's warnings.
 */
export function sdkLogger(logger: Logger, least: SdkLogLevel): SdkLogger {
  const threshold = SDK_LEVELS.indexOf(least);
  const log = (level: SdkLogLevel, message: string, meta?: LogMetadata) => {
    if (SDK_LEVELS.indexOf(level) < threshold) return;
    logger[PINO_LEVEL[level]](fieldsOf(logger, meta), message);
  };
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}

/**
 * The SDK's metadata as flat fields. An error becomes its message (with its causes') and its type:
 * an ApplicationFailure's `type` names the condition (`PermanentResponderError`), its class does not.
 * Symbol keys (the SDK's timestamp) are left out: pino stamps the line itself.
 */
function fieldsOf(logger: Logger, meta: LogMetadata | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(meta ?? {})) {
    if (DROPPED_FIELDS.has(key)) continue;
    if (!isErrorLike(value)) {
      fields[key] = value;
      continue;
    }
    const type = (value as { type?: unknown }).type;
    fields[key] = errorMessage(value);
    fields[`${key}Type`] = typeof type === 'string' ? type : value.name;
    const { stack } = debugStack(logger, value);
    if (stack) fields.stack ??= stack;
  }
  return fields;
}
