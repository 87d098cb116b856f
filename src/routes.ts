// Which effects an event asks for. The default route answers a chat message once per (provider,
// conversation, source message, reply kind); configured routes (targets issue) add more.
import type { EffectPlan } from '../activities/types';
import type { InboundEvent } from './providers/types';

/** The business key of a chat reply: two event ids for the same message map to the same key. */
export function chatBusinessKey(event: InboundEvent, kind: string): string | undefined {
  if (!event.conversation || !event.message) return undefined;
  return `chat:${event.provider}:${event.conversation.id}:${event.message.id}:${kind}`;
}

export function defaultPlans(event: InboundEvent): EffectPlan[] {
  if (!event.replyTo) return [];
  const businessKey = chatBusinessKey(event, event.replyTo.kind);
  if (!businessKey) return [];
  return [
    {
      integration: event.provider,
      businessKey,
      conversationId: event.conversation?.id,
      steps: [
        {
          name: 'reply',
          target: event.replyTo.target,
          destination: event.replyTo.destination,
          content: { kind: 'reply' },
        },
      ],
    },
  ];
}
