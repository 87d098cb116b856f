// The example bot (examples/bot/bot.ts, RESPONDER_MODULE) in the sandbox, as a newcomer tries it in
// `npm start`: the real receiver and its sandbox API, a worker, the dev server and PostgreSQL; the
// person's side through the same HTTP endpoints the sandbox page calls, the bot's side read back from
// what the sandbox target stored. Each of its five behaviours, in one conversation, in order.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { freePort } from '../../src/ports';
import { type ReceiverHandle, startReceiver } from '../../src/receiver';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import type { EventResult } from '../../workflows/run-view';
import { database, devServer, TEST_ENCRYPTION_KEY } from '../support/servers';
import { silentLogger, startTestWorker, testConfig, uniqueId } from '../support/system';
import { effectRows } from '../support/workflows';

/** A row of the conversation as the sandbox page gets it (GET /sandbox/api/conversations/:id/messages). */
interface ChatRow {
  id: string;
  author: 'user' | 'bot';
  text: string;
  eventType: string;
  slack: { blocks?: SlackBlock[] } | null;
  line:
    | { type: string; text?: string; quickReply?: { items: { action: Record<string, string> }[] } }[]
    | null;
  reply?: { state: string; workflowId: string };
}
interface SlackBlock {
  type: string;
  block_id?: string;
  elements?: { type: string; action_id?: string; value?: string; text?: { text: string } }[];
}

describe('the example bot in the sandbox (receiver, worker, dev server, PostgreSQL)', function () {
  this.timeout(180_000);
  const conversationId = uniqueId('c');
  let receiver: ReceiverHandle;
  let temporal: TemporalClient;
  let client: Client;
  let worker: { stop(): Promise<void> } | undefined;

  before(async () => {
    const [server, { pool }] = await Promise.all([devServer(), database()]);
    const port = await freePort();
    const config = testConfig({
      RESPONDER_MODULE: 'examples/bot/bot.ts',
      SANDBOX_API_URL: `http://127.0.0.1:${port}/sandbox/api`,
    });
    receiver = await startReceiver({
      config,
      pool,
      temporalAddress: server.address,
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      port,
    });
    temporal = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    client = temporal.client;
    worker = await startTestWorker({ address: server.address, config });
  });
  after(async () => {
    await worker?.stop();
    await receiver?.stop();
    await temporal?.close();
  });

  const conversation = async (): Promise<ChatRow[]> => {
    const response = await fetch(`${receiver.url}/sandbox/api/conversations/${conversationId}/messages`);
    assert.equal(response.status, 200);
    return ((await response.json()) as { messages: ChatRow[] }).messages;
  };

  /**
   * What the person does on the page (a message, a click, a tap), posted where the page posts it;
   * @returns what the bot sent back for it (its rows after the person's), once the reply settled.
   */
  async function act(path: 'messages' | 'actions', body: object) {
    const response = await fetch(`${receiver.url}/sandbox/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ conversationId, ...body }),
    });
    const answer = (await response.json()) as { messageId: string; receiver: { workflowId: string } };
    assert.equal(response.status, 202, JSON.stringify(answer));
    const result = await client.workflow
      .getHandle<() => Promise<EventResult>>(answer.receiver.workflowId)
      .result();
    const rowId = /^m(\d+)-/.exec(answer.messageId)![1];
    const rows = await conversation();
    const at = rows.findIndex((r) => r.id === rowId);
    assert.ok(at >= 0, 'the person’s message is in the chat');
    const next = rows.slice(at + 1);
    const end = next.findIndex((r) => r.author === 'user');
    return { result, person: rows[at]!, replies: end < 0 ? next : next.slice(0, end) };
  }

  let greeting: ChatRow;

  it('answers a hello with blocks that hold a button: one reply', async () => {
    const { result, replies } = await act('messages', { text: 'hello bot', style: 'slack' });
    assert.equal(result.state, 'succeeded');
    assert.equal(replies.length, 1);
    greeting = replies[0]!;
    assert.equal(greeting.author, 'bot');
    const blocks = greeting.slack?.blocks ?? [];
    assert.deepEqual(
      blocks.map((b) => b.type),
      ['header', 'section', 'actions', 'context'],
    );
    const button = blocks.find((b) => b.type === 'actions')?.elements?.[0];
    assert.deepEqual([button?.type, button?.action_id, button?.text?.text], ['button', 'wave', 'Wave back']);
  });

  it('handles a click on that button', async () => {
    // The page sends what the button says, as it renders it from the stored blocks.
    const block = greeting.slack!.blocks!.find((b) => b.type === 'actions')!;
    const button = block.elements![0]!;
    const { result, person, replies } = await act('actions', {
      type: 'block_actions',
      label: button.text!.text,
      action: { actionId: button.action_id, blockId: block.block_id, value: button.value },
    });
    assert.equal(result.state, 'succeeded');
    assert.equal(person.eventType, 'block_actions');
    assert.deepEqual(
      replies.map((r) => r.text),
      ['You clicked Wave.'],
    );
  });

  it('answers the slash command /weather tokyo', async () => {
    const { person, replies } = await act('messages', { text: '/weather tokyo', style: 'slack' });
    assert.equal(person.eventType, 'slash_command');
    assert.deepEqual(
      replies.map((r) => r.text),
      ['Weather in Tokyo: sunny, 18 °C.'],
    );
  });

  it('asks LINE-style with quick reply chips, and takes the chip tapped', async () => {
    const { replies } = await act('messages', { text: 'what size?', style: 'line' });
    assert.equal(replies.length, 1);
    const [message] = replies[0]!.line ?? [];
    assert.equal(message?.text, 'Pick a size');
    const actions = message?.quickReply?.items.map((i) => i.action) ?? [];
    assert.deepEqual(
      actions.map((a) => [a.type, a.label, a.data]),
      [
        ['postback', 'S', 'size=S'],
        ['postback', 'M', 'size=M'],
        ['postback', 'L', 'size=L'],
      ],
    );
    const tapped = await act('actions', {
      type: 'postback',
      label: actions[1]!.displayText,
      postback: { data: actions[1]!.data },
    });
    assert.equal(tapped.person.eventType, 'postback');
    assert.deepEqual(
      tapped.replies.map((r) => r.line?.[0]?.text),
      ['Size M it is.'],
    );
  });

  it('leaves "thanks" unanswered: the event succeeds, nothing is sent, the effect is skipped', async () => {
    const { result, person, replies } = await act('messages', { text: 'thanks!', style: 'slack' });
    assert.deepEqual(
      [result.state, result.reason],
      ['succeeded', 'skipped: the responder chose not to reply'],
    );
    assert.deepEqual(replies, []);
    assert.equal(person.reply?.state, 'not answered');
    const messageId = person.reply!.workflowId.split('_').slice(2).join('_');
    const [row] = await effectRows(`chat:sandbox:${conversationId}:${messageId}:`);
    assert.equal(row?.status, 'skipped');
    // Nothing after it either: the conversation's bot rows are the five answers above.
    const bots = (await conversation()).filter((r) => r.author === 'bot');
    assert.equal(bots.length, 5);
  });
});
