// The event workflow's place in its conversation's line of sends, kept in the effects table: the send
// activity sends only when no earlier send of the conversation is pending, and otherwise answers
// `wait`; whoever settles an earlier send tells the next one in line (`yourTurn`). Without contention
// this costs nothing: no signal, no timer, no other workflow.
import { condition, getExternalWorkflowHandle, log } from '@temporalio/workflow';
import { yourTurnSignal } from './messages';

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
  /** This effect no longer holds the conversation back: tell the next send waiting, if any. */
  passOn(nextInLine: string | undefined): Promise<void>;
}

export class ConversationLine implements Ordering {
  private offered = false;

  constructor(private readonly workflowId: string) {}

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

  async passOn(nextInLine: string | undefined): Promise<void> {
    if (!nextInLine || nextInLine === this.workflowId) return;
    // A next send that is gone has nothing to wait for; one that misses this checks again later.
    await getExternalWorkflowHandle(nextInLine)
      .signal(yourTurnSignal)
      .catch(() => log.warn('could not offer the turn; the next send checks again', { nextInLine }));
  }
}
