// Judges operator messages against the workflow's state. Pure functions: the workflow applies the
// verdict, records it, and audits it. Invalid, repeated or self-approved messages change nothing.
// Who sent a message is settled before it gets here: the operator its seal proves, or, for the
// signals of runs started before decisions were sealed, the name the payload carried.
import { type DecisionName, RESOLVE_ACTIONS, type ReplyState } from './messages';

export interface OperatorMessage {
  signal: DecisionName;
  /** The decision's body. */
  payload: unknown;
  /** Who decided: see above. `(missing)` when nobody is named. */
  actor: string;
  requestId?: string;
  /** The hold its seal is bound to (absent in the histories of runs started before). */
  hold?: string;
}

export type Verdict =
  | { ok: true; action: 'mark-sent'; externalId: string }
  | { ok: true; action: 'request-resend' | 'discard' | 'approve-resend' | 'reprocess' }
  | { ok: false; detail: string };

const ACTIONS: readonly string[] = RESOLVE_ACTIONS;

function text(value: unknown, max: number): string | undefined {
  return typeof value === 'string' && value.trim().length > 0 && value.length <= max
    ? value.trim()
    : undefined;
}

/**
 * A signal as runs started before sealed decisions received it: the actor is whatever name the
 * payload carried. Only their recorded histories replay this way; new messages are verified.
 */
export function unsealedSignal(signal: DecisionName, payload: unknown): OperatorMessage {
  const p = (payload ?? {}) as Record<string, unknown>;
  const who = signal === 'approve' ? p.approver : p.operator;
  return { signal, payload, actor: text(who, 100) ?? '(missing)', requestId: text(p.requestId, 200) };
}

/**
 * Why a decision's payload cannot be a sealed decision at all, seen without an activity: not
 * encrypted by a known key (the worker's codec marks it so), not one JSON object, or without a seal.
 * The same reasons the seal check gives (src/decision-seal.ts); anything else needs that check.
 */
export function unverifiable(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
    return 'payload must be one JSON object';
  const fields = payload as Record<string, unknown>;
  if (typeof fields.replyflowRefusedPayload === 'string') return fields.replyflowRefusedPayload;
  if (fields.seal === undefined) return 'unsealed: decide through the codec server, logged in';
  return undefined;
}

/** What a message asks for, for the record, even when it is invalid. */
export function actionOf(message: OperatorMessage): string {
  const p = message.payload as Record<string, unknown> | undefined;
  return message.signal === 'resolve' ? String(p?.action ?? '(missing)') : message.signal;
}

interface JudgeContext {
  state: ReplyState;
  /** What a decision answers now (RunView.hold). */
  hold?: string;
  seenRequestIds: ReadonlySet<string>;
  /** Who asked for the resend that awaits approval. */
  resendRequestedBy?: string;
}

export function judge(message: OperatorMessage, ctx: JudgeContext): Verdict {
  const p = (message.payload ?? {}) as unknown as Record<string, unknown>;
  if (typeof message.payload !== 'object' || message.payload === null || Array.isArray(message.payload)) {
    return { ok: false, detail: 'payload must be one JSON object' };
  }
  const { requestId } = message;
  if (requestId && ctx.seenRequestIds.has(requestId))
    return { ok: false, detail: `repeated requestId ${requestId}` };
  if (message.hold !== undefined && message.hold !== ctx.hold)
    return {
      ok: false,
      detail: `this decision answers hold ${message.hold}, but the item is ${ctx.hold ? `at hold ${ctx.hold}` : `in state ${ctx.state}`}: look at it again`,
    };
  if (message.actor === '(missing)') {
    return {
      ok: false,
      detail: `${message.signal === 'approve' ? 'approver' : 'operator'} is required (at most 100 characters)`,
    };
  }
  if (!text(p.reason, 500)) return { ok: false, detail: 'reason is required (at most 500 characters)' };

  switch (message.signal) {
    case 'resolve': {
      const action = p.action;
      if (typeof action !== 'string' || !ACTIONS.includes(action)) {
        return { ok: false, detail: `action must be one of ${ACTIONS.join(', ')}` };
      }
      const held = ctx.state === 'held' || ctx.state === 'awaiting_approval';
      if (!held && ctx.state !== 'failed')
        return { ok: false, detail: `nothing to resolve in state ${ctx.state}` };
      if (action === 'mark-sent') {
        const externalId = text(p.externalId, 200);
        if (!externalId)
          return { ok: false, detail: 'mark-sent needs the externalId of the message that was sent' };
        return { ok: true, action: 'mark-sent', externalId };
      }
      if (action === 'discard') return { ok: true, action: 'discard' };
      if (ctx.state === 'failed')
        return { ok: false, detail: 'failed work is sent again with reprocess, not resend' };
      if (ctx.state === 'awaiting_approval') return { ok: false, detail: 'a resend already awaits approval' };
      return { ok: true, action: 'request-resend' };
    }
    case 'approve': {
      if (ctx.state !== 'awaiting_approval')
        return { ok: false, detail: `no resend awaits approval (state ${ctx.state})` };
      if (message.actor === ctx.resendRequestedBy) {
        return {
          ok: false,
          detail: 'the approver must be a different person from the operator who asked for the resend',
        };
      }
      return { ok: true, action: 'approve-resend' };
    }
    case 'reprocess': {
      if (ctx.state !== 'failed')
        return { ok: false, detail: `only failed work can be reprocessed (state ${ctx.state})` };
      return { ok: true, action: 'reprocess' };
    }
  }
}
