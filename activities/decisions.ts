// Who is behind an operator decision, checked where it counts: the workflow asks this activity before
// it judges anything. The seal must verify (made by the codec server with the payload key's seal key,
// over exactly this body), be meant for this workflow and this decision, be fresh, and name an
// operator whose credential is still current, whose roles allow the decision and whose tenants (if
// the account is limited to some) include the workflow's event's. Whatever the
// verdict, the seal is then used up: its request id belongs to this one delivery in this one run, so
// a re-delivery after a `temporal workflow reset` (into a new run) is a replay, while a retry of this
// same check gets the verdict it got the first time.
import { Context } from '@temporalio/activity';
import { createDecisionRequests } from '../src/db/decision-requests';
import { createEventLedger } from '../src/db/events';
import { DECISION_TTL_MS, openSeal, type SealClaims } from '../src/decision-seal';
import { isRefusedPayload, type OperatorRole } from '../src/model';
import { tenantRefusal } from '../src/tenants/operator-scope';
import { DECISIONS, type DecisionName, RESOLVE_ACTIONS } from '../workflows/messages';
import type { ActivityDeps } from './deps';

interface VerifyInput {
  decision: DecisionName;
  payload: unknown;
  workflowId: string;
  /** What delivered it in its run (`update:<id>`, or `signal:<n>`, the run's count of signals). */
  delivery: string;
}

/** The body the workflow judges: the decision's own fields, nothing the seal or the transport added. */
interface VerifiedBody {
  action?: string;
  reason?: unknown;
  externalId?: unknown;
}

type Verified =
  /** `hold`: the hold the decision answers (absent only in the histories of runs started before). */
  | { ok: true; operator: string; requestId: string; hold?: string; body: VerifiedBody }
  /**
   * `operator`: set once the seal verified, so the refusal is recorded against them; `operatorReason`:
   * the reason they gave, for the record, once their seal verified.
   */
  | { ok: false; reason: string; action?: string; operator?: string; operatorReason?: string };

/** Clock skew tolerated between the codec server and the worker for a seal's issue time. */
const SKEW_MS = 60_000;

/** The role a decision needs: asking for a resend and approving it are different roles. */
export function roleFor(decision: DecisionName, action: unknown): OperatorRole | undefined {
  if (!DECISIONS[decision].takesAction) return decision as Exclude<DecisionName, 'resolve'>;
  return RESOLVE_ACTIONS.find((known) => known === action);
}

export function decisionActivities({ operators, payloadKeys, pool }: ActivityDeps) {
  const requests = createDecisionRequests(pool);
  const ledger = createEventLedger(pool);

  /** The verdict on a seal bound to this workflow and decision: fresh, current credential, the role, the tenant. */
  async function judgeSeal(claims: SealClaims, input: VerifyInput, raw: Record<string, unknown>) {
    const refuse = (reason: string): Verified => ({
      ok: false,
      reason,
      action: typeof raw.action === 'string' ? raw.action.slice(0, 40) : undefined,
      operator: claims.operator,
      operatorReason: typeof raw.reason === 'string' ? raw.reason.slice(0, 500) : undefined,
    });
    const age = Date.now() - claims.issuedAt;
    if (!(age <= DECISION_TTL_MS))
      return refuse(
        `expired: sealed ${Math.round(age / 1000)} s ago, decisions live ${DECISION_TTL_MS / 1000} s`,
      );
    if (age < -SKEW_MS) return refuse('sealed in the future: check the servers’ clocks');
    const account = await operators.get(claims.operator);
    if (!account) return refuse(`revoked: no operator named ${claims.operator}`);
    if (account.disabled) return refuse(`revoked: operator ${claims.operator} is disabled`);
    if (account.credentialId !== claims.credentialId)
      return refuse(`revoked: ${claims.operator}'s token was rotated after this decision was sealed`);
    const role = roleFor(input.decision, raw.action);
    if (role && !account.roles.includes(role))
      return refuse(`not permitted: ${claims.operator} does not have the ${role} role`);
    const outsideTenants = await tenantRefusal(ledger, account, input.workflowId);
    if (outsideTenants) return refuse(outsideTenants);
    return {
      ok: true,
      operator: claims.operator,
      requestId: claims.requestId,
      hold: claims.hold,
      body: { action: raw.action as string | undefined, reason: raw.reason, externalId: raw.externalId },
    } satisfies Verified;
  }

  return {
    async verifyDecision(input: VerifyInput): Promise<Verified> {
      const { payload } = input;
      const raw = (payload ?? {}) as Record<string, unknown>;
      const action = typeof raw.action === 'string' ? raw.action.slice(0, 40) : undefined;
      const refuse = (reason: string, operator?: string): Verified => ({
        ok: false,
        reason,
        action,
        operator,
      });
      if (isRefusedPayload(payload)) return refuse(payload.replyflowRefusedPayload);
      const opened = openSeal(payload, payloadKeys);
      if (!opened.ok) return refuse(opened.reason);
      const { claims } = opened;
      if (claims.workflowId !== input.workflowId || raw.workflowId !== input.workflowId)
        return refuse(
          `sealed for another workflow (${String(claims.workflowId).slice(0, 200)})`,
          claims.operator,
        );
      if (typeof claims.decision !== 'string' || typeof claims.hold !== 'string')
        return refuse(
          'sealed without its decision and hold (an older codec server): decide again',
          claims.operator,
        );
      if (claims.decision !== input.decision)
        return refuse(
          `sealed for ${claims.decision.slice(0, 40)}, delivered as ${input.decision}`,
          claims.operator,
        );
      // The run is part of the delivery: Temporal re-delivers updates and signals into the new run a
      // reset starts, and this is how that re-delivery is told from a retry of this check.
      const runId = Context.current().info.workflowExecution?.runId ?? '';
      const used = await requests.use({
        requestId: claims.requestId,
        workflowId: input.workflowId,
        delivery: `${runId}/${input.delivery}`,
        operator: claims.operator,
        decision: claims.decision,
        hold: claims.hold,
        seal: String(raw.seal),
        verdict: await judgeSeal(claims, input, raw),
      });
      if (used.kind === 'replayed')
        return refuse('replayed: this sealed decision was used before', claims.operator);
      return used.verdict;
    },
  };
}
