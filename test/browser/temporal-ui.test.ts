// The operator's screen in a real browser: Debian's Chromium on the Temporal Web UI of a dev server
// started with our codec endpoint, as `replyflow start` starts it. The operator finds a held item by
// search attribute, reads it (ciphertext until signed in to the codec server with their operator
// token, at the login page the UI's banner links to; no codec dialog), and resolves it from
// "Send a Signal": the codec server seals the decision for them, the workflow audits it in their name.
// UPDATE_SCREENSHOTS=1 refreshes the runbook's pictures in docs/img/.
import assert from 'node:assert/strict';
import { eventStartOptions, eventSummary } from '../../src/receiver/start-event';
import { CODEC_BANNER } from '../../src/temporal/web-ui-guard';
import type { handleEvent } from '../../workflows';
import { statusQuery } from '../../workflows/messages';
import { FakeTarget } from '../support/fake-target';
import { sandboxEvent, uniqueId } from '../support/system';
import { auditRows, effectRows, waitForState } from '../support/workflows';
import { type Browser, launchBrowser, screenshot, startUiStack, type UiStack, webUi } from './harness';

/**
 * The columns the runbook recommends for held and failed work, in this order (each one added goes
 * last): the short ones first, so that a long workflow id pushes none of them off the screen.
 */
const COLUMNS = [
  'ReplyState',
  'Integration',
  'FailedStep',
  'LastErrorClass',
  'Attempts',
  'Workflow ID',
  'Start',
  'RecommendedAction',
];

