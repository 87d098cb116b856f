// A bot module for tests (RESPONDER_MODULE): what it answers depends on the message, so one worker
// shows every kind of answer. Typed against the published contract, as a bot developer's would be.
import type { BotEvent, BotReply } from 'replyflow';

export async function respond(event: BotEvent): Promise<BotReply> {
  const text = event.text;
  if (text.includes('quiet')) return null;
  // A LINE postback: a quick reply and a flex card, in one reply.
  if (event.line?.postback) {
    const { data, params } = event.line.postback;
    return [
      {
        text: `You chose ${data}${params?.date ? ` for ${params.date}` : ''}`,
        quickReply: {
          items: [{ type: 'action', action: { type: 'message', label: 'Again', text: 'again' } }],
        },
      },
      {
        type: 'flex',
        altText: 'Opening hours',
        contents: {
          type: 'bubble',
          body: { type: 'box', layout: 'vertical', contents: [{ type: 'text', text: '9:00-18:00' }] },
        },
      },
    ];
  }
  if (text.includes('three')) {
    return [
      {
        text: 'one',
        blocks: [{ type: 'section', text: { type: 'mrkdwn', text: '*one*' } }],
      },
      { text: 'two' },
      { text: 'three', where: 'channel' },
    ];
  }
  // A LINE field in an answer to Slack: refused before anything is sent.
  if (text.includes('wrong shape')) return { messages: [{ type: 'flex', text: 'x' }] };
  // What the bot was given, so that the test can check the event's shape.
  return {
    text: JSON.stringify({
      version: event.version,
      provider: event.provider,
      eventType: event.eventType,
      user: event.user,
      conversationId: event.conversationId,
      slack: event.slack,
      rawType: (event.raw as { type?: string }).type,
    }),
  };
}
