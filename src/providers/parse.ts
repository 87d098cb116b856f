// Shared body handling for providers: JSON parsing and zod validation that fail as 400s carrying
// zod-shaped issues and never the payload itself.
import type { z } from 'zod';
import { WebhookPayloadError } from './types';

export function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new WebhookPayloadError('body is not valid JSON', [
      { code: 'invalid_json', path: [], message: 'body is not valid JSON' },
    ]);
  }
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

/** Seconds or milliseconds since the epoch → ISO 8601. */
export function epochToIso(value: number, unit: 's' | 'ms'): string {
  return new Date(unit === 's' ? value * 1000 : value).toISOString();
}
