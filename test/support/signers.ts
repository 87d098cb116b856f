// Requests signed the way each sender signs them, for tests, benchmarks and scripts: a valid delivery to
// break one thing in. Kept out of src/providers/ (the verifiers), which ship; each signs by the sender's
// documented scheme or library, not by the verifier's own code. Standard Webhooks' signer stays in
// src/providers/standard-webhooks.ts: the sandbox signs its messages with it.
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';

/** The headers GitHub sends with a delivery, signed with `@octokit/webhooks-methods`. */
export async function signGitHubDelivery(
  secret: string,
  body: string,
  delivery: { event: string; deliveryId: string; hookId: string },
): Promise<Record<string, string>> {
  const { sign } = await import('@octokit/webhooks-methods');
  return {
    'content-type': 'application/json',
    'x-github-event': delivery.event,
    'x-github-delivery': delivery.deliveryId,
    'x-github-hook-id': delivery.hookId,
    'x-hub-signature-256': await sign(secret, body),
  };
}

/** Signs a body the way LINE does: base64 HMAC-SHA256 of the body with the channel secret. */
export function signLineRequest(channelSecret: string, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-line-signature': createHmac('sha256', channelSecret).update(body).digest('base64'),
  };
}

/**
 * Signs a body the way Slack does (v0: hex HMAC-SHA256 of `v0:{timestamp}:{body}`): Events API
 * envelopes are JSON, commands and interactivity `application/x-www-form-urlencoded`.
 */
export function signSlackRequest(
  secret: string,
  body: string,
  at = new Date(),
  contentType = 'application/json',
): Record<string, string> {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  return {
    'content-type': contentType,
    'x-slack-request-timestamp': timestamp,
    'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`,
  };
}

/** Signs a body the way Stripe does, with the `stripe` package's own test helper. */
export function signStripeEvent(secret: string, body: string, at = new Date()): Record<string, string> {
  return {
    'content-type': 'application/json; charset=utf-8',
    'stripe-signature': Stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret,
      timestamp: Math.floor(at.getTime() / 1000),
    }),
  };
}
