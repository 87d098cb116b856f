// A hostile web page against the embedded Temporal, in Chromium: one served on another port of this
// machine, and one on a host name that resolves to 127.0.0.1 (DNS rebinding: `--host-resolver-rules`
// maps the name, and the attacker's script runs in that origin, as it would once the name is rebound
// under a page the attacker served first). Each page tries the Web UI's API (read the workflow list
// and a history, reset, terminate) and Temporal's HTTP API (start, terminate, list). What counts is
// what Temporal did (the held item still runs, unreset; no workflow was started) and what the page
// could read. The Web UI's own origins still read, and a link from another page still opens it.
// No request interception: Playwright answers CORS preflights itself while it intercepts.
import assert from 'node:assert/strict';
import http from 'node:http';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { Page } from 'playwright-core';
import { BROWSER_BLOCKED_PORTS } from '../../src/temporal/browser-blocked-ports';
import { statusQuery } from '../../workflows/messages';
import { FakeTarget } from '../support/fake-target';
import { type Listening, listenLocally } from '../support/fakes/base';
import { sandboxEvent, uniqueId } from '../support/system';
import { startEvent, waitForState } from '../support/workflows';
import { type Browser, launchBrowser, startUiStack, type UiStack } from './harness';

/** Resolves to 127.0.0.1 in this browser only. */
const REBOUND = 'rebound.test';
/**
 * Chromium's own checks on pages from a public address that reach loopback (Private / Local Network
 * Access). Firefox and Safari have none, so the test plays a browser without them: what stops the
 * page must be the embedded Temporal itself.
 */
const PRIVATE_NETWORK_CHECKS = [
  'BlockInsecurePrivateNetworkRequests',
  'PrivateNetworkAccessSendPreflights',
  'LocalNetworkAccessChecks',
].join(',');

/** What the hostile page aims at; `ui` and `api` are base URLs, '' for the page's own origin. */
interface Plan {
  ui: string;
  api: string;
  workflowId: string;
  runId: string;
  /** A WorkflowTaskCompleted event of the held run: a point a reset accepts. */
  resetEventId: number;
  /** The id the page tries to start a workflow under. */
  startId: string;
  /** Only the two reads (the UI's own origins). */
  readsOnly?: boolean;
}

interface Outcome {
  what: string;
  status?: number;
  body?: string;
  error?: string;
}

/**
 * The hostile script: what any page can do with fetch. Simple requests (text/plain,
 * no-cors) need no preflight; the UI's API wants a CSRF token matching its cookie, so the page takes
 * the cookie the UI hands out, or sets one of its own (cookies are shared by every port of a host).
 * Plain JavaScript in a string: the page runs it as it is, untouched by the test's compiler.
 */
const HOSTILE_SCRIPT = `
window.hostileRequests = async (plan) => {
  const outcomes = [];
  const attempt = async (what, url, init = {}) => {
    try {
      const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10000) });
      const body = res.type === 'opaque' ? '' : await res.text().catch(() => '');
      outcomes.push({ what, status: res.status, body: body.slice(0, 4000) });
    } catch (err) {
      outcomes.push({ what, error: String(err) });
    }
  };
  const workflows = '/api/v1/namespaces/default/workflows';
  const id = encodeURIComponent(plan.workflowId);
  const reads = { credentials: 'include' };
  await attempt('ui: list workflows', plan.ui + workflows, reads);
  await attempt('ui: read the history', plan.ui + workflows + '/' + id + '/history', reads);
  if (plan.readsOnly) return outcomes;

  await attempt('ui: take a CSRF cookie', plan.ui + '/', reads);
  let token = /(?:^|; )_csrf=([^;]+)/.exec(document.cookie)?.[1];
  if (!token) {
    token = 'hostile' + Math.random().toString(16).slice(2);
    document.cookie = '_csrf=' + token + '; path=/';
  }
  const writes = {
    method: 'POST',
    credentials: 'include',
    headers: { 'content-type': 'application/json', 'x-csrf-token': token },
  };
  const simple = { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' } };
  const reset = JSON.stringify({
    workflowExecution: { workflowId: plan.workflowId, runId: plan.runId },
    workflowTaskFinishEventId: String(plan.resetEventId),
    reason: 'hostile page',
    requestId: 'hostile-' + Math.random().toString(16).slice(2),
  });
  const terminate = JSON.stringify({ reason: 'hostile page' });
  await attempt('ui: reset', plan.ui + workflows + '/' + id + '/reset', { ...writes, body: reset });
  await attempt('ui: terminate', plan.ui + workflows + '/' + id + '/terminate', { ...writes, body: terminate });
  await attempt('ui: terminate (simple request)', plan.ui + workflows + '/' + id + '/terminate', { ...simple, body: terminate });

  const start = JSON.stringify({ workflowType: { name: 'hostile' }, taskQueue: { name: 'hostile' } });
  await attempt('api: start', plan.api + workflows + '/' + encodeURIComponent(plan.startId), { ...simple, body: start });
  await attempt('api: terminate', plan.api + workflows + '/' + id + '/terminate', { ...simple, body: terminate });
  await attempt('api: list workflows', plan.api + workflows);
  return outcomes;
};
`;
const HOSTILE_PAGE = `<!doctype html><title>hostile</title><script>${HOSTILE_SCRIPT}</script>`;

