// The event workflow's place in its conversation's line of sends, kept in the effects table: the send
// activity sends only when no earlier send of the conversation is pending, and otherwise answers
// `wait`; the activity that settles an earlier send tells the next one in line (`yourTurn`,
// activities/next-in-line.ts). Without contention this costs nothing: no signal, no timer, no other
// workflow.
import { condition } from '@temporalio/workflow';

/** A turn not offered by then is checked again (the workflow that should have offered it may be gone). */
const RECHECK_MS = 5 * 60_000;

/** How the send loop of an effect keeps its conversation's order. */
export interface Ordering {
  /** Runs one pass of the send protocol (and its settling) in the conversation's order. */
  around<T>(pass: () => Promise<T>): Promise<T>;
  /** Called before each send: a turn offered from now on counts. */
  expectTurn(): void;
  /** The send found an earlier one pending: wait until offered the turn (or a while passed). */
  waitForTurn(): Promise<void>;
}

export class ConversationLine implements Ordering {
  private offered = false;

  /** The `yourTurn` signal's handler. */
  onOffered(): void {
    this.offered = true;
  }

  around<T>(pass: () => Promise<T>): Promise<T> {
    return pass();
  }

  expectTurn(): void {
    this.offered = false;
  }

  async waitForTurn(): Promise<void> {
    await condition(() => this.offered, RECHECK_MS);
  }
}
