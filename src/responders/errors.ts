// The errors of the responder (the bot's logic behind RESPONDER_MODULE or RESPONDER_URL).

/** Thrown when a responder's failure will not go away by retrying (bad configuration, 4xx). */
export class PermanentResponderError extends Error {
  override name = 'PermanentResponderError';
}
