// The HTTP responder: asks a service (an LLM gateway, a rules engine) for the answer, posting the
// event as JSON (src/bot.ts BotEvent; schema/bot-event.schema.json). Asking has no side effect, so
// transient failures are retried by the activity; 4xx answers are permanent. The service may choose
// not to reply: 204, a JSON `null`, or an empty text (docs/responders.md). The answer's shape is
// checked by prepareAnswer, against the reply's target.
import type { InboundEvent } from '../providers/types';
import { toBotEvent } from './bot-event';
import { PermanentResponderError } from './errors';
import type { Responder } from './types';

interface HttpResponderOptions {
  url: string;
  timeoutMs: number;
  /** Sent as `Authorization: Bearer …` when set. */
  token?: string;
}

export function httpResponder(options: HttpResponderOptions): Responder {
  return {
    async answer(event: InboundEvent) {
      const response = await fetch(options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-request-id': event.correlationId,
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        },
        body: JSON.stringify(toBotEvent(event)),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      if (
        response.status >= 400 &&
        response.status < 500 &&
        response.status !== 408 &&
        response.status !== 429
      ) {
        throw new PermanentResponderError(
          `responder answered ${response.status}: check RESPONDER_URL and its credentials`,
        );
      }
      if (!response.ok) throw new Error(`responder answered ${response.status}`);
      if (response.status === 204) return null;
      const text = await response.text();
      if (text.trim() === '') return null;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new PermanentResponderError(
          'responder answer is not JSON: answer {"text": "…"}, {"messages": […]}, or 204 for no reply',
        );
      }
    },
  };
}
