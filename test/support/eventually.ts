// The one way tests wait: ask the system again (a query, a row, a scrape, what a fake received) until
// the answer holds. Each call is an observation, never a sleep standing in for one.

interface EventuallyOptions<T> {
  /** When the observation is the one waited for. @default not undefined, null or false */
  until?: (value: T) => boolean;
  /** @default 30_000 */
  timeoutMs?: number;
  /** Pause between observations. @default 50 */
  intervalMs?: number;
  /** Checked before each observation: a reason to stop at once (a process that died). */
  abortIf?: () => string | undefined;
  /** Describes the last observation in the timeout's message. */
  describe?: (last: T) => string;
}

const present = (value: unknown) => value !== undefined && value !== null && value !== false;

/**
 * Observes until the observation holds, and returns it. An observation that throws counts as "not
 * yet" (a query before the worker answers); the timeout names `what` and what was seen last.
 */
export async function eventually<T>(
  what: string,
  observe: () => Promise<T> | T,
  options: EventuallyOptions<T> = {},
): Promise<Exclude<T, undefined | null | false>> {
  const { until = present, timeoutMs = 30_000, intervalMs = 50 } = options;
  const deadline = Date.now() + timeoutMs;
  let seen = 'nothing';
  for (;;) {
    const abort = options.abortIf?.();
    if (abort) throw new Error(`${abort} (while waiting until ${what})`);
    try {
      const value = await observe();
      if (until(value)) return value as Exclude<T, undefined | null | false>;
      seen = options.describe ? options.describe(value) : 'not yet';
    } catch (err) {
      seen = `an error: ${(err as Error).message}`;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}; last seen: ${seen}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
