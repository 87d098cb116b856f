// Every provider over real HTTP through the real receiver app, with a starter that records what it was
// asked to make durable (no Temporal needed): 202 with the contract's workflow id, 401 and 400 with
// nothing started, the handshakes, and LINE's "2xx only when every event is durable".
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSignedBodiesStore } from '../../src/db/github-signed-bodies';
import { createReceiverMetrics } from '../../src/metrics';
import { GITHUB_REPLAY_WINDOW_DAYS } from '../../src/providers/github';
import { createProviders } from '../../src/providers/index';
import { signStandardWebhook } from '../../src/providers/standard-webhooks';
import type { InboundEvent } from '../../src/providers/types';
import { createReceiverApp } from '../../src/receiver/app';
import { TemporalUnavailableError } from '../../src/receiver/errors';
import type { EventStarter, StartOutcome } from '../../src/receiver/start-event';
import { counterValue } from '../support/receiver';
import { database } from '../support/servers';
import { signGitHubDelivery, signLineRequest, signSlackRequest, signStripeEvent } from '../support/signers';
import { silentLogger, testConfig, uniqueId } from '../support/system';

const SECRETS = {
  SLACK_SIGNING_SECRET: 'slack-http-test-secret',
  LINE_CHANNEL_SECRET: 'line-http-test-secret',
  GITHUB_WEBHOOK_SECRET: 'github-http-test-secret',
  STRIPE_WEBHOOK_SECRET: 'whsec_stripe_http_test_secret',
  STANDARD_WEBHOOKS_SECRETS: 'orders=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
};
const STD_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** The receiver's JSON answers, as far as these tests read them. */
interface Answer {
  status?: string;
  workflowId?: string;
  workflows?: { workflowId: string; status: string }[];
  issues?: { path: (string | number)[] }[];
}

/** Records every start; a workflow id seen before is a duplicate; listed ids fail once as unavailable. */
class RecordingStarter implements EventStarter {
  readonly started: InboundEvent[] = [];
  private readonly durable = new Set<string>();
  private readonly failOnce = new Set<string>();

  failNextStartOf(workflowId: string): void {
    this.failOnce.add(workflowId);
  }

  async start(event: InboundEvent): Promise<StartOutcome> {
    if (this.failOnce.delete(event.workflowId)) {
      throw new TemporalUnavailableError('Temporal did not accept the start (test)');
    }
    this.started.push(event);
    if (this.durable.has(event.workflowId)) return 'duplicate';
    this.durable.add(event.workflowId);
    return 'accepted';
  }

  startsOf(workflowId: string): InboundEvent[] {
    return this.started.filter((e) => e.workflowId === workflowId);
  }
}

