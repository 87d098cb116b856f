// Who is behind an operator decision, checked where it counts: the workflow asks this activity before
// it judges anything. The seal must verify (made by the codec server with the payload key's seal key,
// over exactly this body), be meant for this workflow, be fresh, be used once, and name an operator
// whose credential is still current and whose roles allow the decision.
import { DECISION_TTL_MS, openSeal } from '../src/decision-seal';
import { isRefusedPayload, type OperatorRole } from '../src/model';
import type { DecisionName } from '../workflows/messages';
import type { ActivityDeps } from './deps';

export interface VerifyInput {
  decision: DecisionName;
  payload: unknown;
  workflowId: string;
  /** What delivered it (an update id, or the run's count of signals): a retry of this check is not a replay. */
  delivery: string;
}

/** The body the workflow judges: the decision's own fields, nothing the seal or the transport added. */
export interface VerifiedBody {
  action?: string;
  reason?: unknown;
  externalId?: unknown;
}

export type Verified =
  | { ok: true; operator: string; requestId: string; body: VerifiedBody }
  /** `operator`: set once the seal verified, so the refusal is recorded against them. */
  | { ok: false; reason: string; action?: string; operator?: string };

/** Clock skew tolerated between the codec server and the worker for a seal's issue time. */
const SKEW_MS = 60_000;

/** The role a decision needs: asking for a resend and approving it are different roles. */
export function roleFor(decision: DecisionName, action: unknown): OperatorRole | undefined {
  if (decision !== 'resolve') return decision;
  return action === 'mark-sent' || action === 'resend' || action === 'discard' ? action : undefined;
}

export function decisionActivities({ operators, payloadKeys }: ActivityDeps) {
  return {
    async verifyDecision(input: VerifyInput): Promise<Verified> {
      const { payload } = input;
      const raw = (payload ?? {}) as Record<string, unknown>;
      const action = typeof raw.action === 'string' ? raw.action.slice(0, 40) : undefined;
      const refuse = (reason: string): Verified => ({ ok: false, reason, action });
      if (isRefusedPayload(payload)) return refuse(payload.replyflowRefusedPayload);
      const opened = openSeal(payload, payloadKeys);
      if (!opened.ok) return refuse(opened.reason);
      const { claims } = opened;
      const refuseSealed = (reason: string): Verified => ({ ...refuse(reason), operator: claims.operator });
      if (claims.workflowId !== input.workflowId || raw.workflowId !== input.workflowId)
        return refuseSealed(`sealed for another workflow (${String(claims.workflowId).slice(0, 200)})`);
      const age = Date.now() - claims.issuedAt;
      if (!(age <= DECISION_TTL_MS))
        return refuseSealed(
          `expired: sealed ${Math.round(age / 1000)} s ago, decisions live ${DECISION_TTL_MS / 1000} s`,
        );
      if (age < -SKEW_MS) return refuseSealed('sealed in the future: check the servers’ clocks');
      const account = await operators.get(claims.operator);
      if (!account) return refuseSealed(`revoked: no operator named ${claims.operator}`);
      if (account.disabled) return refuseSealed(`revoked: operator ${claims.operator} is disabled`);
      if (account.credentialId !== claims.credentialId)
        return refuseSealed(`revoked: ${claims.operator}'s token was rotated after this decision was sealed`);
      const role = roleFor(input.decision, raw.action);
      if (role && !account.roles.includes(role))
        return refuseSealed(`not permitted: ${claims.operator} does not have the ${role} role`);
      const first = await operators.useRequest({
        requestId: claims.requestId,
        workflowId: input.workflowId,
        delivery: input.delivery,
        operator: claims.operator,
      });
      if (!first) return refuseSealed('replayed: this sealed decision was used before');
      return {
        ok: true,
        operator: claims.operator,
        requestId: claims.requestId,
        body: { action: raw.action as string | undefined, reason: raw.reason, externalId: raw.externalId },
      };
    },
  };
}
