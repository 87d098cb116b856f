// A responder is the bot's logic: the FAQ, a module (RESPONDER_MODULE) or a service (RESPONDER_URL).
// It answers once per reply owed; its answer is kept in the workflow so every retry and every
// approved resend sends the same messages.
import type { InboundEvent } from '../providers/types';

export interface Responder {
  /**
   * The answer (a BotReply, src/bot.ts; checked by prepareAnswer before anything is kept): one or
   * more messages, or null: no reply (the event ends succeeded with nothing sent).
   */
  answer(event: InboundEvent): Promise<unknown>;
  /**
   * Answers in-process and at once (the FAQ): the workflow asks it as a local activity, in the same
   * workflow task. A responder that calls another service runs as an activity of its own.
   */
  readonly local?: boolean;
}
