// At most a few event starts at Temporal at once; the others wait here. Past its capacity a server
// only answers later, and a start answered after its delivery's deadline was work for nothing: the
// sender got a 503 and delivers again, and that redelivery costs three calls (the start, then the
// look at the run it finds). Measured on the dev server at 0.7x its raw start rate, unbounded starts
// turned the first few hundred late ones into tens of thousands of 503s while the worker beside them
// took one task a second (docs/benchmarks.md). Waiting here costs Temporal nothing, and a delivery
// that waited too long for its turn is answered 503 without having sent anything.
//
// A freed place goes to the waiter whose conversation (fairness key) holds the fewest places, the
// oldest of those: a burst into one conversation that fills every place does not queue another
// conversation's event behind the whole burst, only behind the next start to finish. Among
// conversations holding as many (a backlog over many), the order is the order they came.
import { StartTurnTimeoutError } from './errors';

interface Waiter {
  key: string;
  admit: () => void;
}

export class StartQueue {
  private active = 0;
  /** Places held, by fairness key (keys holding none are not kept). */
  private readonly held = new Map<string, number>();
  private readonly queue: Waiter[] = [];

  /** @param limit starts at Temporal at once (WEBHOOK_START_CONCURRENCY). */
  constructor(private readonly limit: number) {}

  /**
   * Runs `start` once fewer than `limit` others run; rejects with StartTurnTimeoutError, having run
   * nothing, when no place freed within `waitMs`. `key` is the event's fairness key (one for all by default).
   */
  async run<T>(waitMs: number, start: () => Promise<T>, key = ''): Promise<T> {
    if (this.active >= this.limit || this.queue.length > 0) await this.turn(waitMs, key);
    else this.take(key);
    try {
      return await start();
    } finally {
      this.release(key);
    }
  }

  /** Deliveries waiting for a place. */
  get waiting(): number {
    return this.queue.length;
  }

  private turn(waitMs: number, key: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        key,
        admit: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.queue.splice(this.queue.indexOf(waiter), 1);
        reject(new StartTurnTimeoutError(waitMs));
      }, waitMs);
      this.queue.push(waiter);
    });
  }

  private take(key: string): void {
    this.active += 1;
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
  }

  /** Frees `key`'s place and hands one on to the next waiter (it counts as active from here). */
  private release(key: string): void {
    const left = (this.held.get(key) ?? 1) - 1;
    if (left > 0) this.held.set(key, left);
    else this.held.delete(key);
    this.active -= 1;
    const at = this.nextWaiter();
    if (at < 0) return;
    const [next] = this.queue.splice(at, 1);
    this.take(next!.key);
    next!.admit();
  }

  /** The waiter whose key holds the fewest places, the oldest of those; -1 when none waits. */
  private nextWaiter(): number {
    let best = -1;
    let fewest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.queue.length && fewest > 0; i++) {
      const holds = this.held.get(this.queue[i]!.key) ?? 0;
      if (holds < fewest) {
        best = i;
        fewest = holds;
      }
    }
    return best;
  }
}
