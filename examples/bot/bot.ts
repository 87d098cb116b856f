// An example bot for replyflow (RESPONDER_MODULE=examples/bot/bot.ts): one function that is given
// each event (src/bot.ts, BotEvent) and answers in the provider's own shapes, or not at all. The same
// code answers the sandbox (`npm start`, then http://127.0.0.1:3000/sandbox), Slack and LINE, because
// it reads the fields every provider fills the same way: `slack.action`, `slack.command`,
// `line.postback`, `text`. docs/responders.md, "Ten minutes to your first bot", walks through it.
import type { BotEvent, BotMessage, BotReply } from 'replyflow';

/** The forecasts this example knows (a real bot would ask a weather service here). */
const FORECASTS: Record<string, string> = {
  tokyo: 'sunny, 18 °C',
  osaka: 'cloudy, 16 °C',
  sapporo: 'snow, -2 °C',
};

const SIZES = ['S', 'M', 'L'];

export async function respond(event: BotEvent): Promise<BotReply> {
  // A button of ours was clicked (Slack's block_actions).
  const action = event.slack?.action;
  if (action) return { text: `You clicked ${action.value ?? action.actionId}.` };

  // A slash command: `/weather tokyo` gives command `/weather` and text `tokyo`.
  if (event.slack?.command === '/weather') return weather(event.text);

  // A quick reply chip with a postback action was tapped (LINE's postback).
  const postback = event.line?.postback;
  if (postback) {
    const size = new URLSearchParams(postback.data).get('size');
    return { type: 'text', text: size ? `Size ${size} it is.` : 'That chip is not one of mine.' };
  }

  const text = event.text.toLowerCase();
  // Not every message needs an answer: null sends nothing, and the event still ends succeeded.
  if (/\bthanks?\b|\bthank you\b/.test(text)) return null;

  if (event.line) {
    if (text.includes('size')) return pickASize();
    if (text.includes('hello')) return { type: 'text', text: 'Hello! Say "size" and I will ask you one.' };
    return { type: 'text', text: 'Try "hello" or "size".' };
  }

  if (event.eventType === 'app_mention' || text.includes('hello')) return greeting(event);
  return { text: 'Try "hello", or the command /weather tokyo.' };
}

/** Slack blocks: a greeting and a button, whose click comes back as `slack.action`. */
function greeting(event: BotEvent): BotMessage {
  const who = event.user ? `<@${event.user}>` : 'there';
  return {
    text: 'Hello! (Your Slack client shows the blocks instead of this text.)',
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: 'Hello from replyflow' } },
      { type: 'section', text: { type: 'mrkdwn', text: `Hi ${who}, I am the *example bot*.` } },
      {
        type: 'actions',
        block_id: 'greeting',
        elements: [
          {
            type: 'button',
            action_id: 'wave',
            value: 'Wave',
            style: 'primary',
            text: { type: 'plain_text', text: 'Wave back' },
          },
        ],
      },
      { type: 'context', elements: [{ type: 'mrkdwn', text: 'Also try `/weather tokyo`.' }] },
    ],
  };
}

function weather(place: string): BotMessage {
  const city = place.trim().toLowerCase();
  if (!city) return { text: 'Which city? For example: /weather tokyo' };
  const forecast = FORECASTS[city];
  const name = city.charAt(0).toUpperCase() + city.slice(1);
  return {
    text: forecast ? `Weather in ${name}: ${forecast}.` : `I have no forecast for ${name}.`,
    // Everyone in the channel sees the answer, not only the person who asked.
    response_type: 'in_channel',
  };
}

/** A LINE text message with quick reply chips; each chip is a postback that comes back as `line.postback`. */
function pickASize(): BotMessage {
  return {
    type: 'text',
    text: 'Pick a size',
    quickReply: {
      items: SIZES.map((size) => ({
        type: 'action' as const,
        action: { type: 'postback', label: size, data: `size=${size}`, displayText: `Size ${size}` },
      })),
    },
  };
}
