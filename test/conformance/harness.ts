// What the conformance suites share: one real receiver with every provider enabled, on the dev
// server and PostgreSQL, that each suite sends the providers' own material to, signed as each
// provider signs; and a tally of the answers, so a suite reports how many deliveries of how many
// event types it sent and what came back.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Config } from '../../src/config';
import type { ReceiverHandle } from '../../src/receiver';
import { counterValue, metricsOf, startTestReceiver } from '../support/receiver';
import { devServer } from '../support/servers';
import { testConfig } from '../support/system';

export const SECRETS = {
  slack: randomBytes(16).toString('hex'),
  line: randomBytes(16).toString('hex'),
  github: randomBytes(16).toString('hex'),
  stripe: `whsec_${randomBytes(24).toString('base64')}`,
  standard: `whsec_${randomBytes(24).toString('base64')}`,
};
export const STD_SOURCE = 'vendor';

export interface Delivery {
  /** What the suite calls it in its report, e.g. the event type. */
  name: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface Answer {
  delivery: Delivery;
  status: number;
  body: { status?: string; workflowId?: string; workflows?: unknown[]; reason?: string };
}

/**
 * Registers hooks that start a receiver before the suite and stop it after; `receiver()` is valid in
 * the suite's tests. No worker serves the task queue: the providers' deliveries only need to be made
 * durable (202) or acknowledged, which is what a sender sees.
 */
export function conformanceReceiver(): { receiver: () => ReceiverHandle; config: Config } {
  const config = testConfig({
    SLACK_SIGNING_SECRET: SECRETS.slack,
    LINE_CHANNEL_SECRET: SECRETS.line,
    GITHUB_WEBHOOK_SECRET: SECRETS.github,
    STRIPE_WEBHOOK_SECRET: SECRETS.stripe,
    STANDARD_WEBHOOKS_SECRETS: `${STD_SOURCE}=${SECRETS.standard}`,
    // The corpora's largest payloads are well under this; some Stripe objects are large.
    WEBHOOK_BODY_LIMIT: String(4 * 1024 * 1024),
  });
  let handle: ReceiverHandle | undefined;
  before(async function () {
    this.timeout(120_000);
    handle = await startTestReceiver({ config, temporalAddress: (await devServer()).address });
  });
  after(async () => {
    await handle?.stop();
  });
  return {
    config,
    receiver: () => {
      assert.ok(handle, 'the receiver starts in before()');
      return handle;
    },
  };
}

/** Sends every delivery, a few at a time (the dev server shares two cores), and returns the answers in order. */
export async function sendAll(
  receiver: ReceiverHandle,
  deliveries: Delivery[],
  concurrency = 6,
): Promise<Answer[]> {
  const answers: Answer[] = new Array(deliveries.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < deliveries.length; i = next++) {
      const delivery = deliveries[i]!;
      const response = await fetch(`${receiver.url}${delivery.path}`, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
      });
      // Slack's commands and interactivity are acknowledged with an empty 200.
      const text = await response.text();
      answers[i] = {
        delivery,
        status: response.status,
        body: (text ? JSON.parse(text) : {}) as Answer['body'],
      };
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return answers;
}

/** Fails with every delivery that did not get a 2xx, naming it and its answer. */
export function assertAll2xx(answers: Answer[]): void {
  const refused = answers.filter((a) => a.status < 200 || a.status > 299);
  assert.deepEqual(
    refused.map((a) => `${a.delivery.name}: ${a.status} ${JSON.stringify(a.body)}`),
    [],
    `${refused.length} of ${answers.length} deliveries were refused`,
  );
}

/** Prints one line per suite for the closing note: deliveries, event types and what came back. */
export function report(provider: string, answers: Answer[]): void {
  const types = new Set(answers.map((a) => a.delivery.name));
  const byStatus = new Map<number, number>();
  for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
  const statuses = [...byStatus].map(([status, n]) => `${n}×${status}`).join(', ');
  console.log(`      ${provider}: ${answers.length} deliveries, ${types.size} event types: ${statuses}`);
}

/** The receiver's count of requests of `provider` that ended with `outcome` (accepted, duplicate, …). */
export async function requestCount(
  receiver: ReceiverHandle,
  provider: string,
  outcome: string,
): Promise<number> {
  return counterValue(await metricsOf(receiver), 'replyflow_webhook_requests_total', { provider, outcome });
}

/** How far an ignored-deliveries counter moved between two scrapes. */
export async function ignoredCount(
  receiver: ReceiverHandle,
  provider: string,
  reason: string,
): Promise<number> {
  return counterValue(await metricsOf(receiver), 'replyflow_webhook_ignored_total', { provider, reason });
}
