// Counting attempts per key (a source address, an operator) in fixed windows, in this process's
// memory: enough to turn a guessing loop into a trickle on each receiver without a round trip to
// PostgreSQL per request. N receivers allow N times the limit, which is still a trickle.

interface AttemptLimit {
  /** Attempts allowed per key within one window. */
  attempts: number;
  windowMs: number;
}

interface Window {
  count: number;
  endsAt: number;
}

export class AttemptCounter {
  private readonly windows = new Map<string, Window>();

  /**
   * @param maxKeys how many keys are remembered at once; past it the oldest windows are forgotten,
   *   so a flood of new addresses costs bounded memory. @default 10_000
   */
  constructor(
    readonly limit: AttemptLimit,
    private readonly maxKeys = 10_000,
  ) {}

  /** Whole seconds until `key` may try again, or 0 when it may try now. */
  retryAfterSeconds(key: string, now = Date.now()): number {
    const window = this.windows.get(key);
    if (!window || window.endsAt <= now || window.count < this.limit.attempts) return 0;
    return Math.max(1, Math.ceil((window.endsAt - now) / 1000));
  }

  /** Counts one attempt by `key`. */
  record(key: string, now = Date.now()): void {
    const window = this.windows.get(key);
    if (window && window.endsAt > now) {
      window.count += 1;
      return;
    }
    this.windows.delete(key);
    if (this.windows.size >= this.maxKeys) this.forgetOldest(now);
    this.windows.set(key, { count: 1, endsAt: now + this.limit.windowMs });
  }

  private forgetOldest(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
    // Maps iterate in insertion order: the first keys are the oldest windows.
    for (const key of this.windows.keys()) {
      if (this.windows.size < this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}
