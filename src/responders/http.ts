// The HTTP responder: asks a service (an LLM gateway, a rules engine) for the reply text. Asking has
// no side effect, so transient failures are retried by the activity; 4xx answers are permanent. The
// service may choose not to reply: 204, a JSON `null`, or an empty text (docs/responders.md).
import { z } from 'zod';
import type { InboundEvent } from '../providers/types';
import { PermanentResponderError, type Responder } from './types';

const answerSchema = z.union([z.null(), z.object({ text: z.string().max(8000) })]);

export interface HttpResponderOptions {
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
        body: JSON.stringify({
          provider: event.provider,
          eventId: event.eventId,
          conversationId: event.conversation?.id,
          messageId: event.message?.id,
          text: event.message?.text ?? '',
        }),
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
      const parsed = answerSchema.safeParse(await response.json().catch(() => undefined));
      if (!parsed.success)
        throw new PermanentResponderError(
          'responder answer must be JSON {"text": "…"} (at most 8000 characters), or 204 / null / an empty text for no reply',
        );
      return parsed.data?.text || null;
    },
  };
}
