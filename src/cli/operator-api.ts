// The operator API (src/operator/api.ts) as the CLI reaches it: replyflow's URL and the operator's
// token, nothing else. Every answer comes back typed, and every refusal as the error the CLI turns into
// its exit code and one line: bad input, not permitted, a refused token, replyflow out of reach.

import type { OperatorRole } from '../model';
import type { ApiError, DecisionAnswer } from '../operator/api';
import type { AuditEntry } from '../operator/audit';
import type { ConversationAction, ConversationOutcome } from '../operator/conversations';
import type { DecisionRequest } from '../operator/decisions';
import { NotPermittedError, OperatorInputError, OperatorTokenRefusedError } from '../operator/errors';
import type { Inspection } from '../operator/inspect';
import type { PatchReport } from '../operator/patches';
import type { ReconcileReport } from '../operator/reconcile';
import type { ItemResult, SelectionItem } from '../operator/selection';
import type { WorkItem } from '../operator/workflows';
import { OperatorApiError } from './errors';

interface Whoami {
  operator: string;
  roles: OperatorRole[];
  /** Present when the operator works for these tenants only. */
  tenants?: string[];
}

/** A request may take this long beyond the wait it asks the server for (the server waits at most 20 s). */
const SLACK_MS = 30_000;
/** Reads: a reconcile over a large ledger describes many workflows. */
const READ_TIMEOUT_MS = 120_000;

export class OperatorApiClient {
  /**
   * @param url replyflow's base URL (a receiver's), e.g. `http://127.0.0.1:3000`.
   * @param token the operator's token, sent as a bearer token on every request.
   * @param origin the setting that gave `url`, as errors about reaching it name it.
   */
  constructor(
    readonly url: string,
    private readonly token: string,
    private readonly origin = 'REPLYFLOW_URL',
  ) {}

  whoami(): Promise<Whoami> {
    return this.get('/whoami');
  }

  work(
    kind: 'held' | 'failed',
    filter: { integration?: string; tenant?: string; since?: Date; includeClosed?: boolean },
  ): Promise<WorkItem[]> {
    return this.get(`/work/${kind}`, {
      integration: filter.integration,
      tenant: filter.tenant,
      since: filter.since?.toISOString(),
      includeClosed: filter.includeClosed ? 'true' : undefined,
    });
  }

  show(workflowId: string): Promise<Inspection> {
    return this.get(`/workflows/${segment(workflowId)}`);
  }

  /** Sends one decision and waits up to `waitMs` for the workflow's verdict, asking again as needed. */
  async decide(workflowId: string, request: DecisionRequest, waitMs: number): Promise<DecisionAnswer> {
    const deadline = Date.now() + waitMs;
    const { signal, ...body } = request;
    const sent = await this.post<DecisionAnswer>(
      `/workflows/${segment(workflowId)}/${signal}`,
      { ...body, waitMs },
      waitMs,
    );
    return this.verdictOf(sent, deadline);
  }

  /** Plans a reprocess of the query's failed work (of `tenant` only, when given). */
  planReprocess(
    query: string,
    reason: string,
    tenant?: string,
  ): Promise<{ operator: string; plan: SelectionItem[] }> {
    return this.post('/reprocess/plan', { query, reason, tenant });
  }

  /** Reprocesses one planned item (re-checked by replyflow first) and waits up to `waitMs` for its verdict. */
  async reprocessItem(item: SelectionItem, reason: string, waitMs: number): Promise<ItemResult> {
    const deadline = Date.now() + waitMs;
    const { workflowId, integration, businessKey } = item;
    const result = await this.post<ItemResult>(
      '/reprocess/item',
      { workflowId, integration, businessKey, reason, waitMs },
      waitMs,
    );
    if (result.result !== 'undecided' || !result.runId || !result.updateId) return result;
    const { verdict } = await this.verdictOf(
      { workflowId, runId: result.runId, updateId: result.updateId, operator: '' },
      deadline,
    );
    if (verdict === undefined) return result;
    return { ...result, result: verdict.startsWith('Accepted') ? 'accepted' : 'rejected', detail: verdict };
  }

  patches(taskQueue?: string): Promise<PatchReport> {
    return this.get('/patches', { taskQueue });
  }

