// At most a few event starts at Temporal at once; the others wait here, in order. Past its capacity a
// server only answers later, and a start answered after its delivery's deadline was work for nothing:
// the sender got a 503 and delivers again, and that redelivery costs three calls (the start, then the
// look at the run it finds). Measured on the dev server at 0.7x its raw start rate, unbounded starts
// turned the first few hundred late ones into tens of thousands of 503s while the worker beside them
// took one task a second (docs/benchmarks.md). Waiting here costs Temporal nothing, and a delivery
// that waited too long for its turn is answered 503 without having sent anything.
import { StartTurnTimeoutError } from './errors';

interface Waiter {
  admit: () => void;
}

export class StartQueue {
  private active = 0;
  private readonly queue: Waiter[] = [];

  /** @param limit starts at Temporal at once (WEBHOOK_START_CONCURRENCY). */
  constructor(private readonly limit: number) {}

  /**
   * Runs `start` once fewer than `limit` others run; rejects with StartTurnTimeoutError, having run
   * nothing, when no place freed within `waitMs`.
   */
  async run<T>(waitMs: number, start: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit || this.queue.length > 0) await this.turn(waitMs);
    else this.active += 1;
    try {
      return await start();
    } finally {
      this.release();
    }
  }

  /** Deliveries waiting for a place. */
  get waiting(): number {
    return this.queue.length;
  }

  private turn(waitMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
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

  /** Hands the place on to the oldest waiter (it counts as active from here), else frees it. */
  private release(): void {
    const next = this.queue.shift();
    if (next) next.admit();
    else this.active -= 1;
  }
}
