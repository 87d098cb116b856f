// Answers a Slack slash command or interaction through its `response_url` (plain fetch, no retries).
// What Slack promises for one (https://api.slack.com/interactivity/handling#message_responses, checked
// Nov 2026): up to 5 uses within 30 minutes of the interaction; no idempotency key; nothing to look a
// message up by. So an outcome we cannot know is held for a person, the project's rule for such targets.

import { TargetError } from './errors';
import { classifyStatus, classifyTransportError } from './http-errors';
import { messageText, type TargetAdapter } from './types';

/** Where Slack's response URLs live (`https://hooks.slack.com/commands/…`, `…/actions/…`, `…/app/…`). */
const SLACK_RESPONSE_URL_PREFIX = 'https://hooks.slack.com/';

/** What Slack answers a response_url that can no longer be used: 30 minutes passed, or 5 uses. */
const SPENT_URL_ERRORS = new Set(['expired_url', 'used_url']);

const SPENT_FIX =
  'the response_url expired (30 minutes) or was used 5 times: Slack accepts no more answers through it; ' +
  'discard the reply, or answer in the channel instead';

interface SlackResponseTargetOptions {
  /**
   * Also accepted besides hooks.slack.com: SLACK_API_URL's origin, so that a fake Slack in tests (or a
   * proxy in front of Slack) takes the answers too.
   */
  apiUrl?: string;
}

export function slackResponseTarget({ apiUrl }: SlackResponseTargetOptions = {}): TargetAdapter {
  const extraOrigin = apiUrl ? new URL(apiUrl).origin : undefined;
  return {
    name: 'slack-response',
    capabilities: { idempotencyKey: false, lookup: false, consistencyDelayMs: 0 },

    async send({ effectId, step, body, signal }) {
      const url = allowedUrl(step.destination.responseUrl, extraOrigin);
      const text = messageText(body);
      const blocks = body.slack?.blocks;
      if (!text && !blocks?.length)
        throw new TargetError('permanent', 'slack-response: nothing to post', {
          fix: 'check the route or responder',
        });
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            ...(text ? { text } : {}),
            ...(blocks?.length ? { blocks } : {}),
            ...(body.slack?.response_type ? { response_type: body.slack.response_type } : {}),
            ...(body.slack?.replace_original !== undefined
              ? { replace_original: body.slack.replace_original }
              : {}),
          }),
          signal,
          // A redirect would take the answer somewhere we did not check.
          redirect: 'error',
        });
      } catch (err) {
        throw prefixed(classifyTransportError(err, signal));
      }
      const answer = await response.text().catch(() => '');
      if (!response.ok) throw classifyResponseStatus(response, answer);
      const error = slackError(answer);
      if (error) throw spentOrRejected(error);
      return { externalId: `response-for-${effectId}` };
    },
  };
}

/**
 * The response_url, if it is one of Slack's: the URL came in a signed payload, but the request goes
 * out from inside the network and carries the bot's answer, so it may only go where Slack's answers go.
 */
function allowedUrl(value: string | undefined, extraOrigin: string | undefined): string {
  let url: URL | undefined;
  try {
    url = value ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  const allowed =
    url !== undefined &&
    (url.href.startsWith(SLACK_RESPONSE_URL_PREFIX) ||
      (extraOrigin !== undefined && url.origin === extraOrigin));
  if (!allowed)
    throw new TargetError(
      'permanent',
      "slack-response: the destination's responseUrl is not a Slack response URL",
      {
        fix: `a response_url starts with ${SLACK_RESPONSE_URL_PREFIX}; check the route destination (or SLACK_API_URL for a fake)`,
      },
    );
  return url!.href;
}

/** Slack answers `ok`, `{"ok":true}`, or `{"ok":false,"error":"…"}` (sometimes with a 2xx). */
function slackError(answer: string): string | undefined {
  try {
    const parsed = JSON.parse(answer) as { ok?: unknown; error?: unknown };
    if (parsed?.ok === false) return typeof parsed.error === 'string' ? parsed.error : 'unknown_error';
  } catch {
    // Plain text: `ok`, or an error code on its own.
  }
  const word = answer.trim();
  return /^[a-z_]{1,60}$/.test(word) && word !== 'ok' ? word : undefined;
}

function spentOrRejected(error: string): TargetError {
  if (SPENT_URL_ERRORS.has(error))
    return new TargetError('permanent', `slack-response: ${error}`, { fix: SPENT_FIX });
  return new TargetError('permanent', `slack-response: ${error.slice(0, 60)}`, {
    fix: 'Slack refused the answer: check the message the responder wrote (text, blocks)',
  });
}

function classifyResponseStatus(response: Response, answer: string): TargetError {
  const error = slackError(answer);
  if (error && SPENT_URL_ERRORS.has(error)) return spentOrRejected(error);
  if (response.status === 404 || response.status === 410)
    return new TargetError('permanent', `slack-response: the response_url is gone (${response.status})`, {
      fix: SPENT_FIX,
    });
  if (response.status >= 400 && response.status < 500 && response.status !== 429 && error)
    return spentOrRejected(error);
  return prefixed(classifyStatus(response.status, response.headers, 'slack-response'));
}

function prefixed(err: TargetError): TargetError {
  if (err.message.startsWith('slack-response')) return err;
  return new TargetError(err.errorClass, `slack-response: ${err.message}`, err.details);
}
