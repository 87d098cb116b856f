// One logger for every process. Bodies, tokens, secrets and message text are redacted by path, so a
// careless `log.info({ req })` cannot leak them; callers log identifiers, not payloads.
import pino from 'pino';

/** Request headers that carry credentials or signatures. */
const SECRET_HEADERS = [
  'authorization',
  'cookie',
  '["x-api-key"]',
  '["x-slack-signature"]',
  '["x-line-signature"]',
  '["x-hub-signature"]',
  '["x-hub-signature-256"]',
  '["stripe-signature"]',
  '["webhook-signature"]',
];

export const REDACTED_PATHS = [
  ...['body', 'rawBody', 'text', 'payload', 'message.text', 'token', 'secret', 'accessToken'].flatMap(
    (path) => [path, `*.${path}`],
  ),
  ...SECRET_HEADERS.flatMap((h) => {
    const path = h.startsWith('[') ? `headers${h}` : `headers.${h}`;
    return [path, `*.${path}`];
  }),
];

export type Logger = pino.Logger;

/**
 * @param level pino's level; the caller passes the validated LOG_LEVEL (src/config.ts), so that an
 *   unknown level is a config error listed with the others rather than pino's throw.
 * @param destination where lines go. @default stdout (tests pass a stream to read what was logged)
 */
export function createLogger(
  level: pino.LevelWithSilent = 'info',
  name = 'replyflow',
  destination?: pino.DestinationStream,
): Logger {
  return pino({ name, level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination);
}
