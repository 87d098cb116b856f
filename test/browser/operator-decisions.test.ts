// Who decides, in the Web UI: two operators in two browsers, each signed in to the codec server with
// their own token, decide one resend through "Send an Update"; the codec server seals each decision
// for whoever is signed in and the workflow answers. The operator who asks for the resend holds the
// approve role too, so what refuses her own approval is the two-person rule, not her roles. Then a
// browser nobody signed in to types plain JSON: refused, nothing changes, the refusal is on the record.
// UPDATE_SCREENSHOTS=1 refreshes the runbook's pictures in docs/img/.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { Page } from 'playwright-core';
import { statusQuery } from '../../workflows/messages';
import { eventually } from '../support/eventually';
import { FakeTarget } from '../support/fake-target';
import { listenLocally } from '../support/fakes/base';
import { type TestOperator, testOperator } from '../support/operators';
import { sandboxEvent, uniqueId } from '../support/system';
import { auditRows, effectRows, startEvent, waitForState } from '../support/workflows';
import { type Browser, launchBrowser, screenshot, startUiStack, type UiStack, webUi } from './harness';

const SELF_APPROVAL =
  'Rejected: the approver must be a different person from the operator who asked for the resend';
const PLAINTEXT = 'rejected: plaintext: not encrypted by a known key';

/**
 * A codec endpoint of the attacker's own that hands payloads back unchanged: with it, the UI sends
 * what was typed as plain JSON, straight to Temporal (ours would refuse to encode without a login).
 */
async function startPassThroughCodec() {
  return listenLocally(
    http.createServer((req, res) => {
      res.setHeader('Access-Control-Allow-Origin', req.headers.origin ?? '*');
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Access-Control-Allow-Headers', req.headers['access-control-request-headers'] ?? '*');
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      if (req.method === 'OPTIONS') return void res.writeHead(204).end();
      res.setHeader('Content-Type', 'application/json');
      req.pipe(res);
    }),
  );
}

/**
 * "Send a Signal" or "Send an Update" with the name typed in: without a codec login the UI cannot
 * read the workflow's own list of them (it is encrypted like every payload).
 * @returns the form, after Submit.
 */
async function typeDecision(page: Page, kind: 'Signal' | 'Update', name: string, payload: object) {
  await page.getByRole('button', { name: 'More Actions' }).click();
  const title = kind === 'Signal' ? 'Send a Signal' : 'Send an Update';
  await page.getByRole('menuitem', { name: title }).click();
  const dialog = page.getByRole('dialog', { name: title });
  await dialog.locator(kind === 'Signal' ? '#signal-name' : '#update-name').fill(name);
  await webUi.replaceData(page, dialog, payload);
  await dialog.getByRole('button', { name: 'Submit' }).click();
  return dialog;
}

