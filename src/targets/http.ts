// A generic HTTP target for order, warehouse and CRM style APIs, one per endpoint named in the route
// file (`http:<name>`): a JSON request with an idempotency key (the IETF draft's `Idempotency-Key`
// by default) and, optionally, a lookup URL that finds an effect by our reference.
import type { StepPlan } from '../model';
import { TargetError } from './errors';
import { classifyStatus, classifyTransportError } from './http-errors';
import type { TargetAdapter } from './types';

export interface HttpEndpoint {
  /** URL template: `{effectId}` and the step's destination values (URL-encoded) fill the braces. */
  url: string;
  method: 'POST' | 'PUT' | 'PATCH';
  /** Extra headers (e.g. Authorization), already resolved from the environment. Never logged. */
  headers: Record<string, string>;
  idempotency: {
    header: string;
    /** `quoted`: the IETF draft's structured-field string (`"<key>"`); `plain`: the bare key. */
    format: 'quoted' | 'plain';
    /** Whether the API de-duplicates on the key (a resend with the same key is then safe). */
    honoured: boolean;
  };
  /** The field of the JSON answer that holds the target's id for what we created. */
  idField: string;
  /** A GET that answers 200 (an object, or a non-empty list) when our effect exists, 404 or `[]` when not. */
  lookup?: { url: string; idField: string };
  consistencyDelayMs: number;
}

/** The name under which an endpoint's target registers. */
function httpTargetName(endpoint: string): string {
  return `http:${endpoint}`;
}

export function httpTarget(name: string, endpoint: HttpEndpoint): TargetAdapter {
  const what = httpTargetName(name);
  const keyValue = (effectId: string) =>
    endpoint.idempotency.format === 'quoted' ? `"${effectId}"` : effectId;

  const adapter: TargetAdapter = {
    name: what,
    capabilities: {
      idempotencyKey: endpoint.idempotency.honoured,
      lookup: endpoint.lookup !== undefined,
      consistencyDelayMs: endpoint.consistencyDelayMs,
    },

    async send({ effectId, step, body, signal }) {
      const url = fillUrl(endpoint.url, effectId, step, what);
      let response: Response;
      try {
        response = await fetch(url, {
          method: endpoint.method,
          headers: {
            'content-type': 'application/json',
            ...endpoint.headers,
            [endpoint.idempotency.header]: keyValue(effectId),
          },
          body: JSON.stringify(body.json ?? { text: body.text }),
          signal,
        });
      } catch (err) {
        throw prefixed(classifyTransportError(err, signal), what);
      }
      if (!response.ok) throw classifyHttpStatus(response, endpoint, what);
      // A 2xx proves the effect happened even if the answer cannot be read to the end.
      const answer = await response.json().catch(() => undefined);
      return { externalId: idOf(answer, endpoint.idField) ?? response.headers.get('location') ?? effectId };
    },
  };

  const { lookup } = endpoint;
  if (lookup) {
    adapter.lookup = async ({ effectId, step, signal }) => {
      const url = fillUrl(lookup.url, effectId, step, what);
      let response: Response;
      try {
        response = await fetch(url, { headers: { accept: 'application/json', ...endpoint.headers }, signal });
      } catch (err) {
        throw prefixed(classifyTransportError(err, signal), `${what} lookup`);
      }
      if (response.status === 404) return { found: false };
      if (!response.ok) throw classifyStatus(response.status, response.headers, `${what} lookup`);
      const answer = (await response.json()) as unknown;
      const item = Array.isArray(answer) ? answer[0] : answer;
      if (item === undefined || item === null) return { found: false };
      return { found: true, externalId: idOf(item, lookup.idField) ?? effectId };
    };
  }
  return adapter;
}

/**
 * Fills `{effectId}` and `{<destination key>}` in a URL template, URL-encoding each value. Values come
 * from webhooks, so they may not steer the request elsewhere: a placeholder before the path (scheme,
 * host, port) is refused, and so is a value of `.` or `..`, which a URL resolves as a path step
 * (`/api/orders/../confirm` is `/api/confirm`) that encoding leaves as it is, or an empty one (`//`).
 */
export function fillUrl(template: string, effectId: string, step: StepPlan, what: string): string {
  const authorityEnd = template.search(/(?<=^[a-z][a-z0-9+.-]*:\/\/[^/?#]*)[/?#]|$/i);
  if (template.slice(0, authorityEnd).includes('{'))
    throw new TargetError('permanent', `${what}: the URL's scheme and host may not hold placeholders`, {
      fix: 'write the scheme and host of the endpoint URL out in the route file; placeholders belong in its path or query',
    });
  return template.replace(/\{([^{}]+)\}/g, (_, name: string) => {
    const value = name === 'effectId' ? effectId : destinationValue(step, name);
    if (value === undefined)
      throw new TargetError(
        'permanent',
        `${what}: the URL needs {${name}}, which the step's destination lacks`,
        {
          fix: `add ${name} to the step's destination in the route file`,
        },
      );
    // An empty value turns `/orders/{id}/confirm` into `/orders//confirm`, which many servers and
    // proxies collapse to `/orders/confirm`: another resource. A real id is never empty.
    if (value === '')
      throw new TargetError('permanent', `${what}: {${name}} is empty (it would change the path)`, {
        fix: `check where the route takes ${name} from: the event gave an empty value, not an id`,
      });
    if (value === '.' || value === '..')
      throw new TargetError(
        'permanent',
        `${what}: {${name}} may not be "." or ".." (it would change the path)`,
        {
          fix: `check where the route takes ${name} from: the event gave a path step, not an id`,
        },
      );
    return encodeURIComponent(value);
  });
}

/** The step's destination value for a placeholder: its own keys only (never `constructor` and the like). */
function destinationValue(step: StepPlan, name: string): string | undefined {
  return Object.hasOwn(step.destination, name) ? step.destination[name] : undefined;
}

function idOf(answer: unknown, field: string): string | undefined {
  const id = (answer as Record<string, unknown> | undefined)?.[field];
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

/**
 * The IETF idempotency-key draft (draft-ietf-httpapi-idempotency-key-header): 409 = a request with
 * this key is still being processed (retry later); 422 = this key was used with another payload.
 */
export function classifyHttpStatus(response: Response, endpoint: HttpEndpoint, what: string): TargetError {
  const { status, headers } = response;
  if (endpoint.idempotency.honoured && status === 409)
    return new TargetError(
      'retryable',
      `${what}: an earlier request with this key is still in progress (409)`,
      {
        // The first request may have been applied: never "not sent", but the key makes the retry safe.
        retryAfterMs: classifyStatus(status, headers, what).details.retryAfterMs,
      },
    );
  if (endpoint.idempotency.honoured && status === 422)
    return new TargetError('permanent', `${what}: idempotency key reused with a different payload (422)`, {
      fix: 'the payload of this operation changed since its first attempt: a different operation needs its own operation id; do not reprocess until the route is checked',
    });
  return classifyStatus(status, headers, what);
}

function prefixed(err: TargetError, what: string): TargetError {
  return new TargetError(err.errorClass, `${what}: ${err.message}`, err.details);
}
