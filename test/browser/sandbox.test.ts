// The sandbox demo end to end in a real browser: chat with the bot, arm a fault on a sandbox-blind
// reply and watch it go held, follow the page's link into the Temporal Web UI and resolve it there,
// see the outcome on the page; then hand the chat to a person and close it.
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { database } from '../support/servers';
import { effectRows } from '../support/workflows';
import { type Browser, launchBrowser, screenshot, startUiStack, type UiStack, webUi } from './harness';

describe('sandbox page: the demo from chat to held to resolved (Chromium)', function () {
  this.timeout(600_000);
  let stack: UiStack;
  let browser: Browser;

  before(async () => {
    stack = await startUiStack();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  const userMessage = (page: Page, text: string) => page.locator('.msg.user', { hasText: text });
  const replyState = (page: Page, text: string, state: string) =>
    userMessage(page, text).locator(`[data-reply-state="${state}"]`);
  const send = async (page: Page, text: string) => {
    await page.locator('#text').fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
    await userMessage(page, text).waitFor();
  };

  it('answers, holds a reply whose answer was lost, and shows the decision taken in the Temporal UI', async () => {
    const { page, context } = browser;
    await page.goto(`${stack.receiver.url}/sandbox`);
    const conversationId = (await page.locator('#conv').textContent())!;
    assert.match(conversationId, /^c\w+$/);

    // A normal question gets its answer.
    await send(page, 'what are your opening hours?');
    await page.locator('.msg.bot', { hasText: 'open 9:00-18:00' }).waitFor();
    await replyState(page, 'what are your opening hours?', 'replied').waitFor();

    // The next reply goes to a target that cannot be asked, and its response is lost.
    await page.locator('#mode').selectOption('sandbox-blind');
    await page.locator('#fault').selectOption('drop-after-commit');
    await page
      .getByRole('status')
      .filter({ hasText: 'the next reply will fail: drop-after-commit' })
      .waitFor();
    await send(page, 'where is my parcel?');
    await replyState(page, 'where is my parcel?', 'held').waitFor();
    // The reply did arrive: the person sees it; replyflow cannot know, so it holds.
    const botReplies = page.locator('.msg.bot');
    await botReplies.nth(1).waitFor();
    const deliveredId = await botReplies.nth(1).getAttribute('data-message-id');
    await screenshot(page, 'sandbox-held');

    // Follow the held message's link into the Temporal UI and mark it sent with the reply's id.
    const [ui] = await Promise.all([
      context.waitForEvent('page'),
      userMessage(page, 'where is my parcel?').getByRole('link', { name: 'workflow' }).click(),
    ]);
    await ui.getByRole('heading', { name: /webhook:sandbox:sbx_/ }).waitFor();
    const workflowUrl = ui.url();
    await webUi.codecLogin(ui, stack.receiver.url, stack.operator);
    await ui.goto(workflowUrl);
    await ui.getByText('where is my parcel?').first().waitFor();
    // The workflow page's address names the workflow: /namespaces/<ns>/workflows/<id>/<run id>/…
    const workflowId = decodeURIComponent(new URL(workflowUrl).pathname.split('/')[4]!);
    await webUi.sendSignal(ui, 'resolve', {
      workflowId,
      action: 'mark-sent',
      reason: 'the reply is in the chat',
      externalId: deliveredId,
    });
    await ui.getByText('Completed').first().waitFor();
    await ui.close();

    await page.bringToFront();
    await replyState(page, 'where is my parcel?', 'replied').waitFor();
    await userMessage(page, 'where is my parcel?').getByText('mark-sent by an operator').waitFor();
    await screenshot(page, 'sandbox-resolved');

    // One reply per message reached the person: the held one was never sent again.
    const { pool } = await database();
    const { rows } = await pool.query(
      `SELECT id FROM sandbox_messages WHERE conversation_id = $1 AND author = 'bot' ORDER BY id`,
      [conversationId],
    );
    assert.equal(rows.length, 2);
    const effects = await effectRows(`chat:sandbox:${conversationId}:`);
    assert.deepEqual(
      effects.map((e) => [e.target, e.status]),
      [
        ['sandbox', 'succeeded'],
        ['sandbox-blind', 'succeeded'],
      ],
    );
    assert.equal(effects[1].external_id, deliveredId);
  });

  it('hands the conversation to a person (the bot stops answering) and ends it', async () => {
    const { page } = browser;
    await page.goto(`${stack.receiver.url}/sandbox`);
    await page.getByRole('button', { name: 'New conversation' }).click();
    await send(page, 'hello bot');
    await replyState(page, 'hello bot', 'replied').waitFor();
    await page.locator('#conversation-state[data-state="bot_handling"]').waitFor();

    await page.getByRole('button', { name: 'Ask for a person' }).click();
    await page.locator('#conversation-state[data-state="human_handling"]').waitFor();
    await send(page, 'are you a person?');
    await replyState(page, 'are you a person?', 'not answered').waitFor();
    await screenshot(page, 'sandbox-handoff');

    await page.getByRole('button', { name: 'End conversation' }).click();
    await page.locator('#conversation-state[data-state="closed"]').waitFor();
    assert.equal(await page.locator('.msg.bot').count(), 1);
  });
});
