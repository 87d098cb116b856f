// Calls to Temporal that must settle within a deadline (the receiver answers senders that wait only
// 2-3 s), on a connection that is closed only after every call it ever started has settled.
import type { Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { TemporalDeadlineError } from './errors';

export class DeadlineCalls {
  /** Calls given up on at their deadline whose gRPC retries may still be running. */
  private readonly pending = new Set<Promise<unknown>>();

  /**
   * @param owned whether closing these calls closes the connection: not when it is the worker's, lent
   * to a receiver in the same process (the worker closes it once it stopped).
   */
  constructor(
    readonly connection: Connection | NativeConnection,
    private readonly owned = true,
  ) {}

  /**
   * Runs `call`, rejecting with TemporalDeadlineError at the deadline itself. The gRPC deadline alone
   * is not enough: the client's retry interceptor sleeps between attempts and sees the deadline only
   * after the sleep, which overshot 1500 ms by up to half a second while the server was down.
   */
  async run<T>(deadlineMs: number, call: () => Promise<T>): Promise<T> {
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new TemporalDeadlineError(deadlineMs));
      }, deadlineMs);
    });
    const attempt = this.connection.withAbortSignal(abort.signal, () =>
      this.connection.withDeadline(Date.now() + deadlineMs, call),
    );
    const settled = attempt.then(
      () => {},
      () => {},
    );
    this.pending.add(settled);
    void settled.then(() => this.pending.delete(settled));
    try {
      return await Promise.race([attempt, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Closes the connection once every call settled. A retry still sleeping in the interceptor would
   * otherwise wake up on a closed channel and throw where nothing can catch it.
   */
  async close(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    if (this.owned) await this.connection.close();
  }
}
