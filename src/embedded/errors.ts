// The errors of the embedded PostgreSQL that `replyflow start` runs.

/** Thrown when the embedded PostgreSQL cannot start; the message says what to do. */
export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}
