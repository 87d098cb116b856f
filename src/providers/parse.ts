// Shared body handling for providers: JSON parsing and zod validation that fail as 400s carrying
// zod-shaped issues and never the payload itself, and the bounds every provider's numbers must keep.
import { z } from 'zod';
import { WebhookPayloadError } from './errors';

/**
 * Deepest nesting accepted in a body. Real deliveries stay far below it (GitHub's example corpus
 * reaches 7); a body nested thousands deep cannot be encoded as a Temporal payload, and a workflow
 * that had to decode one would fail on every attempt.
 */
export const MAX_JSON_DEPTH = 64;

/** 9999-12-31T23:59:59Z: the last instant an ISO 8601 date with a four-digit year can name. */
const LAST_SECOND = 253_402_300_799;

/** A provider's timestamp in seconds since the epoch, bounded so that it is a real date (400 otherwise). */
export const epochSeconds = z.number().int().nonnegative().max(LAST_SECOND);

/** A provider's timestamp in milliseconds since the epoch, bounded like epochSeconds. */
export const epochMillis = z
  .number()
  .int()
  .nonnegative()
  .max(LAST_SECOND * 1000 + 999);

export function parseJson(raw: Buffer): unknown {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new WebhookPayloadError('body is not valid JSON', [
      { code: 'invalid_json', path: [], message: 'body is not valid JSON' },
    ]);
  }
  if (depthOf(value) > MAX_JSON_DEPTH) {
    const message = `body is nested deeper than ${MAX_JSON_DEPTH} levels`;
    throw new WebhookPayloadError(message, [{ code: 'too_deep', path: [], message }]);
  }
  return value;
}

/** How deeply objects and arrays nest in a parsed JSON value; iterative, so depth cannot overflow the stack. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (node === null || typeof node !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > MAX_JSON_DEPTH) return deepest;
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return deepest;
}

export function validate<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new WebhookPayloadError(
      'body does not have the required fields',
      result.error.issues.map((i) => ({
        code: i.code,
        path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
        message: i.message,
      })),
    );
  }
  return result.data;
}

/** Seconds or milliseconds since the epoch (bounded by epochSeconds / epochMillis) → ISO 8601. */
export function epochToIso(value: number, unit: 's' | 'ms'): string {
  return new Date(unit === 's' ? value * 1000 : value).toISOString();
}