describe('Temporal Web UI: find a held item by search attribute and resolve it from "Send a Signal" (Chromium)', function () {
  this.timeout(600_000);
  let stack: UiStack;
  let fake: FakeTarget;
  let browser: Browser;

  before(async () => {
    fake = await new FakeTarget().start();
    stack = await startUiStack({ SANDBOX_API_URL: fake.url });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
    await fake?.stop();
  });

  it('shows ciphertext until the codec login, then mark-sent from the signal form completes the item once, audited', async () => {
    const { page } = browser;
    const conversationId = uniqueId('c');
    const text = `where is my parcel ${uniqueId('')}?`;
    // The reply reaches the target, but its answer is lost: sandbox-blind cannot be asked → held.
    fake.next('accept-then-drop');
    const event = sandboxEvent({ conversationId, target: 'sandbox-blind', text });
    // Started as the receiver starts it: its search attributes and its summary.
    const handle = await stack.client.workflow.start<typeof handleEvent>(
      'handleEvent',
      eventStartOptions(event, stack.config.TEMPORAL_TASK_QUEUE),
    );
    const held = await waitForState(handle, 'held', 120_000);
    const effectId = held.effectId!;
    assert.equal(fake.sendsFor(effectId).length, 1);

    // 1. The held list: the query an operator saves, with the search attributes as columns.
    // This dev server is the test's own, so the runbook's query finds exactly this item.
    await webUi.searchWorkflows(page, stack.uiUrl, 'ReplyState="held"');
    const row = page.getByRole('link', { name: handle.workflowId });
    await row.waitFor();
    await page.getByTestId('create-view-button').click();
    const save = page.getByRole('dialog', { name: 'Save as New View' });
    await save.getByLabel('Name').fill('Held replies');
    await save.getByRole('button', { name: 'Save', exact: true }).click();
    await save.waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: 'Held replies' }).waitFor();
    await page.getByTestId('workflows-summary-table-configuration-button').click();
    const drawer = page.locator('#workflows-table-configuration-drawer');
    for (const column of ['Workflow ID', 'Run ID', 'Type', 'Start', 'End'])
      await page.getByRole('button', { name: `Remove ${column} column` }).click();
    for (const column of COLUMNS) await page.getByRole('button', { name: `Add ${column} column` }).click();
    await drawer.getByText('Columns (in view)').scrollIntoViewIfNeeded();
    await screenshot(page, 'ui-configure-columns');
    await drawer.getByRole('button', { name: 'Close Workflows Table configuration' }).click();
    await drawer.waitFor({ state: 'hidden' });
    await page.getByRole('columnheader', { name: 'RecommendedAction' }).waitFor();
    await page.getByRole('cell', { name: 'held', exact: true }).waitFor();
    // Readable without scrolling: every short column and the workflow's link are on the screen.
    const width = page.viewportSize()!.width;
    for (const header of COLUMNS.slice(0, -1)) {
      const box = await page.getByRole('columnheader', { name: header, exact: true }).boundingBox();
      assert.ok(box && box.x + box.width <= width, `${header} is on the screen`);
    }
    const link = await row.boundingBox();
    assert.ok(link && link.x + link.width <= width, 'the workflow id is on the screen');
    await screenshot(page, 'ui-held-list');

    // 2. Without the codec login the UI cannot decode: the input shows as ciphertext, and the banner
    // links to the login page.
    await row.click();
    await page.getByRole('heading', { name: handle.workflowId }).waitFor();
    await page.locator('#content').getByText(CODEC_BANNER).waitFor();
    const loginLink = page.getByRole('link', { name: `${stack.receiver.url}/codec/login` });
    assert.equal(await page.getByText(text).count(), 0, 'no plaintext without the codec login');
    await screenshot(page, 'ui-ciphertext');
    // Nor can a signal be sent: the UI encodes it through /codec/encode, which refuses.
    await page.getByRole('button', { name: 'More Actions' }).click();
    await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
    const refused = page.getByRole('dialog', { name: 'Send a Signal' });
    await refused.locator('#signal-name').fill('resolve');
    await refused.locator('.cm-content').click();
    await page.keyboard.insertText(
      JSON.stringify({ workflowId: handle.workflowId, action: 'discard', reason: 'no codec login' }),
    );
    await refused.locator('.cm-content').blur();
    await refused.getByRole('button', { name: 'Submit' }).click();
    await refused.getByText('Data encoding failed').waitFor();
    await refused.getByTestId('cancel-modal-button').click();
    await refused.waitFor({ state: 'hidden' });
    assert.deepEqual(
      (await handle.query(statusQuery)).operatorHistory,
      [],
      'the refused signal never arrived',
    );

    // 3. The banner's link opens the codec login in a new tab; signed in there, the UI decodes on a
    // reload, through the endpoint it was started with: no codec dialog.
    const [login] = await Promise.all([browser.context.waitForEvent('page'), loginLink.click()]);
    await webUi.codecLogin(login, stack.receiver.url, stack.operator);
    await screenshot(login, 'codec-login');
    await login.close();
    await page.reload();
    await page.getByText(text).first().waitFor();
    assert.equal(await page.locator('#content').getByText(CODEC_BANNER).count(), 0, 'the banner is gone');
    await screenshot(page, 'ui-decoded');
    // Its summary says what it is without its text: provider, event type, conversation (the UI
    // renders it as Markdown, in a frame of its own).
    await page.locator('#content').getByText('User Metadata', { exact: true }).click();
    await page.frameLocator('#user-metadata-summary').getByText(eventSummary(event)).waitFor();
    await screenshot(page, 'ui-summary');

    // 4. The status query, readable without any message text.
    await page.locator('#content').getByText('Queries', { exact: true }).click();
    await page.getByRole('button', { name: 'Run Query' }).click();
    await page.getByText('"recommendedAction"').waitFor();
    await page.getByText('"held"').first().waitFor();
    await screenshot(page, 'ui-status-query');

    // 5. resolve → mark-sent through the form; the UI encodes the payload with /codec/encode.
    const decision = {
      workflowId: handle.workflowId,
      action: 'mark-sent',
      reason: 'customer confirmed the reply arrived',
      externalId: '1',
    };
    await webUi.sendSignal(page, 'resolve', decision, () => screenshot(page, 'ui-signal-resolve'));
    const result = await handle.result();
    assert.equal(result.state, 'succeeded');
    await page.getByText('Completed').first().waitFor();
    await screenshot(page, 'ui-resolved');

    // Exactly the one send that went before; nothing was sent again.
    assert.equal(fake.sendsFor(effectId).length, 1);
    const [effect] = await effectRows(held.businessKey!);
    assert.equal(effect.status, 'succeeded');
    assert.equal(effect.external_id, '1');
    const audit = await auditRows(handle.workflowId);
    assert.equal(audit.length, 1);
    assert.equal(audit[0].actor, stack.operator.account.name, 'the operator logged in, as the seal proves');
    assert.equal(audit[0].action, 'mark-sent');
    assert.equal(audit[0].state_before, 'held');
    assert.equal(audit[0].state_after, 'succeeded');
    assert.equal(audit[0].reason, decision.reason);
    assert.match(audit[0].result, /^accepted/);
    const status = await handle.query(statusQuery);
    assert.equal(status.operatorHistory[0]?.actor, stack.operator.account.name);

    // The signal the UI sent went through /codec/encode: history holds it encrypted.
    const history = await handle.fetchHistory();
    const signalled = history.events!.find(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'resolve',
    );
    const payload = signalled!.workflowExecutionSignaledEventAttributes!.input!.payloads![0]!;
    assert.equal(Buffer.from(payload.metadata!.encoding!).toString(), 'binary/encrypted');
    assert.ok(!Buffer.from(payload.data!).toString().includes(decision.reason));
  });
});