describe('Temporal Web UI: two operators in two browsers decide one resend through "Send an Update" (Chromium)', function () {
  this.timeout(600_000);
  let stack: UiStack;
  let fake: FakeTarget;
  /** Asks for resends; holds the approve role too. */
  let ana: TestOperator;
  /** Approves. */
  let ben: TestOperator;
  const browsers: Browser[] = [];

  before(async () => {
    fake = await new FakeTarget().start();
    stack = await startUiStack({ SANDBOX_API_URL: fake.url });
    [ana, ben] = await Promise.all([
      testOperator(['resend', 'mark-sent', 'discard', 'approve']),
      testOperator(['approve']),
    ]);
  });
  afterEach(async () => {
    for (const browser of browsers.splice(0)) await browser.close();
  });
  after(async () => {
    await stack?.stop();
    await fake?.stop();
  });

  /** A fresh browser (its own profile: cookies, codec setting), closed after the test. */
  async function newBrowser(): Promise<Browser> {
    const browser = await launchBrowser();
    browsers.push(browser);
    return browser;
  }

  /** A reply the customer never got: the target dropped the connection, and sandbox-blind cannot be asked. */
  async function heldItem() {
    const conversationId = uniqueId('c');
    const text = `did my refund go through ${uniqueId('')}?`;
    fake.next('drop');
    const handle = await startEvent(
      stack.client,
      stack.config.TEMPORAL_TASK_QUEUE,
      sandboxEvent({ conversationId, target: 'sandbox-blind', text }),
    );
    const held = await waitForState(handle, 'held', 120_000);
    assert.equal(fake.sendsFor(held.effectId!).length, 1);
    assert.equal(fake.deliveredTo(conversationId).length, 0, 'the customer has no reply');
    return { handle, conversationId, text, effectId: held.effectId!, businessKey: held.businessKey! };
  }

  /** A browser signed in to the codec server as `operator`, on the workflow's page, decoding. */
  async function signedIn(operator: TestOperator, item: Awaited<ReturnType<typeof heldItem>>) {
    const { page } = await newBrowser();
    await webUi.codecLogin(page, stack.receiver.url, operator);
    // Signed in, the UI's own codec endpoint decodes: no Codec Server dialog (the Web UI guard).
    await webUi.openWorkflow(page, stack.uiUrl, item.handle.workflowId);
    await page.getByText(item.text).first().waitFor();
    return page;
  }

  it('accepts one operator’s resend, refuses her own approval, and resends once on the other’s', async () => {
    const item = await heldItem();
    const { workflowId } = item.handle;

    const anaPage = await signedIn(ana, item);
    await webUi.sendUpdate(
      anaPage,
      'resolve',
      { workflowId, action: 'resend', reason: 'customer saw no answer; it is not in the chat' },
      () => screenshot(anaPage, 'ui-update-resend'),
    );
    await webUi.showVerdict(anaPage, 'Accepted: awaiting approval');
    await screenshot(anaPage, 'ui-update-verdict');
    assert.equal((await item.handle.query(statusQuery)).state, 'awaiting_approval');
    assert.equal(fake.sendsFor(item.effectId).length, 1, 'asking for a resend sends nothing');

    // A refusal is a failed Update: the dialog shows its reason in red, not "Update successful".
    await webUi.sendRefusedUpdate(
      anaPage,
      'approve',
      { workflowId, reason: 'looks right to me' },
      SELF_APPROVAL.slice('Rejected: '.length),
      () => screenshot(anaPage, 'ui-update-self-approval'),
    );
    assert.equal((await item.handle.query(statusQuery)).state, 'awaiting_approval');
    assert.equal(fake.sendsFor(item.effectId).length, 1, 'her own approval sends nothing');

    const benPage = await signedIn(ben, item);
    await webUi.sendUpdate(benPage, 'approve', { workflowId, reason: 'checked the chat: no answer there' });
    await webUi.showVerdict(benPage, 'Accepted: resend approved');
    assert.equal((await item.handle.result()).state, 'succeeded');

    // Exactly one reply reached the customer: the lost attempt and the approved resend, one key.
    const delivered = fake.deliveredTo(item.conversationId);
    assert.equal(delivered.length, 1);
    const sends = fake.sendsFor(item.effectId);
    assert.equal(sends.length, 2);
    assert.equal(new Set(sends.map((s) => s.idempotencyKey)).size, 1);
    const [effect] = await effectRows(item.businessKey);
    assert.equal(effect.status, 'succeeded');
    assert.equal(effect.external_id, String(delivered[0]!.id));
    const audit = await auditRows(workflowId);
    assert.deepEqual(
      audit.map((a) => [a.actor, a.action, a.approver, a.state_before, a.state_after, a.result]),
      [
        [ana.account.name, 'resend', null, 'held', 'awaiting_approval', 'accepted: awaiting approval'],
        [
          ana.account.name,
          'approve',
          ana.account.name,
          'awaiting_approval',
          'awaiting_approval',
          `rejected: ${SELF_APPROVAL.slice('Rejected: '.length)}`,
        ],
        [
          ben.account.name,
          'approve',
          ben.account.name,
          'awaiting_approval',
          'processing',
          'accepted: resend approved',
        ],
      ],
    );
  });

  it('refuses plain JSON typed into the UI without a login: nothing changes, nothing is sent, the refusal is audited', async () => {
    const item = await heldItem();
    const { workflowId } = item.handle;
    const { page } = await newBrowser();
    await webUi.openWorkflow(page, stack.uiUrl, workflowId);
    // The claim the attacker made through the UI: marked sent, with a made-up id.
    const markSent = { workflowId, action: 'mark-sent', externalId: 'made-up', reason: 'trust me' };

    // As deployed, the UI encodes through our codec server, which encodes for signed-in operators only.
    const refused = await typeDecision(page, 'Update', 'resolve', markSent);
    await refused.getByText('Data encoding failed').waitFor();
    await screenshot(page, 'ui-update-no-login');
    await refused.getByTestId('cancel-modal-button').click();
    await refused.waitFor({ state: 'hidden' });
    assert.deepEqual(await auditRows(workflowId), [], 'nothing reached the workflow');

    // Around it: this browser's own pass-through codec, so the JSON reaches Temporal as typed.
    const passThrough = await startPassThroughCodec();
    try {
      await webUi.useCodecWithCredentials(page, passThrough.url);
      await page.reload();
      await page.getByRole('heading', { name: workflowId }).waitFor();
      const signal = await typeDecision(page, 'Signal', 'resolve', {
        workflowId,
        action: 'resend',
        reason: 'resend it',
      });
      await signal.waitFor({ state: 'hidden' });
      // The workflow refuses the update: the form stays open with the reason.
      const update = await typeDecision(page, 'Update', 'resolve', markSent);
      await update.getByText(PLAINTEXT.slice('rejected: '.length), { exact: true }).waitFor();
      await update.getByTestId('cancel-modal-button').click();
      await update.waitFor({ state: 'hidden' });
    } finally {
      await passThrough.close();
    }

    const audit = await eventually('both refusals are audited', async () => {
      const rows = await auditRows(workflowId);
      return rows.length >= 2 && rows;
    });
    assert.deepEqual(
      audit.map((a) => [a.actor, a.state_before, a.state_after, a.result]),
      [
        ['(unverified)', 'held', 'held', PLAINTEXT],
        ['(unverified)', 'held', 'held', PLAINTEXT],
      ],
    );
    assert.equal((await item.handle.query(statusQuery)).state, 'held');
    const [effect] = await effectRows(item.businessKey);
    assert.equal(effect.status, 'held');
    assert.equal(effect.external_id, null);
    assert.equal(fake.sendsFor(item.effectId).length, 1, 'nothing sent again');
    assert.equal(fake.deliveredTo(item.conversationId).length, 0);
  });
});
