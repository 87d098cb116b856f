// What the chaos run's senders deliver: sandbox chat messages over many conversations (each answered by
// one of the three sandbox target flavours), every event delivered several times (some copies at
// once, some soon, some much later), and a share of messages delivered again under a second event id.
import { SANDBOX_MODES, type SandboxMode } from '../../src/model';

export type Random = () => number;

/** A small seeded generator (mulberry32), so that a run can be repeated with `--seed`. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const between = (random: Random, low: number, high: number) => low + (high - low) * random();
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

export interface Delivery {
  eventId: string;
  body: string;
  /** When to send it, in ms after the senders' start. */
  atMs: number;
  /** Which receiver it goes to. */
  receiver: number;
}

interface PlannedEvent {
  eventId: string;
  conversationId: string;
  messageId: string;
  /** A second event id for a message that already has one (as Slack sends `message` and `app_mention`). */
  secondId: boolean;
  firstAtMs: number;
}

export interface PlannedConversation {
  id: string;
  flavour: SandboxMode;
  /** The first delivery of its first message, in ms after the senders' start. */
  firstAtMs: number;
  messages: number;
}

export interface Plan {
  events: PlannedEvent[];
  conversations: PlannedConversation[];
  deliveries: Delivery[];
  /** When the last first delivery of an event is due (later copies may come after it). */
  sendWindowMs: number;
}

interface PlanOptions {
  /** Distinct event ids, second ids included. */
  events: number;
  /** Deliveries of each event id (1 = no duplicates). */
  dup: number;
  /** Share of event ids that are a second id for an already planned message. */
  sameMessageShare: number;
  /** First deliveries per second. */
  ratePerSecond: number;
  /** The latest a "later" copy may come after the event's first delivery. */
  laterMaxMs: number;
  receivers: number;
  /** Makes ids unique to the run. */
  runId: string;
  /** Wall-clock time of the senders' start (the messages' `sentAt` is derived from it). */
  startedAt: number;
}

export function buildPlan(options: PlanOptions, random: Random): Plan {
  const secondIds = Math.round(options.events * options.sameMessageShare);
  const messageCount = options.events - secondIds;
  const gapMs = 1000 / options.ratePerSecond;
  const events: PlannedEvent[] = [];
  const conversations: PlannedConversation[] = [];
  const bodies = new Map<string, string>();
  let slotMs = 0;
  for (let c = 0; events.length < messageCount; c++) {
    // Conversations of one to four messages; each flavour promises something else on an unknown outcome.
    const size = Math.min(1 + Math.floor(random() * 4), messageCount - events.length);
    const conversation: PlannedConversation = {
      id: `c${options.runId}x${c}`,
      flavour: SANDBOX_MODES[c % SANDBOX_MODES.length]!,
      firstAtMs: slotMs,
      messages: size,
    };
    conversations.push(conversation);
    let atMs = slotMs;
    for (let m = 1; m <= size; m++) {
      const messageId = `m${m}`;
      const eventId = `evt_${options.runId}_${events.length}`;
      bodies.set(
        eventId,
        JSON.stringify({
          type: 'message',
          conversationId: conversation.id,
          messageId,
          text: pick(random, QUESTIONS),
          target: conversation.flavour,
          sentAt: new Date(options.startedAt + atMs).toISOString(),
        }),
      );
      events.push({ eventId, conversationId: conversation.id, messageId, secondId: false, firstAtMs: atMs });
      atMs += between(random, 200, 3000);
    }
    slotMs += gapMs * size;
  }
  const sendWindowMs = slotMs;
  const originals = [...events];
  for (let i = 0; i < secondIds; i++) {
    const original = pick(random, originals);
    const eventId = `evt_${options.runId}_${events.length}`;
    // Mostly close to the first id (two event types for one message), sometimes much later.
    const atMs =
      original.firstAtMs +
      (random() < 0.7 ? between(random, 0, 2000) : between(random, 5000, options.laterMaxMs));
    bodies.set(eventId, bodies.get(original.eventId)!);
    events.push({ ...original, eventId, secondId: true, firstAtMs: atMs });
  }
  const deliveries = events.flatMap((event) => copies(event, bodies.get(event.eventId)!, options, random));
  deliveries.sort((a, b) => a.atMs - b.atMs);
  return { events, conversations, deliveries, sendWindowMs };
}

/** The copies of one event: the first, then some at the same moment, some soon, some much later. */
function copies(event: PlannedEvent, body: string, options: PlanOptions, random: Random): Delivery[] {
  return Array.from({ length: options.dup }, (_, copy) => {
    const roll = random();
    const delay =
      copy === 0 || roll < 0.4
        ? 0
        : roll < 0.7
          ? between(random, 50, 3000)
          : between(random, Math.min(10_000, options.laterMaxMs), options.laterMaxMs);
    return {
      eventId: event.eventId,
      body,
      atMs: event.firstAtMs + delay,
      receiver: Math.floor(random() * options.receivers),
    };
  });
}

const QUESTIONS = [
  'what are your opening hours?',
  'how much is shipping?',
  'can I return this?',
  'where is my order?',
  'do you ship abroad?',
];
