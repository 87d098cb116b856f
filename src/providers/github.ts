// GitHub webhooks (`/webhooks/github`): the X-Hub-Signature-256 check, the ping handshake, and events
// keyed by (hook id, delivery GUID), because several hooks sending to one receiver share a delivery GUID.
import { z } from 'zod';
import { parseJson, validate } from './parse';
import {
  header,
  headerError,
  type InboundEvent,
  type ProviderResult,
  type RequestContext,
  type WebhookPayloadError,
  type WebhookProvider,
  WebhookVerificationError,
} from './types';

// @octokit/webhooks-methods is published as ES modules only; a dynamic import loads it from CommonJS.
const webhooksMethods = () => import('@octokit/webhooks-methods');

/**
 * Verifies `X-Hub-Signature-256` (`sha256=` + hex HMAC-SHA256 of the raw body) with
 * `@octokit/webhooks-methods`, which compares in constant time. GitHub signs no timestamp: a replayed
 * delivery carries the same delivery GUID and is answered as a duplicate.
 */
export async function verifyGitHubRequest(secret: string, ctx: RequestContext): Promise<void> {
  const signature = header(ctx.headers, 'x-hub-signature-256');
  if (!signature) {
    throw new WebhookVerificationError(
      'missing X-Hub-Signature-256 header (is a secret set on the webhook?)',
    );
  }
  // The library hashes a string as UTF-8. GitHub sends UTF-8, and parse() decodes the same bytes the
  // same way, so what is verified is exactly what is parsed.
  const { verify } = await webhooksMethods();
  if (ctx.rawBody.length === 0 || !(await verify(secret, ctx.rawBody.toString('utf8'), signature))) {
    throw new WebhookVerificationError(
      'X-Hub-Signature-256 does not match the raw body; check GITHUB_WEBHOOK_SECRET',
    );
  }
}

/** The headers GitHub sends with a delivery, signed with `@octokit/webhooks-methods`, for tests. */
export async function signGitHubDelivery(
  secret: string,
  body: string,
  delivery: { event: string; deliveryId: string; hookId: string },
): Promise<Record<string, string>> {
  const { sign } = await webhooksMethods();
  return {
    'content-type': 'application/json',
    'x-github-event': delivery.event,
    'x-github-delivery': delivery.deliveryId,
    'x-github-hook-id': delivery.hookId,
    'x-hub-signature-256': await sign(secret, body),
  };
}

const usableId = /^[\w.:-]{1,200}$/;

function requiredHeader(ctx: RequestContext, name: string, pattern: RegExp): string {
  const value = header(ctx.headers, name);
  if (!value || !pattern.test(value)) throw missing(name);
  return value;
}

function missing(name: string): WebhookPayloadError {
  return headerError(name, `${name} must be present and be 1-200 letters, digits, or . _ : -`);
}

/** GitHub posts either JSON or, by default for new hooks, a form with the JSON in `payload`. */
function bodyOf(ctx: RequestContext): unknown {
  const contentType = header(ctx.headers, 'content-type') ?? '';
  if (!contentType.startsWith('application/x-www-form-urlencoded')) return parseJson(ctx.rawBody);
  const payload = new URLSearchParams(ctx.rawBody.toString('utf8')).get('payload');
  return parseJson(Buffer.from(payload ?? ''));
}

const githubBody = z.looseObject({ action: z.string().min(1).optional() });

const openedIssue = z.object({
  repository: z.looseObject({
    name: z.string().min(1),
    full_name: z.string().min(1),
    owner: z.looseObject({ login: z.string().min(1) }),
  }),
  issue: z.looseObject({ number: z.number().int().positive(), title: z.string() }),
});

function issueOpened(body: unknown): Partial<InboundEvent> {
  const { repository, issue } = validate(openedIssue, body);
  return {
    conversation: { id: `${repository.full_name}#${issue.number}` },
    message: { id: 'issue', text: issue.title },
    replyTo: {
      target: 'github',
      kind: 'ack',
      destination: {
        owner: repository.owner.login,
        repo: repository.name,
        issueNumber: String(issue.number),
      },
    },
  };
}

export function githubProvider(secret: string): WebhookProvider {
  return {
    name: 'github',
    contentTypes: ['application/json', 'application/x-www-form-urlencoded'],
    verify(ctx) {
      return verifyGitHubRequest(secret, ctx);
    },
    parse(ctx): ProviderResult {
      const name = requiredHeader(ctx, 'x-github-event', /^[a-z_]{1,100}$/);
      const body = validate(githubBody, bodyOf(ctx));
      if (name === 'ping') return { kind: 'answer', status: 200, body: { status: 'pong' } };
      const hookId = requiredHeader(ctx, 'x-github-hook-id', usableId);
      const deliveryId = requiredHeader(ctx, 'x-github-delivery', usableId);
      const eventType = body.action ? `${name}.${body.action}` : name;
      const eventId = `${hookId}:${deliveryId}`;
      return {
        kind: 'events',
        events: [
          {
            provider: 'github',
            eventId,
            workflowId: `webhook:github:${eventId}`,
            eventType,
            receivedAt: ctx.receivedAt.toISOString(),
            correlationId: ctx.correlationId,
            ...(eventType === 'issues.opened' ? issueOpened(body) : {}),
            payload: body,
          },
        ],
      };
    },
  };
}
