// The decision_requests table's one owner: each sealed decision's single use. A request id is used by
// exactly one delivery (the run that checked it, and the update or signal that carried it), and the
// verdict it got is kept with it, so that a retried check of that delivery gets the same verdict and
// every other delivery, in the same run or in a run a reset started, is a replay.
import type { Pool } from './pool';

interface DecisionUse<V> {
  requestId: string;
  workflowId: string;
  /** `<run id>/<update:id | signal:n>`: a retry of the same check names the same delivery. */
  delivery: string;
  operator: string;
  decision: string;
  hold: string;
  /** The whole seal, so that the row can be checked against it. */
  seal: string;
  /** The verdict this check reached, recorded if this is the first use. */
  verdict: V;
}

/** The verdict of a request's delivery: its own (first use or a retried check), or a replay. */
type UseResult<V> = { kind: 'first' | 'retried'; verdict: V } | { kind: 'replayed' };

export function createDecisionRequests(pool: Pool) {
  return {
    /** Uses the request for this delivery, or reports the delivery that used it first. */
    async use<V>(input: DecisionUse<V>): Promise<UseResult<V>> {
      const { rows } = await pool.query<{ delivery: string; verdict: V; inserted: boolean }>(
        `WITH used AS (
           INSERT INTO decision_requests (request_id, workflow_id, delivery, operator, decision, hold, seal, verdict)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (request_id) DO NOTHING RETURNING delivery, verdict)
         SELECT delivery, verdict, true AS inserted FROM used
         UNION ALL SELECT delivery, verdict, false FROM decision_requests WHERE request_id = $1
         LIMIT 1`,
        [
          input.requestId,
          input.workflowId,
          input.delivery,
          input.operator,
          input.decision,
          input.hold,
          input.seal,
          JSON.stringify(input.verdict),
        ],
      );
      const row = rows[0];
      if (row?.inserted) return { kind: 'first', verdict: input.verdict };
      if (row?.delivery === input.delivery && row.verdict !== null)
        return { kind: 'retried', verdict: row.verdict };
      return { kind: 'replayed' };
    },
  };
}
