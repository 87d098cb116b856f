// GitHub webhooks (`/webhooks/github`): the X-Hub-Signature-256 check, the ping handshake, and events
// keyed by (hook id, delivery GUID), because several hooks sending to one receiver share a delivery GUID.
// GitHub signs only the body, so a replay guard refuses the same signed bytes under a new delivery id,
// and the unsigned X-GitHub-Event header is checked against the body's shape where the event has one.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { tenantOf } from '../tenants/tenant-id';
import { WebhookPayloadError, WebhookVerificationError } from './errors';
import { parseJson, validate } from './parse';
import {
  header,
  headerError,
  type InboundEvent,
  type ProviderResult,
  type RequestContext,
  type WebhookProvider,
} from './types';

const usableId = /^[\w.:-]{1,200}$/;

// @octokit/webhooks-methods is published as ES modules only; a dynamic import loads it from CommonJS.
const webhooksMethods = () => import('@octokit/webhooks-methods');

/** How long a signed body is remembered: past GitHub's 3-day manual redelivery window. */
export const GITHUB_REPLAY_WINDOW_DAYS = 7;

/**
 * Remembers the signed bodies of recent deliveries. GitHub's signature covers the body alone, not the
 * delivery id: anyone who saw one delivery could re-send its bytes under a fresh X-GitHub-Delivery, and
 * it would start a new workflow. GitHub's own redelivery keeps the delivery id, so it still passes.
 */
export interface SignedBodyLedger {
  /**
   * Records that the body with this SHA-256 arrived as `deliveryId`.
   * @returns false when the same body arrived under another delivery id within the replay window.
   */
  admit(bodySha256: Buffer, deliveryId: string): Promise<boolean>;
}

/**
 * Verifies `X-Hub-Signature-256` (`sha256=` + hex HMAC-SHA256 of the raw body) with
 * `@octokit/webhooks-methods`, which compares in constant time. GitHub signs no timestamp: replays
 * are caught by the delivery id (a duplicate) and the SignedBodyLedger (the same bytes, a new id).
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

/**
 * The object a body of each event carries, taken from @octokit/webhooks-examples (every example of
 * the event has it; test/conformance/github.test.ts keeps this table honest). X-GitHub-Event is not
 * signed: a body whose shape contradicts its header is refused. Events not listed are not checked.
 */
const EVENT_SUBJECT: ReadonlyMap<string, string> = new Map([
  ['branch_protection_rule', 'rule'],
  ['check_run', 'check_run'],
  ['check_suite', 'check_suite'],
  ['code_scanning_alert', 'alert'],
  ['commit_comment', 'comment'],
  ['dependabot_alert', 'alert'],
  ['deploy_key', 'key'],
  ['deployment', 'deployment'],
  ['deployment_status', 'deployment_status'],
  ['discussion', 'discussion'],
  ['discussion_comment', 'comment'],
  ['fork', 'forkee'],
  ['gollum', 'pages'],
  ['issue_comment', 'comment'],
  ['issues', 'issue'],
  ['label', 'label'],
  ['marketplace_purchase', 'marketplace_purchase'],
  ['member', 'member'],
  ['membership', 'team'],
  ['merge_group', 'merge_group'],
  ['meta', 'hook'],
  ['milestone', 'milestone'],
  ['org_block', 'blocked_user'],
  ['package', 'package'],
  ['page_build', 'build'],
  ['ping', 'hook'],
  ['project', 'project'],
  ['project_card', 'project_card'],
  ['project_column', 'project_column'],
  ['projects_v2_item', 'projects_v2_item'],
  ['pull_request', 'pull_request'],
  ['pull_request_review', 'review'],
  ['pull_request_review_comment', 'comment'],
  ['pull_request_review_thread', 'thread'],
  ['push', 'commits'],
  ['release', 'release'],
  ['repository_vulnerability_alert', 'alert'],
  ['security_advisory', 'security_advisory'],
  ['sponsorship', 'sponsorship'],
  ['team', 'team'],
  ['team_add', 'team'],
  ['workflow_job', 'workflow_job'],
  ['workflow_run', 'workflow_run'],
]);

function checkShape(name: string, body: Record<string, unknown>): void {
  const subject = EVENT_SUBJECT.get(name);
  const value = subject === undefined ? undefined : body[subject];
  if (subject === undefined || (typeof value === 'object' && value !== null)) return;
  const message = `a ${name} event carries a ${subject} object; the body does not match X-GitHub-Event`;
  throw new WebhookPayloadError(message, [{ code: 'event_mismatch', path: [subject], message }]);
}

const openedIssue = z.object({
  repository: z.looseObject({
    name: z.string().min(1),
    full_name: z.string().min(1),
    owner: z.looseObject({ login: z.string().min(1) }),
  }),
  issue: z.looseObject({ number: z.number().int().positive(), title: z.string() }),
});

/** A GitHub App's webhook names the installation it is for: whose installation token answers. */
const installation = z.looseObject({ installation: z.looseObject({ id: z.number().int().positive() }) });

function installationTenant(body: unknown): string | undefined {
  const parsed = installation.safeParse(body);
  return parsed.success ? tenantOf('github', String(parsed.data.installation.id)) : undefined;
}

function issueOpened(body: unknown, tenant: string | undefined): Partial<InboundEvent> {
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
        ...(tenant ? { tenant } : {}),
      },
    },
  };
}

/** Event names are lower-case words joined by `_`, digits included (`projects_v2_item`). */
const eventName = /^[a-z0-9_]{1,100}$/;

/**
 * @param ledger where signed bodies are remembered; without one (unit tests) replays are not looked for.
 */
export function githubProvider(secret: string, ledger?: SignedBodyLedger): WebhookProvider {
  return {
    name: 'github',
    contentTypes: ['application/json', 'application/x-www-form-urlencoded'],
    verify(ctx) {
      return verifyGitHubRequest(secret, ctx);
    },
    async parse(ctx): Promise<ProviderResult> {
      const name = requiredHeader(ctx, 'x-github-event', eventName);
      const body = validate(githubBody, bodyOf(ctx));
      checkShape(name, body);
      if (name === 'ping') return { kind: 'answer', status: 200, body: { status: 'pong' } };
      const hookId = requiredHeader(ctx, 'x-github-hook-id', usableId);
      const deliveryId = requiredHeader(ctx, 'x-github-delivery', usableId);
      // The same signed bytes under another delivery id start nothing. They are acknowledged, not
      // refused: GitHub itself could send two byte-identical bodies (an unstar, then another), and a
      // refusal there would fail a real delivery for content already handled.
      const sha256 = createHash('sha256').update(ctx.rawBody).digest();
      if (ledger && !(await ledger.admit(sha256, deliveryId)))
        return { kind: 'ignored', reason: 'replayed_body' };
      const eventType = body.action ? `${name}.${body.action}` : name;
      const eventId = `${hookId}:${deliveryId}`;
      const tenant = installationTenant(body);
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
            ...(tenant ? { tenant } : {}),
            ...(eventType === 'issues.opened' ? issueOpened(body, tenant) : {}),
            payload: body,
          },
        ],
      };
    },
  };
}
