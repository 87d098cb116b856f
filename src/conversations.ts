// The conversation (and order) state machines: which transitions an event may cause, and how event
// versions compare. Late or disallowed events are refused by these rules, never by arrival time.
import type { InboundEvent } from './providers/types';

interface StateMachine {
  initial: string;
  /** Transitions events may cause: from → allowed targets (a state listed for itself allows repeats). */
  events: Record<string, readonly string[]>;
  /** Transitions only an operator may make (audited), e.g. reopening a closed conversation. */
  operator: Record<string, Record<string, readonly string[]>>;
}

export const MACHINES = {
  chat: {
    initial: 'unhandled',
    events: {
      unhandled: ['bot_handling', 'human_handling', 'closed'],
      bot_handling: ['bot_handling', 'human_handling', 'closed'],
      // While a person handles the conversation the bot does not reply; only an operator hands it back.
      human_handling: ['human_handling', 'closed'],
      closed: [],
    },
    operator: {
      handoff: { unhandled: ['human_handling'], bot_handling: ['human_handling'] },
      handback: { human_handling: ['bot_handling'] },
      close: { unhandled: ['closed'], bot_handling: ['closed'], human_handling: ['closed'] },
      reopen: { closed: ['unhandled'] },
    },
  },
  // Orders (order and warehouse integrations, docs/targets.md): a cancelled order is never revived
  // by a late confirmation.
  order: {
    initial: 'created',
    events: {
      created: ['confirmed', 'cancelled', 'shipped'],
      confirmed: ['shipped', 'cancelled'],
      shipped: [],
      cancelled: [],
    },
    operator: {
      reopen: { cancelled: ['created'] },
    },
  },
} as const satisfies Record<string, StateMachine>;

export type MachineName = keyof typeof MACHINES;

/** What an event asks of its conversation's state. */
export interface TransitionRequest {
  /** `<provider>:<conversation id>`: conversations of different providers never collide. */
  conversationKey: string;
  machine: MachineName;
  to: string;
  /** The event's occurrence time in microseconds since the epoch, as a decimal string. */
  version: string;
  /** Orders the sends of one conversation: version, then source message id. */
  orderKey: string;
}

/** The states from which an event may move a conversation to `to`. */
export function allowedFrom(machine: MachineName, to: string): string[] {
  const events = MACHINES[machine].events as Record<string, readonly string[]>;
  return Object.keys(events).filter((from) => events[from]!.includes(to));
}

/**
 * A provider's version or occurrence time → microseconds. Accepts Slack `event_ts` ("1712345678.000200"),
 * seconds (Stripe `created`), milliseconds (LINE `timestamp`) and ISO 8601 (sandbox `sentAt`).
 */
export function toMicros(version: string): bigint | undefined {
  const v = version.trim();
  const decimal = /^(\d+)(?:\.(\d{1,6}))?$/.exec(v);
  if (decimal) {
    const whole = BigInt(decimal[1]!);
    const fraction = BigInt((decimal[2] ?? '').padEnd(6, '0'));
    // Up to 11 digits is seconds (until the year 5138); more is milliseconds.
    return decimal[1]!.length <= 11 ? whole * 1_000_000n + fraction : whole * 1000n;
  }
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? undefined : BigInt(ms) * 1000n;
}

/** Chat events other than messages that move a conversation (by normalised event type). */
const CHAT_EVENT_STATES: ReadonlyMap<string, string> = new Map([
  ['handoff', 'human_handling'],
  ['close', 'closed'],
  ['unfollow', 'closed'],
]);

/**
 * The transition a chat event asks for: a message → the bot takes (or keeps) the conversation; a
 * hand-off or close event → that state. Other events leave the conversation alone.
 */
export function chatTransition(event: InboundEvent): TransitionRequest | undefined {
  // A Map: an event type such as `constructor` must not find Object.prototype's members.
  const to = event.message ? 'bot_handling' : CHAT_EVENT_STATES.get(event.eventType);
  if (!event.conversation || !to) return undefined;
  const micros = toMicros(event.conversation.version ?? event.occurredAt ?? event.receivedAt) ?? 0n;
  const version = micros.toString();
  return {
    conversationKey: `${event.provider}:${event.conversation.id}`,
    machine: 'chat',
    to,
    version,
    orderKey: `${version.padStart(20, '0')}:${event.message?.id ?? event.eventId}`,
  };
}