  reconcile(graceMs?: number): Promise<ReconcileReport> {
    return this.get('/reconcile', { graceMs: graceMs === undefined ? undefined : String(graceMs) });
  }

  audit(filter: {
    workflowId?: string;
    actor?: string;
    since?: Date;
    until?: Date;
    limit?: number;
  }): Promise<AuditEntry[]> {
    return this.get('/audit', {
      workflowId: filter.workflowId,
      actor: filter.actor,
      since: filter.since?.toISOString(),
      until: filter.until?.toISOString(),
      limit: filter.limit === undefined ? undefined : String(filter.limit),
    });
  }

  conversation(
    action: ConversationAction,
    conversationKey: string,
    reason: string,
  ): Promise<ConversationOutcome> {
    return this.post(`/conversations/${segment(conversationKey)}/${action}`, { reason });
  }

  /** Asks for the verdict again until it comes or the deadline passes; each ask waits on the server. */
  private async verdictOf(sent: DecisionAnswer, deadline: number): Promise<DecisionAnswer> {
    let outcome = sent;
    while (outcome.verdict === undefined && Date.now() < deadline) {
      const waitMs = deadline - Date.now();
      try {
        outcome = await this.get<DecisionAnswer>(
          `/workflows/${segment(sent.workflowId)}/updates/${segment(sent.updateId)}`,
          { runId: sent.runId, waitMs: String(waitMs) },
          waitMs,
        );
      } catch (err) {
        // The update was sent: a lost answer to a poll leaves it undecided here, not failed.
        if (err instanceof OperatorApiError || err instanceof OperatorInputError) return sent;
        throw err;
      }
    }
    return { ...outcome, operator: sent.operator || outcome.operator };
  }

  private get<T>(path: string, query: Record<string, string | undefined> = {}, waitMs = 0): Promise<T> {
    const params = new URLSearchParams(
      Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined),
    ).toString();
    return this.call<T>(`${path}${params ? `?${params}` : ''}`, { method: 'GET' }, waitMs);
  }

  private post<T>(path: string, body: unknown, waitMs = 0): Promise<T> {
    return this.call<T>(
      path,
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
      waitMs,
    );
  }

  private async call<T>(path: string, init: RequestInit, waitMs: number): Promise<T> {
    const endpoint = `${this.url.replace(/\/+$/, '')}/operator${path}`;
    let response: Response;
    try {
      response = await fetch(endpoint, {
        ...init,
        headers: { ...init.headers, authorization: `Bearer ${this.token}` },
        signal: AbortSignal.timeout(Math.max(READ_TIMEOUT_MS, waitMs + SLACK_MS)),
      });
    } catch (err) {
      throw new OperatorApiError(
        `cannot reach replyflow at ${this.url} (${reasonOf(err)}; ${this.origin}): is \`replyflow start\` (or a receiver) running there? Set REPLYFLOW_URL to where it runs`,
      );
    }
    const answer = (await response.json().catch(() => undefined)) as unknown;
    if (response.ok && answer !== undefined) return answer as T;
    const refusal = (answer ?? {}) as Partial<ApiError>;
    const why = typeof refusal.error === 'string' ? refusal.error : `HTTP ${response.status}`;
    if (response.status === 401)
      throw new OperatorTokenRefusedError(`replyflow at ${this.url} refused the operator token`);
    if (response.status === 403 && refusal.code === 'not_permitted' && refusal.operator && refusal.role)
      throw new NotPermittedError(refusal.operator, refusal.role);
    if (response.status === 400 && refusal.code === 'bad_input') throw new OperatorInputError(why);
    if (response.status === 404 && refusal.code === undefined)
      throw new OperatorApiError(
        `${this.url} has no operator API (HTTP 404; ${this.origin}): is it replyflow's receiver, and is it up to date? Set REPLYFLOW_URL to replyflow's receiver`,
      );
    throw new OperatorApiError(`replyflow at ${this.url}: ${why}`);
  }
}

/** A path segment for any id: workflow ids and conversation keys carry ':' and may carry '/', '?', '%'. */
function segment(value: string): string {
  return encodeURIComponent(value);
}

function reasonOf(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return 'no answer in time';
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}
