// The event workflow's side of its conversation's turns workflow (workflows/conversation.ts), as runs
// started before sends were ordered by the effects table (conversation-line.ts) keep using it: ask for
// a turn, wait for it, send, give it back however the send ended.
import { condition, getExternalWorkflowHandle, log } from '@temporalio/workflow';
import type { TransitionRequest } from '../src/conversations';
import type { records } from './activity-stubs';
import { TURN_REQUEST_RETRY_MS } from './conversation';
import type { Ordering } from './conversation-line';
import { conversationWorkflowId, releaseTurnSignal } from './messages';

export class TurnClient implements Ordering {
  /** The event's conversation, once planned; without one, sends need no turn. */
  transition?: TransitionRequest;
  private requests = 0;
  private waitingFor?: string;
  private granted?: string;

  constructor(
    private readonly workflowId: string,
    private readonly bookkeeping: typeof records,
  ) {}

  /** The turns workflow granted a turn. One nobody waits for (a late duplicate) goes straight back. */
  async onGranted(requestId: string): Promise<void> {
    if (requestId === this.waitingFor) {
      this.granted = requestId;
      return;
    }
    const key = this.transition?.conversationKey;
    if (key) await this.giveBack(key, requestId);
  }

  /** Its sends never answer `wait`, and nobody waits to be told: the turns workflow orders them. */
  expectTurn(): void {}
  async waitForTurn(): Promise<void> {}

  /** Runs `fn` holding the conversation's turn; the turn is given back however `fn` ends. */
  async around<T>(fn: () => Promise<T>): Promise<T> {
    const transition = this.transition;
    if (!transition) return fn();
    this.requests += 1;
    const requestId = `${this.workflowId}#${this.requests}`;
    this.waitingFor = requestId;
    // A request racing the turns workflow's idle end is asked again after a while.
    do {
      await this.bookkeeping.requestTurn({
        conversationKey: transition.conversationKey,
        workflowId: this.workflowId,
        requestId,
        orderKey: transition.orderKey,
      });
    } while (!(await condition(() => this.granted === requestId, TURN_REQUEST_RETRY_MS)));
    this.waitingFor = undefined;
    try {
      return await fn();
    } finally {
      await this.giveBack(transition.conversationKey, requestId);
    }
  }

  private async giveBack(conversationKey: string, requestId: string): Promise<void> {
    await getExternalWorkflowHandle(conversationWorkflowId(conversationKey))
      .signal(releaseTurnSignal, { requestId })
      .catch(() => log.warn('could not give the turn back; it will time out', { requestId }));
  }
}