/** The hostile page's results, as the assertions print them. */
function summary(outcomes: Outcome[]): string {
  return outcomes.map((o) => `${o.what}: ${o.error ?? `${o.status} ${o.body?.slice(0, 120)}`}`).join('\n');
}

/**
 * A POST with node:http: fetch refuses the ports browsers refuse (undici follows the Fetch standard),
 * and this client is meant to be the one that is no browser.
 */
function post(url: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A server of the attacker's on another port: any path answers a blank page. */
async function startHostileSite(): Promise<Listening> {
  return listenLocally(
    http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end(HOSTILE_PAGE);
    }),
  );
}

describe('A web page on another origin or a rebinding host name cannot reach the embedded Temporal (Chromium)', function () {
  this.timeout(600_000);
  let stack: UiStack;
  let fake: FakeTarget;
  let hostile: Listening;
  let browser: Browser;
  let uiPort: number;
  let apiPort: number;

  before(async () => {
    fake = await new FakeTarget().start();
    stack = await startUiStack({ SANDBOX_API_URL: fake.url });
    hostile = await startHostileSite();
    browser = await launchBrowser({
      args: [
        `--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`,
        `--disable-features=${PRIVATE_NETWORK_CHECKS}`,
      ],
    });
    uiPort = Number(new URL(stack.uiUrl).port);
    // Where Temporal says its HTTP API is: what an attacker would find by scanning.
    const { clusters } = await stack.client.connection.operatorService.listClusters({});
    apiPort = Number(clusters[0]!.httpAddress!.split(':').pop());
    assert.ok(apiPort > 0, 'the dev server has an HTTP API');
  });
  after(async () => {
    await browser?.close();
    await hostile?.close();
    await stack?.stop();
    await fake?.stop();
  });

  /** A reply whose answer was lost, on a target that cannot be asked: held, waiting for a person. */
  async function heldItem() {
    fake.next('drop');
    const handle = await startEvent(
      stack.client,
      stack.config.TEMPORAL_TASK_QUEUE,
      sandboxEvent({ conversationId: uniqueId('c'), target: 'sandbox-blind', text: `hello ${uniqueId('')}` }),
    );
    await waitForState(handle, 'held', 120_000);
    const { runId } = await handle.describe();
    const history = await handle.fetchHistory();
    const completed = history.events!.find((e) => e.workflowTaskCompletedEventAttributes);
    return { handle, runId, resetEventId: Number(completed!.eventId) };
  }

  function planFor(item: Awaited<ReturnType<typeof heldItem>>, ui: string, api: string): Plan {
    return {
      ui,
      api,
      workflowId: item.handle.workflowId,
      runId: item.runId,
      resetEventId: item.resetEventId,
      startId: uniqueId('hostile-start'),
    };
  }

  /**
   * Opens `url` and runs the plan there, the hostile script added to whatever page that origin
   * served; a page the browser refuses to open can do nothing.
   */
  async function attackFrom(page: Page, url: string, plan: Plan): Promise<Outcome[]> {
    try {
      await page.goto(url);
    } catch (err) {
      return [{ what: `open ${url}`, error: (err as Error).message.split('\n')[0] }];
    }
    await page.evaluate(HOSTILE_SCRIPT);
    return page.evaluate(
      (p) => (globalThis as unknown as { hostileRequests(p: Plan): Promise<Outcome[]> }).hostileRequests(p),
      plan,
    );
  }

  /** What Temporal did: the held run still runs, unreset and unterminated; nothing was started. */
  async function assertUntouched(client: Client, plans: Plan[], outcomes: Outcome[]) {
    const [plan] = plans;
    const handle = client.workflow.getHandle(plan!.workflowId);
    const { runId, status } = await handle.describe();
    assert.deepEqual(
      { runId, status: status.name },
      { runId: plan!.runId, status: 'RUNNING' },
      `the held run, neither reset (a new run) nor terminated\n${summary(outcomes)}`,
    );
    assert.equal((await handle.query(statusQuery)).state, 'held');
    for (const { startId } of plans) {
      await assert.rejects(
        client.workflow.getHandle(startId).describe(),
        WorkflowNotFoundError,
        `no workflow ${startId} was started\n${summary(outcomes)}`,
      );
    }
  }

  /** The page read nothing of the held run: neither its id nor its run id came back. */
  function assertReadNothing(plan: Plan, outcomes: Outcome[]) {
    for (const outcome of outcomes) {
      for (const secret of [plan.workflowId, plan.runId])
        assert.ok(!outcome.body?.includes(secret), `${outcome.what} read ${secret}\n${summary(outcomes)}`);
    }
  }

  it('a page on another port can neither start nor terminate workflows through the HTTP API, nor read or change anything through the Web UI', async () => {
    const item = await heldItem();
    const { page } = browser;
    const plan = planFor(item, `http://127.0.0.1:${uiPort}`, `http://127.0.0.1:${apiPort}`);
    const outcomes = await attackFrom(page, `${hostile.url}/`, plan);
    await assertUntouched(stack.client, [plan], outcomes);
    assertReadNothing(plan, outcomes);
  });

  it('a page on a rebinding host name can neither read nor change anything, on the Web UI’s port, the HTTP API’s, or any port browsers block', async () => {
    const item = await heldItem();
    const { page } = browser;
    const plans: Plan[] = [];
    const outcomes: Outcome[] = [];
    const origins = [uiPort, apiPort, ...BROWSER_BLOCKED_PORTS].map((port) => `http://${REBOUND}:${port}`);
    for (const origin of new Set(origins)) {
      // Same-origin to whatever listens on that port; the HTTP API by its rebound name too.
      const plan = planFor(item, '', `http://${REBOUND}:${apiPort}`);
      plans.push(plan);
      const seen = await attackFrom(page, `${origin}/`, plan);
      outcomes.push(...seen.map((o) => ({ ...o, what: `${origin} ${o.what}` })));
    }
    await assertUntouched(stack.client, plans, outcomes);
    assertReadNothing(plans[0]!, outcomes);
    // Where the dev server puts what it cannot guard, Chromium does not even open a page.
    for (const port of BROWSER_BLOCKED_PORTS) {
      const opened = outcomes.find((o) => o.what.startsWith(`http://${REBOUND}:${port} open`));
      assert.match(opened?.error ?? '', /ERR_UNSAFE_PORT/, `port ${port}\n${summary(outcomes)}`);
    }
  });

  it('the HTTP API answers no one: not even a client on this machine that names it by its address', async () => {
    const startId = uniqueId('local-start');
    const started = await post(
      `http://127.0.0.1:${apiPort}/api/v1/namespaces/default/workflows/${startId}`,
      JSON.stringify({ workflowType: { name: 'hostile' }, taskQueue: { name: 'hostile' } }),
    );
    assert.equal(started.status, 403, started.body);
    await assert.rejects(stack.client.workflow.getHandle(startId).describe(), WorkflowNotFoundError);
  });

  it('the Web UI still answers its own origins, and a link from another page still opens it', async () => {
    const item = await heldItem();
    const { page } = browser;
    for (const origin of [`http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`]) {
      const plan = { ...planFor(item, '', ''), readsOnly: true };
      const outcomes = await attackFrom(page, `${origin}/namespaces/default/workflows`, plan);
      const list = outcomes.find((o) => o.what === 'ui: list workflows');
      assert.equal(list?.status, 200, summary(outcomes));
      assert.ok(
        list?.body?.includes(item.handle.workflowId),
        `the list shows the item\n${summary(outcomes)}`,
      );
    }
    // An alert's link, followed from a page elsewhere: a top-level navigation, which the UI serves.
    await page.goto(`${hostile.url}/`);
    const link = `${stack.uiUrl}/namespaces/default/workflows/${encodeURIComponent(item.handle.workflowId)}`;
    await page.setContent(`<a href="${link}">the held item</a>`);
    await page.getByRole('link', { name: 'the held item' }).click();
    await page.getByRole('heading', { name: item.handle.workflowId }).waitFor();
  });
});