async function listen(
  env: Record<string, string>,
  starter: EventStarter,
): Promise<{ url: string; server: Server }> {
  const config = testConfig(env);
  const app = createReceiverApp({
    providers: createProviders(config, {
      githubBodies: createSignedBodiesStore((await database()).pool, GITHUB_REPLAY_WINDOW_DAYS),
    }),
    starter,
    readiness: async () => ({
      checks: { temporal: true, postgres: true, searchAttributes: true },
      problems: [],
    }),
    metrics: createReceiverMetrics(),
    logger: silentLogger,
    bodyLimit: config.WEBHOOK_BODY_LIMIT,
  });
  const server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('providers over HTTP (real receiver app, recording starter)', function () {
  this.timeout(60_000);
  const starter = new RecordingStarter();
  let url: string;
  let server: Server;

  before(async () => {
    ({ url, server } = await listen(SECRETS, starter));
  });
  after(() => {
    server?.closeAllConnections();
    server?.close();
  });

  const post = (path: string, headers: Record<string, string>, body: string) =>
    fetch(`${url}${path}`, { method: 'POST', headers, body });

  /** The answer and what the starter was asked to start while answering it. */
  async function send(path: string, headers: Record<string, string>, body: string) {
    const before = starter.started.length;
    const res = await post(path, headers, body);
    const answer = (await res.json()) as Answer;
    return { status: res.status, headers: res.headers, body: answer, started: starter.started.slice(before) };
  }

  describe('Slack', () => {
    const slackMessage = (eventId: string, ts: string, type = 'message') =>
      JSON.stringify({
        type: 'event_callback',
        team_id: 'T1',
        event_id: eventId,
        event_time: Math.floor(Date.now() / 1000),
        event: { type, channel: 'C1', user: 'U1', text: 'hello', ts, event_ts: ts },
      });
    const signed = (body: string) => signSlackRequest(SECRETS.SLACK_SIGNING_SECRET, body);

    it('accepts an event_callback with 202 and its workflow id, and answers a retry as duplicate', async () => {
      const eventId = uniqueId('Ev');
      const body = slackMessage(eventId, '1700000000.000200');
      const first = await send('/webhooks/slack', signed(body), body);
      assert.equal(first.status, 202);
      assert.deepEqual(first.body, { status: 'accepted', workflowId: `webhook:slack:${eventId}` });
      const retry = await send(
        '/webhooks/slack',
        { ...signed(body), 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' },
        body,
      );
      assert.equal(retry.status, 200);
      assert.deepEqual(retry.body, { status: 'duplicate', workflowId: `webhook:slack:${eventId}` });
      assert.deepEqual(retry.started[0]!.redelivery, { retryNum: 1, retryReason: 'http_timeout' });
    });

    it('starts the message and app_mention of one mention as two workflows with one business key', async () => {
      const ts = `1700000000.${Date.now() % 1_000_000}`;
      const message = slackMessage(uniqueId('Ev'), ts);
      const mention = slackMessage(uniqueId('Ev'), ts, 'app_mention');
      const a = await send('/webhooks/slack', signed(message), message);
      const b = await send('/webhooks/slack', signed(mention), mention);
      assert.deepEqual([a.status, b.status], [202, 202]);
      assert.deepEqual(a.started[0]!.conversation, b.started[0]!.conversation);
      assert.deepEqual(a.started[0]!.message, b.started[0]!.message);
    });

    it('counts accepted events by tenant on /metrics, redeliveries not, with at most 100 tenants by id', async () => {
      const scrape = async () => (await fetch(`${url}/metrics`)).text();
      const accepted = (text: string, tenant: string) =>
        counterValue(text, 'replyflow_events_accepted_total', { provider: 'slack', tenant });
      const ofTeam = (team: string, eventId: string) =>
        JSON.stringify({ ...JSON.parse(slackMessage(eventId, '1700000000.000300')), team_id: team });
      const deliver = async (body: string) => (await send('/webhooks/slack', signed(body), body)).status;

      const before = await scrape();
      const [teamA, teamB] = [uniqueId('TA'), uniqueId('TB')];
      const first = ofTeam(teamA, uniqueId('Ev'));
      assert.deepEqual(
        [await deliver(first), await deliver(first), await deliver(ofTeam(teamA, uniqueId('Ev')))],
        [202, 200, 202],
      );
      assert.equal(await deliver(ofTeam(teamB, uniqueId('Ev'))), 202);
      const after = await scrape();
      assert.equal(accepted(after, `slack:${teamA}`) - accepted(before, `slack:${teamA}`), 2);
      assert.equal(accepted(after, `slack:${teamB}`) - accepted(before, `slack:${teamB}`), 1);

      // A hundred more workspaces: this receiver labels the first 100 it saw by id, the rest `other`.
      const last = uniqueId('TZ');
      for (let i = 0; i < 100; i++) assert.equal(await deliver(ofTeam(`${last}${i}`, uniqueId('Ev'))), 202);
      const crowded = await scrape();
      assert.equal(accepted(crowded, `slack:${last}99`), 0);
      assert.ok(accepted(crowded, 'other') >= 1);
      const labels = new Set(
        [...crowded.matchAll(/^replyflow_events_accepted_total\{[^}]*tenant="([^"]*)"/gm)].map((m) => m[1]),
      );
      assert.ok(labels.size <= 101, `${labels.size} tenant label values`);
      for (const label of labels) assert.match(label!, /^(other|slack:[A-Za-z0-9_-]+)$/);
    });

    it('answers url_verification with the challenge and starts nothing', async () => {
      const body = JSON.stringify({ token: 't', challenge: 'challenge-abc', type: 'url_verification' });
      const res = await send('/webhooks/slack', signed(body), body);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { challenge: 'challenge-abc' });
      assert.equal(res.started.length, 0);
    });

    it('answers 401 to a bad signature and starts nothing', async () => {
      const body = slackMessage(uniqueId('Ev'), '1.1');
      const res = await send('/webhooks/slack', signSlackRequest('not-the-secret', body), body);
      assert.equal(res.status, 401);
      assert.equal(res.started.length, 0);
    });

    it('answers 400 to an event without event_id and starts nothing', async () => {
      const body = JSON.stringify({ ...JSON.parse(slackMessage('x', '1.1')), event_id: undefined });
      const res = await send('/webhooks/slack', signed(body), body);
      assert.equal(res.status, 400);
      assert.deepEqual(
        res.body.issues?.map((i) => i.path.join('.')),
        ['event_id'],
      );
      assert.equal(res.started.length, 0);
    });
  });

  describe('LINE', () => {
    const lineEvent = (webhookEventId: string, messageId: string) => ({
      type: 'message',
      mode: 'active',
      timestamp: Date.now(),
      source: { type: 'user', userId: 'Uhttp' },
      webhookEventId,
      deliveryContext: { isRedelivery: false },
      replyToken: uniqueId('rt'),
      message: { id: messageId, type: 'text', text: 'hello' },
    });
    const lineBody = (...events: object[]) => JSON.stringify({ destination: 'Ubot', events });
    const signed = (body: string) => signLineRequest(SECRETS.LINE_CHANNEL_SECRET, body);

    it('starts one workflow per event and answers 202 once all three are durable', async () => {
      const ids = [uniqueId('L'), uniqueId('L'), uniqueId('L')];
      const body = lineBody(...ids.map((id, i) => lineEvent(id, `m${i}`)));
      const res = await send('/webhooks/line', signed(body), body);
      assert.equal(res.status, 202);
      assert.deepEqual(
        res.started.map((e) => e.workflowId).sort(),
        ids.map((id) => `webhook:line:${id}`).sort(),
      );
      assert.deepEqual(res.body, {
        status: 'accepted',
        workflows: ids.map((id) => ({ workflowId: `webhook:line:${id}`, status: 'accepted' })),
      });
    });

    it('answers 503 with Retry-After when one event is not durable, and the redelivery completes it', async () => {
      const ids = [uniqueId('L'), uniqueId('L'), uniqueId('L')];
      const body = lineBody(...ids.map((id, i) => lineEvent(id, `m${i}`)));
      starter.failNextStartOf(`webhook:line:${ids[1]}`);
      const failed = await send('/webhooks/line', signed(body), body);
      assert.equal(failed.status, 503);
      assert.ok(Number(failed.headers.get('retry-after')) > 0);

      const redelivered = await send('/webhooks/line', signed(body), body);
      assert.equal(redelivered.status, 202);
      assert.deepEqual(
        redelivered.body.workflows?.map((w) => w.status),
        ['duplicate', 'accepted', 'duplicate'],
      );
      // The failed start was never durable; the other two were started once each time they arrived.
      assert.deepEqual(
        ids.map((id) => starter.startsOf(`webhook:line:${id}`).length),
        [2, 1, 2],
      );
    });

    it("answers the console's verify request (no events) with 200 {} and starts nothing", async () => {
      const body = lineBody();
      const res = await send('/webhooks/line', signed(body), body);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {});
      assert.equal(res.started.length, 0);
    });

    it('answers 401 to a bad signature and starts nothing', async () => {
      const body = lineBody(lineEvent(uniqueId('L'), 'm1'));
      const res = await send('/webhooks/line', signLineRequest('not-the-secret', body), body);
      assert.equal(res.status, 401);
      assert.equal(res.started.length, 0);
    });

    it('answers 400 when any event lacks webhookEventId, and starts none of them', async () => {
      const { webhookEventId: _, ...withoutId } = lineEvent('x', 'm2');
      const body = lineBody(lineEvent(uniqueId('L'), 'm1'), withoutId);
      const res = await send('/webhooks/line', signed(body), body);
      assert.equal(res.status, 400);
      assert.equal(res.started.length, 0);
    });
  });

  describe('GitHub', () => {
    // Every delivery's body differs (GitHub's carry ids and times): the same signed bytes under a new
    // delivery id are refused as a replay, which test/integration/github-replay.test.ts shows.
    let issue = '';
    beforeEach(() => {
      issue = JSON.stringify({
        action: 'opened',
        issue: { id: uniqueId(''), number: 3, title: 'hello' },
        repository: { name: 'r', full_name: 'o/r', owner: { login: 'o' } },
      });
    });
    const delivery = (event = 'issues') => ({ event, deliveryId: uniqueId('d-'), hookId: '4242' });

    it('accepts a delivery with 202 and a workflow id of hook id and delivery GUID', async () => {
      const d = delivery();
      const res = await send(
        '/webhooks/github',
        await signGitHubDelivery(SECRETS.GITHUB_WEBHOOK_SECRET, issue, d),
        issue,
      );
      assert.equal(res.status, 202);
      assert.deepEqual(res.body, { status: 'accepted', workflowId: `webhook:github:4242:${d.deliveryId}` });
      assert.equal(res.started[0]!.eventType, 'issues.opened');
    });

    it('accepts a form-encoded delivery', async () => {
      const d = delivery();
      const form = new URLSearchParams({ payload: issue }).toString();
      const headers = {
        ...(await signGitHubDelivery(SECRETS.GITHUB_WEBHOOK_SECRET, form, d)),
        'content-type': 'application/x-www-form-urlencoded',
      };
      const res = await send('/webhooks/github', headers, form);
      assert.equal(res.status, 202);
      assert.equal(res.started[0]!.replyTo?.destination.issueNumber, '3');
    });

    it('answers ping with pong and starts nothing', async () => {
      const ping = JSON.stringify({ zen: 'Design for failure.', hook_id: 4242, hook: { id: 4242 } });
      const res = await send(
        '/webhooks/github',
        await signGitHubDelivery(SECRETS.GITHUB_WEBHOOK_SECRET, ping, delivery('ping')),
        ping,
      );
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { status: 'pong' });
      assert.equal(res.started.length, 0);
    });

    it('answers 401 to a bad signature and starts nothing', async () => {
      const res = await send(
        '/webhooks/github',
        await signGitHubDelivery('not-the-secret', issue, delivery()),
        issue,
      );
      assert.equal(res.status, 401);
      assert.equal(res.started.length, 0);
    });

    it('answers 400 to a delivery without X-GitHub-Hook-ID and starts nothing', async () => {
      const { 'x-github-hook-id': _, ...headers } = await signGitHubDelivery(
        SECRETS.GITHUB_WEBHOOK_SECRET,
        issue,
        delivery(),
      );
      const res = await send('/webhooks/github', headers, issue);
      assert.equal(res.status, 400);
      assert.equal(res.started.length, 0);
    });
  });

  describe('Stripe', () => {
    const stripeEvent = (id: string) =>
      JSON.stringify({
        id,
        object: 'event',
        type: 'charge.refunded',
        created: Math.floor(Date.now() / 1000),
        data: { object: { id: 'ch_1', object: 'charge' } },
      });

    it('accepts an event with 202 and webhook:stripe:<evt id>', async () => {
      const id = uniqueId('evt_');
      const body = stripeEvent(id);
      const res = await send('/webhooks/stripe', signStripeEvent(SECRETS.STRIPE_WEBHOOK_SECRET, body), body);
      assert.equal(res.status, 202);
      assert.deepEqual(res.body, { status: 'accepted', workflowId: `webhook:stripe:${id}` });
    });

    it('answers 401 to a bad signature and starts nothing', async () => {
      const body = stripeEvent(uniqueId('evt_'));
      const res = await send('/webhooks/stripe', signStripeEvent('whsec_not_the_secret', body), body);
      assert.equal(res.status, 401);
      assert.equal(res.started.length, 0);
    });

    it('answers 400 to an id that is not an evt_ id and starts nothing', async () => {
      const body = stripeEvent(uniqueId('ch_'));
      const res = await send('/webhooks/stripe', signStripeEvent(SECRETS.STRIPE_WEBHOOK_SECRET, body), body);
      assert.equal(res.status, 400);
      assert.equal(res.started.length, 0);
    });
  });

  describe('Standard Webhooks', () => {
    const order = JSON.stringify({
      type: 'order.paid',
      timestamp: new Date().toISOString(),
      data: { id: 'o1' },
    });

    it('accepts an event with 202 and webhook:std.<source>:<webhook-id>', async () => {
      const id = uniqueId('msg_');
      const res = await send('/webhooks/std/orders', signStandardWebhook(STD_SECRET, id, order), order);
      assert.equal(res.status, 202);
      assert.deepEqual(res.body, { status: 'accepted', workflowId: `webhook:std.orders:${id}` });
    });

    it('answers 401 to a bad signature and starts nothing', async () => {
      const headers = signStandardWebhook(
        'whsec_dGhlLXdyb25nLXNlY3JldC10aGUtd3Jvbmc=',
        uniqueId('msg_'),
        order,
      );
      const res = await send('/webhooks/std/orders', headers, order);
      assert.equal(res.status, 401);
      assert.equal(res.started.length, 0);
    });

    it('answers 400 to a webhook-id unusable as an event id and starts nothing', async () => {
      const res = await send(
        '/webhooks/std/orders',
        signStandardWebhook(STD_SECRET, 'msg 1/2', order),
        order,
      );
      assert.equal(res.status, 400);
      assert.equal(res.started.length, 0);
    });
  });

  describe('disabled providers', () => {
    it('answers 404 for a provider whose secret is unset', async () => {
      const bare = await listen({ SANDBOX_ENABLED: 'false' }, starter);
      try {
        for (const path of [
          '/webhooks/slack',
          '/webhooks/line',
          '/webhooks/github',
          '/webhooks/stripe',
          '/webhooks/std/orders',
        ]) {
          const res = await fetch(`${bare.url}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{}',
          });
          assert.equal(res.status, 404, path);
        }
      } finally {
        bare.server.closeAllConnections();
        bare.server.close();
      }
    });
  });
});
