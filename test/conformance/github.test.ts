// GitHub conformance: every example payload of GitHub's public corpus (npm @octokit/webhooks-examples,
// pinned), signed as GitHub signs it, through the real receiver on the dev server: each answered 2xx.
// Bodies relabelled as an event whose object they lack are refused, so the shape check does not
// pass everything.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import examples from '@octokit/webhooks-examples';
import { signGitHubDelivery } from '../support/signers';
import {
  type Answer,
  assertAll2xx,
  conformanceReceiver,
  type Delivery,
  report,
  SECRETS,
  sendAll,
} from './harness';

const HOOK_ID = '424242';

async function delivery(event: string, payload: unknown): Promise<Delivery> {
  const body = JSON.stringify(payload);
  const deliveryId = randomUUID();
  return {
    name: event,
    path: '/webhooks/github',
    headers: await signGitHubDelivery(SECRETS.github, body, { event, deliveryId, hookId: HOOK_ID }),
    body,
  };
}

describe('conformance: GitHub (@octokit/webhooks-examples through the receiver)', function () {
  this.timeout(300_000);
  const { receiver } = conformanceReceiver();

  it('answers every example payload 2xx: ping with pong, every other event with a workflow', async () => {
    const deliveries = await Promise.all(
      examples.flatMap((definition) =>
        definition.examples.map((example) => delivery(definition.name, example)),
      ),
    );
    assert.ok(deliveries.length >= 329, `the corpus has ${deliveries.length} examples`);
    const answers = await sendAll(receiver(), deliveries);
    report('GitHub', answers);
    assertAll2xx(answers);
    const started = (a: Answer) =>
      a.status === 202 && a.body.workflowId?.startsWith(`webhook:github:${HOOK_ID}:`);
    // The corpus repeats a few examples byte for byte: the repeat, under a new delivery id, is
    // acknowledged as a replayed body and starts nothing.
    const seen = new Set<string>();
    const repeats = deliveries.filter((d) => seen.size === seen.add(d.body).size);
    assert.deepEqual(
      answers
        .filter((a) => a.delivery.name !== 'ping' && !started(a))
        .map((a) => `${a.delivery.name}: ${a.status} ${a.body.reason}`),
      repeats.map((d) => `${d.name}: 200 replayed_body`),
      'every event other than ping starts its workflow, once per distinct body',
    );
    const projectItems = answers.filter((a) => a.delivery.name === 'projects_v2_item');
    assert.ok(
      projectItems.length > 0 && projectItems.every(started),
      'projects_v2_item (a name with a digit) is accepted',
    );
  });

  it('refuses an example relabelled as an event whose object its body lacks (400, nothing started)', async () => {
    const issues = examples.find((d) => d.name === 'issues')!.examples;
    const pullRequests = examples.find((d) => d.name === 'pull_request')!.examples;
    const deliveries = await Promise.all([
      ...pullRequests.map((example) => delivery('issues', example)),
      ...issues.map((example) => delivery('pull_request', example)),
    ]);
    const answers = await sendAll(receiver(), deliveries);
    assert.deepEqual(
      answers.filter((a) => a.status !== 400).map((a) => `${a.delivery.name}: ${a.status}`),
      [],
    );
  });
});
