// What the browser tests share: Debian's Chromium driven by playwright-core (never a downloaded
// browser), a Temporal dev server WITH its Web UI whose codec endpoint is a receiver's /codec, and
// screenshots for docs/runbook.md, written only when UPDATE_SCREENSHOTS=1 so CI leaves the tree clean.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import type { Config } from '../../src/config';
import { freePort } from '../../src/ports';
import { type ReceiverHandle, startReceiver } from '../../src/receiver';
import { connectClient, type TemporalClient } from '../../src/temporal/client';
import { type DevServer, startDevServer } from '../../src/temporal/dev-server';
import { type TestOperator, testOperator } from '../support/operators';
import { database, TEST_ENCRYPTION_KEY } from '../support/servers';
import { silentLogger, startTestWorker, testConfig } from '../support/system';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];
/** The UI is a single-page app on a busy 2-core machine: every wait is on UI state, and generous. */
const UI_TIMEOUT_MS = 60_000;
const SCREENSHOTS = path.resolve(__dirname, '..', '..', 'docs', 'img');

export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * Chromium with a fresh profile (its own cookies and local storage), removed again on close.
 * `args` adds command-line switches (e.g. `--host-resolver-rules` for a host name of the test's own).
 */
export async function launchBrowser(options: { args?: string[] } = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)`);
  }
  const profile = mkdtempSync(path.join(os.tmpdir(), 'replyflow-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_FLAGS, ...(options.args ?? [])],
    viewport: { width: 1680, height: 940 },
  });
  context.setDefaultTimeout(UI_TIMEOUT_MS);
  context.setDefaultNavigationTimeout(UI_TIMEOUT_MS);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Saves a screenshot for the runbook when UPDATE_SCREENSHOTS=1. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== '1') return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
}

export interface UiStack {
  server: DevServer;
  uiUrl: string;
  receiver: ReceiverHandle;
  config: Config;
  client: Client;
  /** An operator account who may mark sent, resend and discard: logs in to the codec server with its token. */
  operator: TestOperator;
  stop(): Promise<void>;
}

/**
 * A dev server with the Web UI (not the shared headless one), a receiver serving the codec endpoint
 * the UI is configured with (and the sandbox), and a worker on the stack's own task queue.
 * `env` adds settings (SANDBOX_API_URL is the receiver's own sandbox API unless given).
 */
export async function startUiStack(env: Record<string, string> = {}): Promise<UiStack> {
  const { pool } = await database();
  const [receiverPort, uiPort] = [await freePort(), await freePort()];
  const receiverUrl = `http://127.0.0.1:${receiverPort}`;
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
  };
  try {
    const server = await startDevServer({ port: 0, uiPort, uiCodecEndpoint: `${receiverUrl}/codec` });
    stops.push(() => server.stop());
    const uiUrl = server.uiUrl!;
    const config = testConfig({
      TEMPORAL_UI_URL: uiUrl,
      SANDBOX_API_URL: `${receiverUrl}/sandbox/api`,
      ...env,
    });
    const receiver = await startReceiver({
      config,
      pool,
      temporalAddress: server.address,
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      port: receiverPort,
    });
    stops.push(() => receiver.stop());
    const worker = await startTestWorker({ address: server.address, config });
    stops.push(() => worker.stop());
    const temporal: TemporalClient = await connectClient(server.address, 'default', TEST_ENCRYPTION_KEY);
    stops.push(() => temporal.close());
    const operator = await testOperator(['mark-sent', 'resend', 'discard']);
    return { server, uiUrl, receiver, config, client: temporal.client, operator, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The Web UI, as an operator uses it: each step waits on what the UI shows, never on time. */
export const webUi = {
  /** Signs this browser in at the codec server as `operator` (its HttpOnly session cookie). */
  async codecLogin(page: Page, receiverUrl: string, operator: TestOperator): Promise<void> {
    await page.goto(`${receiverUrl}/codec/login`);
    await page.getByLabel('Operator token').fill(operator.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Signed in as ${operator.account.name}` })
      .waitFor();
  },

  /**
   * Codec Server settings (the icon in the top bar): this browser's endpoint, with credentials so
   * that the session cookie goes along. `beforeApply` runs with the dialog filled in (screenshots).
   */
  async useCodecWithCredentials(page: Page, endpoint: string, beforeApply?: () => Promise<void>) {
    await page.locator('[data-testid^="data-encoder-status"]').click();
    const dialog = page.getByRole('dialog', { name: 'Codec Server' });
    await dialog.locator('#use-local-endpoint-radio').check();
    await dialog.locator('#data-encoder-endpoint-input').fill(endpoint);
    if (!(await dialog.locator('#pass-access-credentials').isChecked()))
      await dialog.getByText('Include cross-origin credentials').click();
    await dialog.getByTestId('data-encoder-cross-origin-credentials').waitFor();
    await beforeApply?.();
    await dialog.getByRole('button', { name: 'Apply', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
  },

  /** A workflow's page, as an operator opens it from an alert's link. */
  async openWorkflow(page: Page, uiUrl: string, workflowId: string): Promise<void> {
    await page.goto(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
    await page.getByRole('heading', { name: workflowId }).waitFor();
  },

  /** Types a List Filter query into the workflow list's query box. */
  async searchWorkflows(page: Page, uiUrl: string, query: string): Promise<void> {
    await page.goto(`${uiUrl}/namespaces/default/workflows`);
    await page.getByTestId('toggle-manual-query').click();
    const box = page.getByTestId('workflow-manual-search-input');
    await box.fill(query);
    await box.press('Enter');
  },

  /**
   * Workflow page → More Actions → Send a Signal, with the signal picked by name and one decision (a
   * JSON object naming the workflow); the codec server seals it for the operator logged in there.
   */
  async sendSignal(page: Page, name: string, payload: object, beforeSubmit?: () => Promise<void>) {
    await page.getByRole('button', { name: 'More Actions' }).click();
    await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send a Signal' });
    // The signal list comes from the workflow's own definitions (names and descriptions).
    await dialog.getByRole('button', { name: /Select a signal/ }).click();
    await page.getByRole('option', { name: new RegExp(`^${name}\\b`) }).click();
    const editor = dialog.locator('.cm-content');
    await editor.click();
    await page.keyboard.insertText(JSON.stringify(payload));
    // The editor reformats its JSON when it loses focus, which moves the Submit button.
    await editor.blur();
    await dialog.locator('.cm-content', { hasText: /"workflowId": / }).waitFor();
    await beforeSubmit?.();
    await dialog.getByRole('button', { name: 'Submit' }).click();
    await dialog.waitFor({ state: 'hidden' });
  },

  /** Workflow page → More Actions → Send an Update, `name` picked and `payload` typed in. @returns the form. */
  async fillUpdate(page: Page, name: string, payload: object): Promise<Locator> {
    await page.getByRole('button', { name: 'More Actions' }).click();
    await page.getByRole('menuitem', { name: 'Send an Update' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send an Update' });
    await dialog.getByRole('button', { name: /Select an Update/ }).click();
    await page.getByRole('option', { name: new RegExp(`^${name}\\b`) }).click();
    await webUi.replaceData(page, dialog, payload);
    return dialog;
  },

  /**
   * Workflow page → More Actions → Send an Update, the update picked from the workflow's own list
   * (which the UI can read only through the codec login) and one decision naming the workflow. The
   * form closes once the workflow has accepted it, saying "Update successful": the verdict itself is
   * in the history (`showVerdict`). A refusal keeps the form open (`sendRefusedUpdate`).
   */
  async sendUpdate(page: Page, name: string, payload: object, beforeSubmit?: () => Promise<void>) {
    const dialog = await webUi.fillUpdate(page, name, payload);
    await beforeSubmit?.();
    await dialog.getByRole('button', { name: 'Submit' }).click();
    await dialog.waitFor({ state: 'hidden' });
  },

  /**
   * Sends an Update the workflow refuses: the dialog stays open and shows the failed update's message,
   * `reason`, and nothing else; then closes it.
   */
  async sendRefusedUpdate(
    page: Page,
    name: string,
    payload: object,
    reason: string,
    beforeClose?: () => Promise<void>,
  ) {
    const dialog = await webUi.fillUpdate(page, name, payload);
    await dialog.getByRole('button', { name: 'Submit' }).click();
    await dialog.getByText(reason, { exact: true }).waitFor();
    await beforeClose?.();
    await dialog.getByTestId('cancel-modal-button').click();
    await dialog.waitFor({ state: 'hidden' });
  },

  /** A form's Data editor, emptied first: the Update form keeps what was sent last. */
  async replaceData(page: Page, dialog: Locator, payload: object): Promise<void> {
    const editor = dialog.locator('.cm-content');
    await editor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify(payload));
    // The editor reformats its JSON when it loses focus, which moves the Submit button.
    await editor.blur();
    await dialog.locator('.cm-content', { hasText: /"workflowId": / }).waitFor();
  },

  /**
   * The Event History tab, with the "Update Completed" event whose answer is `verdict` opened (the
   * list cuts long answers short) and in view.
   */
  async showVerdict(page: Page, verdict: string): Promise<void> {
    await page.getByRole('tab', { name: /^Event History/ }).click();
    await page
      .locator('tr', { hasText: 'Workflow Execution Update Completed' })
      .filter({ hasText: verdict.slice(0, 40) })
      .click();
    const answer = page.locator('.cm-line', { hasText: JSON.stringify(verdict) });
    await answer.waitFor();
    await answer.scrollIntoViewIfNeeded();
  },
};
