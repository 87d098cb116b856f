// The sandbox page shows rich replies and turns what the person does with them into the events a real
// provider sends: replies posted through the real sandbox target (as a worker posts them) render as
// blocks and quick reply chips, hostile text stays text, and a click, a tap or a typed `/command`
// reaches the receiver as block_actions, postback or slash_command, read back from the workflow's own
// (encrypted) input. Real receiver, dev server, PostgreSQL and Chromium; no worker is needed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Page } from 'playwright-core';
import type { BotEvent } from '../../src/bot';
import type { MessageBody } from '../../src/model';
import type { InboundEvent } from '../../src/providers/types';
import { toBotEvent } from '../../src/responders/bot-event';
import { pageMessageId, sandboxEventId } from '../../src/sandbox/api';
import { sandboxTarget } from '../../src/targets/sandbox';
import { payloadCodec } from '../../src/temporal/client';
import { eventually } from '../support/eventually';
import { receiverSuite } from '../support/receiver';
import { database, TEST_ENCRYPTION_KEY } from '../support/servers';
import { TEST_SANDBOX, testConfig } from '../support/system';
import { type Browser, launchBrowser } from './harness';

const HOSTILE = '<img src=x onerror="window.__injected=1">';

describe('sandbox page: rich replies and what a person does with them (Chromium)', function () {
  this.timeout(300_000);
  const suite = receiverSuite(testConfig());
  let browser: Browser;
  let page: Page;
  let conversationId: string;

  before(async () => {
    browser = await launchBrowser();
    page = browser.page;
    await page.goto(`${suite.receiver.url}/sandbox`);
    conversationId = (await page.locator('#conv').textContent())!;
  });
  after(async () => {
    await browser?.close();
  });

  /** Posts a bot reply the way a worker does: the sandbox target, the API token, real HTTP. */
  const botSays = (body: MessageBody) =>
    sandboxTarget('sandbox', `${suite.receiver.url}/sandbox/api`, TEST_SANDBOX.apiToken).send({
      effectId: randomUUID(),
      step: { name: 'reply', target: 'sandbox', destination: { conversationId }, content: { kind: 'reply' } },
      body,
      signal: AbortSignal.timeout(10_000),
      attempt: 1,
    });

  /** The event the page's latest message started its workflow with, as the bot gets it. */
  const lastEvent = async (): Promise<BotEvent> => {
    const { pool } = await database();
    const { rows } = await pool.query<{ id: string }>(
      `SELECT id FROM sandbox_messages WHERE conversation_id = $1 AND author = 'user' ORDER BY id DESC LIMIT 1`,
      [conversationId],
    );
    const messageId = pageMessageId(TEST_SANDBOX.webhookSecret, conversationId, rows[0]!.id);
    const workflowId = `webhook:sandbox:${sandboxEventId(conversationId, messageId)}`;
    const history = await eventually(`${workflowId} started`, () =>
      suite.client.workflow.getHandle(workflowId).fetchHistory(),
    );
    const payloads = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
    const [decoded] = await payloadCodec(TEST_ENCRYPTION_KEY).decode([payloads[0]!]);
    return toBotEvent(defaultPayloadConverter.fromPayload<InboundEvent>(decoded!));
  };

  const userRow = (text: string) => page.locator('.msg.user', { hasText: text });

  it('renders blocks as text, and a button click arrives as block_actions with its ids and value', async () => {
    const blocks = [
      { type: 'header', text: { type: 'plain_text', text: 'Order 7' } },
      { type: 'section', text: { type: 'mrkdwn', text: `*Ready* to ship ${HOSTILE}` } },
      { type: 'divider' },
      { type: 'context', elements: [{ type: 'mrkdwn', text: 'sent by the example' }] },
      {
        type: 'actions',
        block_id: 'order-actions',
        elements: [
          {
            type: 'button',
            action_id: 'approve',
            value: 'order-7',
            style: 'primary',
            text: { type: 'plain_text', text: 'Approve' },
          },
          { type: 'static_select', action_id: 'pick' },
        ],
      },
      { type: 'video', title: { type: 'plain_text', text: 'x' } },
    ];
    await botSays({ text: 'Order 7 is ready', slack: { blocks } });
    const reply = page.locator('.msg.bot').last();
    await reply.locator('[data-block-type="header"]', { hasText: 'Order 7' }).waitFor();
    assert.equal(await reply.locator('[data-block-type="section"] b').textContent(), 'Ready');
    assert.ok((await reply.locator('[data-block-type="section"]').textContent())!.includes(HOSTILE));
    assert.equal(await reply.locator('hr.blk-divider').count(), 1);
    assert.equal(await reply.locator('[data-block-type="context"]').textContent(), 'sent by the example ');
    await reply.getByText('(a static_select element: not shown in the sandbox)').waitFor();
    await reply.getByText('(a video block: not shown in the sandbox)').waitFor();
    assert.equal(await page.locator('#log img').count(), 0, 'bot text is never markup');
    assert.equal(await page.evaluate('window.__injected'), undefined);

    await reply.getByRole('button', { name: 'Approve' }).click();
    await userRow('Approve').waitFor();
    assert.equal(await userRow('Approve').getAttribute('data-event-type'), 'block_actions');
    const event = await lastEvent();
    assert.equal(event.eventType, 'block_actions');
    assert.deepEqual(event.slack?.action, {
      actionId: 'approve',
      blockId: 'order-actions',
      value: 'order-7',
    });
    assert.equal(event.text, 'order-7', 'the value, as Slack interactions give it');
    assert.equal(event.conversationId, conversationId);
  });

  it('shows quick reply chips on the last message: a postback chip sends a postback, a message chip its text', async () => {
    const quickReply = {
      items: [
        { type: 'action', action: { type: 'postback', label: 'M', data: 'size=M', displayText: 'Size M' } },
        { type: 'action', action: { type: 'message', label: 'Not sure', text: 'not sure' } },
        { type: 'action', action: { type: 'camera', label: 'Photo' } },
      ],
    };
    const pick = { type: 'text', text: `Pick a size ${HOSTILE}`, quickReply };
    await botSays({ text: pick.text, line: [pick] });
    const reply = page.locator('.msg.bot').last();
    await reply.locator('.chip').first().waitFor();
    assert.ok((await reply.locator('.line-message .text').textContent())!.includes(HOSTILE));
    assert.ok(
      await reply.getByRole('button', { name: 'Photo' }).isDisabled(),
      'not something the sandbox does',
    );
    // Chips belong to the last message only.
    assert.equal(await page.locator('.msg.bot').first().locator('.chip').count(), 0);

    await reply.getByRole('button', { name: 'M', exact: true }).click();
    await userRow('Size M').waitFor();
    const postback = await lastEvent();
    assert.equal(postback.eventType, 'postback');
    assert.deepEqual(postback.line?.postback, { data: 'size=M' });
    assert.equal(await page.locator('.chip').count(), 0, 'the chips go once the person answered');

    await botSays({ text: pick.text, line: [pick] });
    await page.locator('.msg.bot').last().locator('.chip').first().waitFor();
    await page.getByRole('button', { name: 'Not sure' }).click();
    await userRow('not sure').waitFor();
    const message = await lastEvent();
    assert.equal(message.eventType, 'message');
    assert.equal(message.text, 'not sure');
    assert.ok(message.line && !message.slack, 'a LINE-style message');
  });

  it('sends /command args as a slash command Slack-style, and as plain text LINE-style', async () => {
    await page.locator('#style').selectOption('slack');
    await page.locator('#text').fill('/weather tokyo');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.msg.user.slash_command', { hasText: '/weather tokyo' }).waitFor();
    const command = await lastEvent();
    assert.equal(command.eventType, 'slash_command');
    assert.equal(command.slack?.command, '/weather');
    assert.equal(command.text, 'tokyo');

    await page.locator('#style').selectOption('line');
    await page.locator('#text').fill('/weather osaka');
    await page.getByRole('button', { name: 'Send' }).click();
    await userRow('/weather osaka').waitFor();
    const text = await lastEvent();
    assert.equal(text.eventType, 'message');
    assert.equal(text.text, '/weather osaka');
    assert.ok(text.line);
    // The switch is remembered, as the conversation is.
    await page.reload();
    assert.equal(await page.locator('#style').inputValue(), 'line');
  });
});
