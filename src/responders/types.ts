// A responder writes the text of a reply (the FAQ, or RESPONDER_URL), or chooses not to reply. It runs
// once per effect; its answer is kept in the workflow so every retry and every approved resend sends
// the same text.
import type { InboundEvent } from '../providers/types';

export interface Responder {
  /** The reply's text, or null: no reply (the event ends succeeded with nothing sent). */
  answer(event: InboundEvent): Promise<string | null>;
  /**
   * Answers in-process and at once (the FAQ): the workflow asks it as a local activity, in the same
   * workflow task. A responder that calls another service runs as an activity of its own.
   */
  readonly local?: boolean;
}

/** Thrown when a responder's failure will not go away by retrying (bad configuration, 4xx). */
export class PermanentResponderError extends Error {
  override name = 'PermanentResponderError';
}
