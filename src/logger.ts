// One logger for every process. Bodies, tokens, secrets and message text are redacted by path, so a
// careless `log.info({ req })` cannot leak them; callers log identifiers, not payloads.
import pino from 'pino';

export const REDACTED_PATHS = [
  'body',
  '*.body',
  'text',
  '*.text',
  'payload',
  '*.payload',
  'headers.authorization',
  '*.headers.authorization',
  'headers["x-slack-signature"]',
  'headers["x-line-signature"]',
  'headers["x-hub-signature-256"]',
  'headers["stripe-signature"]',
  'headers["webhook-signature"]',
  '*.token',
  '*.secret',
  'token',
  'secret',
];

export type Logger = pino.Logger;

export function createLogger(level = process.env.LOG_LEVEL ?? 'info', name = 'replyflow'): Logger {
  return pino({ name, level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } });
}
