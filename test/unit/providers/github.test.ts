// The GitHub provider: GitHub's documented signature example, a request signed by
// @octokit/webhooks-methods broken one thing at a time, ping, and the (hook id, delivery) event key.
import assert from 'node:assert/strict';
import { WebhookPayloadError, WebhookVerificationError } from '../../../src/providers/errors';
import { githubProvider, verifyGitHubRequest } from '../../../src/providers/github';
import { chatBusinessKey } from '../../../src/routes';
import { signGitHubDelivery } from '../../support/signers';
import { eventsOf, flipOneByte, requestContext } from './context';

const SECRET = "It's a Secret to Everybody";
const provider = githubProvider(SECRET);
const DELIVERY = { event: 'issues', deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958', hookId: '12345678' };

const issueOpened = JSON.stringify({
  action: 'opened',
  issue: { number: 7, title: 'Where are your opening hours?', body: 'I could not find them.' },
  repository: { id: 1, name: 'replyflow', full_name: 'acme/replyflow', owner: { login: 'acme' } },
  sender: { login: 'octocat' },
});

const webhooksMethods = () => import('@octokit/webhooks-methods');

async function parse(
  body: string,
  delivery: Partial<typeof DELIVERY> = {},
  headers: Record<string, string> = {},
) {
  const signed = await signGitHubDelivery(SECRET, body, { ...DELIVERY, ...delivery });
  return provider.parse(requestContext(body, { ...signed, ...headers }));
}

describe('GitHub provider', () => {
  describe('signature', () => {
    it("matches the example in GitHub's documentation", async () => {
      const expected = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
      const { sign } = await webhooksMethods();
      assert.equal(await sign(SECRET, 'Hello, World!'), expected);
      await verifyGitHubRequest(SECRET, requestContext('Hello, World!', { 'x-hub-signature-256': expected }));
    });

    const valid = async () => ({
      'content-type': 'application/json',
      'x-hub-signature-256': await (await webhooksMethods()).sign(SECRET, issueOpened),
    });

    it('accepts a request signed by @octokit/webhooks-methods, including non-ASCII bodies', async () => {
      await verifyGitHubRequest(SECRET, requestContext(issueOpened, await valid()));
      const accented = JSON.stringify({ action: 'opened', title: 'Öffnungszeiten? 営業時間' });
      const signed = await signGitHubDelivery(SECRET, accented, DELIVERY);
      await verifyGitHubRequest(SECRET, requestContext(accented, signed));
    });

    const broken: [string, () => Promise<ReturnType<typeof requestContext>>][] = [
      ['a changed body byte', async () => requestContext(flipOneByte(issueOpened), await valid())],
      [
        'another secret',
        async () =>
          requestContext(issueOpened, {
            'x-hub-signature-256': await (await webhooksMethods()).sign('another secret', issueOpened),
          }),
      ],
      ['a missing signature header', async () => requestContext(issueOpened, { 'x-github-event': 'issues' })],
      [
        'the SHA-1 signature alone (X-Hub-Signature)',
        async () => requestContext(issueOpened, { 'x-hub-signature': 'sha1=0123456789abcdef' }),
      ],
      [
        'a signature without the sha256= prefix',
        async () => {
          const headers = await valid();
          return requestContext(issueOpened, {
            'x-hub-signature-256': headers['x-hub-signature-256'].slice(7),
          });
        },
      ],
      ['an empty body', async () => requestContext('', await valid())],
    ];
    for (const [name, make] of broken) {
      it(`rejects ${name}`, async () => {
        await assert.rejects(verifyGitHubRequest(SECRET, await make()), WebhookVerificationError);
      });
    }
  });

  describe('normalisation', () => {
    it('answers ping with pong and starts nothing', async () => {
      const ping = JSON.stringify({
        zen: 'Keep it logically awesome.',
        hook_id: 12345678,
        hook: { type: 'Repository', id: 12345678, events: ['issues'] },
      });
      assert.deepEqual(await parse(ping, { event: 'ping' }), {
        kind: 'answer',
        status: 200,
        body: { status: 'pong' },
      });
    });

    it('keys an event on hook id and delivery GUID, and acknowledges an opened issue', async () => {
      const [event] = eventsOf(await parse(issueOpened));
      assert.equal(event!.provider, 'github');
      assert.equal(event!.eventId, '12345678:72d3162e-cc78-11e3-81ab-4c9367dc0958');
      assert.equal(event!.workflowId, 'webhook:github:12345678:72d3162e-cc78-11e3-81ab-4c9367dc0958');
      assert.equal(event!.eventType, 'issues.opened');
      assert.deepEqual(event!.conversation, { id: 'acme/replyflow#7' });
      assert.deepEqual(event!.message, { id: 'issue', text: 'Where are your opening hours?' });
      assert.deepEqual(event!.replyTo, {
        target: 'github',
        kind: 'ack',
        destination: { owner: 'acme', repo: 'replyflow', issueNumber: '7' },
      });
      assert.equal(chatBusinessKey(event!, 'ack'), 'chat:github:acme/replyflow#7:issue:ack');
      assert.equal((event!.payload as { sender: { login: string } }).sender.login, 'octocat');
    });

    it('gives two hooks delivering the same GUID two workflows', async () => {
      const [first] = eventsOf(await parse(issueOpened, { hookId: '1' }));
      const [second] = eventsOf(await parse(issueOpened, { hookId: '2' }));
      assert.notEqual(first!.workflowId, second!.workflowId);
    });

    it('names an event without an action by its event header alone, and asks for no reply', async () => {
      const push = JSON.stringify({ ref: 'refs/heads/main', commits: [] });
      const [event] = eventsOf(await parse(push, { event: 'push' }));
      assert.equal(event!.eventType, 'push');
      assert.equal(event!.replyTo, undefined);
    });

    it('accepts event names with digits (projects_v2_item)', async () => {
      const item = JSON.stringify({ action: 'created', projects_v2_item: { id: 1, node_id: 'PVTI_1' } });
      const [event] = eventsOf(await parse(item, { event: 'projects_v2_item' }));
      assert.equal(event!.eventType, 'projects_v2_item.created');
    });

    it('records other issue actions without asking for a reply', async () => {
      const closed = issueOpened.replace('"opened"', '"closed"');
      const [event] = eventsOf(await parse(closed));
      assert.equal(event!.eventType, 'issues.closed');
      assert.equal(event!.replyTo, undefined);
    });

    it('reads a form-encoded delivery (payload=<json>), signed over the form body', async () => {
      const form = new URLSearchParams({ payload: issueOpened }).toString();
      const headers = {
        ...(await signGitHubDelivery(SECRET, form, DELIVERY)),
        'content-type': 'application/x-www-form-urlencoded',
      };
      const ctx = requestContext(form, headers);
      await verifyGitHubRequest(SECRET, ctx);
      const [event] = eventsOf(await provider.parse(ctx));
      assert.equal(event!.replyTo?.destination.issueNumber, '7');
    });
  });

  describe('malformed requests (400, no echo of the payload)', () => {
    const rejects = async (result: Promise<unknown>, paths: string[]) =>
      assert.rejects(result, (err: unknown) => {
        assert.ok(err instanceof WebhookPayloadError);
        assert.deepEqual(err.issues.map((i) => i.path.join('.')).sort(), paths);
        assert.ok(!JSON.stringify([err.message, err.issues]).includes('opening hours'));
        return true;
      });

    it('rejects a delivery without X-GitHub-Hook-ID', async () => {
      await rejects(parse(issueOpened, {}, { 'x-github-hook-id': '' }), ['headers.x-github-hook-id']);
    });

    it('rejects a delivery without X-GitHub-Delivery', async () => {
      await rejects(parse(issueOpened, {}, { 'x-github-delivery': '' }), ['headers.x-github-delivery']);
    });

    it('rejects a delivery without X-GitHub-Event', async () => {
      await rejects(parse(issueOpened, {}, { 'x-github-event': '' }), ['headers.x-github-event']);
    });

    it('rejects an opened issue without its number and repository', async () => {
      const body = JSON.stringify({ action: 'opened', issue: { title: 'opening hours' } });
      await rejects(parse(body), ['issue.number', 'repository']);
    });

    it('rejects a body that is not JSON', async () => {
      await rejects(parse('opening hours'), ['']);
    });

    it('rejects a body whose shape contradicts X-GitHub-Event (a pull request labelled issues)', async () => {
      const pullRequest = JSON.stringify({
        action: 'opened',
        number: 7,
        pull_request: { title: 'opening hours' },
      });
      await rejects(parse(pullRequest, { event: 'issues' }), ['issue']);
    });

    it('rejects an event name GitHub does not use (upper case, punctuation)', async () => {
      for (const event of ['Issues', 'issues.opened', 'issues opened', '__proto__x'.replace('x', '-')])
        await rejects(parse(issueOpened, { event }), ['headers.x-github-event']);
    });
  });
});
