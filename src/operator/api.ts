// The operator API: JSON endpoints under /operator on the receiver, next to the codec server, that do
// for an operator what the replyflow CLI asks (docs/cli.md) with the receiver's own access to Temporal
// and PostgreSQL, so that an operator's machine needs only replyflow's URL and the operator's token.
// Same accounts, roles and token as the codec server (Authorization: Bearer, the same limit on wrong
// tokens). Reading and maintenance check the operator's role here and audit a refusal (`rejected: not
// permitted`); a decision is a Workflow Update whose input the codec server's sealer seals for the
// authenticated operator on its way (then encrypts, as /codec/encode does), and whose verdict the
// workflow gives. Answers carry identifiers, states and verdicts, never message text.
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { decisionList, isDecisionName, RESOLVE_ACTIONS } from '../../workflows/messages';
import type { Config } from '../config';
import { createEventLedger } from '../db/events';
import type { OperatorAccount } from '../db/operators';
import type { Pool } from '../db/pool';
import { errorMessage } from '../failures';
import type { Logger } from '../logger';
import type { OperatorRole } from '../model';
import { connectionSecurity } from '../temporal/client';
import { type CodecServerOptions, decisionSealer } from '../temporal/codec-server';
import { NotADecisionError, StatusUnavailableError } from '../temporal/errors';
import { tenantRefusal } from '../tenants/operator-scope';
import { parseTenant } from '../tenants/tenant-id';
import { listAudit, NOT_PERMITTED, recordAction } from './audit';
import { type ConversationAction, operateConversation } from './conversations';
import { actionOf, awaitVerdict, type DecisionOutcome, type DecisionRequest, decide } from './decisions';
import { NotPermittedError, OperatorInputError, WorkflowUnansweredError } from './errors';
import { inspectWorkflow } from './inspect';
import { patchReport } from './patches';
import { reconcile } from './reconcile';
import { planReprocess, reprocessItem } from './selection';
import { listWork } from './workflows';

const OPERATOR_API_PATH = '/operator';

/**
 * The longest one request waits for a verdict. A decision that takes longer is waited for again by
 * its update id (GET …/updates/:updateId): no proxy in front of the receiver (the compose gateway
 * reads with a 30 s timeout) cuts a quiet request off.
 */
const LONGEST_WAIT_MS = 20_000;

/** What every refusal answers: a message for the operator, and a code the CLI turns into its exit code. */
export interface ApiError {
  error: string;
  code: 'bad_input' | 'not_permitted' | 'token_refused' | 'rate_limited' | 'unavailable' | 'failed';
  /** With `not_permitted`: who was refused, for lack of which role. */
  operator?: string;
  role?: OperatorRole;
}

/** A decision's answer: the workflow's verdict (or none yet), and the operator it was sealed for. */
export interface DecisionAnswer extends DecisionOutcome {
  operator: string;
}

interface OperatorApiOptions {
  config: Config;
  pool: Pool;
  /** The codec server's: its gate authenticates operators, its codec and status lookup seal decisions. */
  codec: CodecServerOptions;
  /** Where Temporal is; the API has a connection of its own, closed by {@link OperatorApi.close}. */
  temporalAddress: string;
  logger: Logger;
}

interface OperatorApi {
  router: express.Router;
  /** Cancels what the API still waits on in Temporal, then closes its connection. */
  close(): Promise<void>;
}

const decisionBody = z.object({
  action: z.enum(RESOLVE_ACTIONS).optional(),
  reason: z.string(),
  externalId: z.string().optional(),
  waitMs: z.number().int().min(0).optional(),
});
const tenantId = z.string().refine((t) => parseTenant(t) !== undefined, {
  message: 'not a tenant id (slack:T…, slack:E…, line:U… or github:<installation id>)',
});
const planBody = z.object({ query: z.string().min(1), reason: z.string(), tenant: tenantId.optional() });
const itemBody = z.object({
  workflowId: z.string().min(1),
  integration: z.string().optional(),
  businessKey: z.string().optional(),
  reason: z.string(),
  waitMs: z.number().int().min(0).optional(),
});
const conversationBody = z.object({ reason: z.string() });
const isoTime = z.iso.datetime({ offset: true }).transform((t) => new Date(t));
const workQuery = z.object({
  integration: z.string().min(1).optional(),
  tenant: tenantId.optional(),
  since: isoTime.optional(),
  includeClosed: z.enum(['true', 'false']).optional(),
});
const auditQuery = z.object({
  workflowId: z.string().min(1).optional(),
  actor: z.string().min(1).optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
  limit: z.coerce.number().int().min(1).max(100_000).optional(),
});
const waitQuery = z.object({ runId: z.string().min(1), waitMs: z.coerce.number().int().min(0).optional() });
const graceQuery = z.object({ graceMs: z.coerce.number().int().min(0).optional() });
const patchesQuery = z.object({ taskQueue: z.string().min(1).max(1000).optional() });

/** The body or query a schema accepts, or OperatorInputError naming the first problem (never echoing values). */
function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const [issue] = parsed.error.issues;
  throw new OperatorInputError(`bad request: ${issue?.path.join('.') || 'body'}: ${issue?.message}`);
}

const waitOf = (waitMs: number | undefined) => Math.min(waitMs ?? LONGEST_WAIT_MS, LONGEST_WAIT_MS);

export function operatorApi(options: OperatorApiOptions): OperatorApi {
  const { config, pool, logger } = options;
  const { gate, codec } = options.codec;
  const seal = decisionSealer(options.codec);
  const ledger = createEventLedger(pool);
  // Lazy: the receiver starts while Temporal is down; the API answers 503 until it is back.
  const connection = Connection.lazy({
    address: options.temporalAddress,
    connectTimeout: 2000,
    ...connectionSecurity(config),
  });
  // One controller per request, not one for all: the SDK never removes the listener it adds to a
  // signal, so a shared one would keep every call of the receiver's life.
  const inFlight = new Map<Promise<unknown>, AbortController>();
  let closing = false;

  /**
   * A client as this operator: payloads decoded with the payload key, and what it encodes (only a
   * decision's input) sealed for the operator first, the pipeline /codec/encode runs.
   */
  function clientFor(account: OperatorAccount): Client {
    const sealing: PayloadCodec = {
      encode: async (payloads: Payload[]) => codec.encode(await seal(payloads, account)),
      decode: (payloads: Payload[]) => codec.decode(payloads),
    };
    return new Client({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      dataConverter: { payloadCodecs: [sealing] },
    });
  }

  /** Who acts, when their roles allow `role`; otherwise the refusal is audited and NotPermittedError thrown. */
  async function authorize(
    account: OperatorAccount,
    role: OperatorRole,
    refusal: { action: string; target: string; reason?: string },
  ): Promise<string> {
    if (account.roles.includes(role)) return account.name;
    await recordAction(pool, { actor: account.name, ...refusal, result: NOT_PERMITTED });
    logger.info(
      { operator: account.name, needs: role, action: refusal.action },
      'operator API: not permitted',
    );
    throw new NotPermittedError(account.name, role);
  }

  /**
   * For an operator limited to tenants, another tenant's workflow reads as no workflow at all. A
   * decision (`decision`) on it is refused and audited with the reason, before anything is sealed.
   */
  async function ownWork(
    account: OperatorAccount,
    workflowId: string,
    decision?: { action: string; reason?: string },
  ): Promise<void> {
    const refusal = await tenantRefusal(ledger, account, workflowId);
    if (!refusal) return;
    if (decision)
      await recordAction(pool, {
        actor: account.name,
        action: decision.action,
        target: workflowId,
        reason: decision.reason,
        result: `rejected: ${refusal}`,
      });
    logger.info(
      { operator: account.name, decision: decision?.action },
      'operator API: another tenant’s work',
    );
    throw new OperatorInputError(`no workflow ${workflowId}`);
  }

  /** What covers every tenant's work is not for an operator limited to some: refused and audited. */
  async function everyTenant(
    account: OperatorAccount,
    refusal: { action: string; target: string; reason?: string },
  ) {
    if (account.tenants === null) return;
    await recordAction(pool, {
      actor: account.name,
      ...refusal,
      result: `${NOT_PERMITTED}: every tenant's work`,
    });
    throw new OperatorInputError(
      `${refusal.action} covers every tenant's work: ${account.name} works for some tenants only`,
    );
  }

  type Handler = (req: Request, res: Response, account: OperatorAccount, client: Client) => Promise<unknown>;

  /**
   * Runs a handler as the authenticated operator and answers its value as JSON, or its error as an
   * {@link ApiError}. Its Temporal calls are cancelled when the receiver stops.
   */
  const handle = (handler: Handler) => (req: Request, res: Response) => {
    const account = res.locals.operator as OperatorAccount;
    if (closing)
      return void res
        .status(503)
        .json({ error: 'this receiver is stopping; try again', code: 'unavailable' } satisfies ApiError);
    const abort = new AbortController();
    const work = connection
      .withAbortSignal(abort.signal, () => handler(req, res, account, clientFor(account)))
      .then(
        (answer) => void res.json(answer),
        (err: unknown) => refuse(res, account, err),
      );
    inFlight.set(work, abort);
    void work.finally(() => inFlight.delete(work));
    return work;
  };

  function refuse(res: Response, account: OperatorAccount, err: unknown): void {
    const [status, body] = apiError(err) ?? [
      500,
      { error: "the request failed; the receiver's log has the details", code: 'failed' },
    ];
    // Anything unforeseen is ours to look into: the log has it, the answer does not (it may name internals).
    if (status === 500)
      logger.error({ operator: account.name, err: errorMessage(err) }, 'operator API request failed');
    res.status(status).json(body);
  }

  const router = express.Router();
  const api = express.Router();
  router.use(OPERATOR_API_PATH, api);
  api.use(gate.requireBearer(logger), express.json({ limit: '64kb' }));

  api.get(
    '/whoami',
    handle(async (_req, _res, account) => ({
      operator: account.name,
      roles: account.roles,
      ...(account.tenants ? { tenants: account.tenants } : {}),
    })),
  );

  api.get(
    '/work/:kind',
    handle(async (req, _res, account, client) => {
      const kind = req.params.kind;
      if (kind !== 'held' && kind !== 'failed') throw new OperatorInputError('work is held or failed');
      const filter = parse(workQuery, req.query);
      await authorize(account, 'view', { action: 'view', target: kind });
      return listWork(
        client,
        kind,
        { ...filter, includeClosed: filter.includeClosed === 'true' },
        account.tenants,
      );
    }),
  );

  api.get(
    '/workflows/:workflowId',
    handle(async (req, _res, account, client) => {
      const { workflowId } = req.params as { workflowId: string };
      await authorize(account, 'view', { action: 'view', target: workflowId });
      await ownWork(account, workflowId);
      return inspectWorkflow(client, pool, workflowId);
    }),
  );

  api.post(
    '/workflows/:workflowId/:decision',
    handle(async (req, _res, account, client): Promise<DecisionAnswer> => {
      const { workflowId, decision } = req.params as { workflowId: string; decision: string };
      const body = parse(decisionBody, req.body);
      const request = decisionRequest(decision, body);
      await ownWork(account, workflowId, { action: actionOf(request), reason: body.reason });
      const outcome = await decide(client, { workflowId, request, waitMs: waitOf(body.waitMs) });
      logger.info(
        { operator: account.name, decision, verdict: outcome.verdict !== undefined },
        'operator API: decision sent',
      );
      return { ...outcome, operator: account.name };
    }),
  );

  api.get(
    '/workflows/:workflowId/updates/:updateId',
    handle(async (req, _res, account, client): Promise<DecisionAnswer> => {
      const { workflowId, updateId } = req.params as { workflowId: string; updateId: string };
      const { runId, waitMs } = parse(waitQuery, req.query);
      await authorize(account, 'view', { action: 'view', target: workflowId });
      await ownWork(account, workflowId);
      const outcome = await awaitVerdict(client, { workflowId, runId, updateId }, waitOf(waitMs));
      return { ...outcome, operator: account.name };
    }),
  );

  api.post(
    '/reprocess/plan',
    handle(async (req, _res, account, client) => {
      const { query, reason, tenant } = parse(planBody, req.body);
      if (!reason.trim()) throw new OperatorInputError('a reason is required (--reason "…")');
      // Planning reads work and effect rows: viewing. Each item's workflow judges the reprocess itself.
      const operator = await authorize(account, 'view', {
        action: 'reprocess',
        target: `selection: ${query}`,
        reason: reason.trim(),
      });
      return {
        operator,
        plan: await planReprocess(client, pool, query, { tenants: account.tenants, tenant }),
      };
    }),
  );

  api.post(
    '/reprocess/item',
    handle(async (req, _res, account, client) => {
      const { reason, waitMs, ...planned } = parse(itemBody, req.body);
      if (!reason.trim()) throw new OperatorInputError('a reason is required (--reason "…")');
      await authorize(account, 'view', { action: 'reprocess', target: planned.workflowId, reason });
      await ownWork(account, planned.workflowId, { action: 'reprocess', reason });
      return reprocessItem(client, pool, planned, { reason: reason.trim(), waitMs: waitOf(waitMs) });
    }),
  );

  api.get(
    '/reconcile',
    handle(async (req, _res, account, client) => {
      const { graceMs } = parse(graceQuery, req.query);
      await authorize(account, 'view', { action: 'view', target: 'reconcile' });
      await everyTenant(account, { action: 'reconcile', target: 'reconcile' });
      return reconcile({
        client,
        pool,
        namespace: config.TEMPORAL_NAMESPACE,
        graceMs: graceMs ?? config.SEND_MAX_ELAPSED + 3_600_000,
      });
    }),
  );

  api.get(
    '/patches',
    handle(async (req, _res, account, client) => {
      const { taskQueue } = parse(patchesQuery, req.query);
      await authorize(account, 'view', { action: 'view', target: 'patches' });
      // Counts over every tenant's runs: only an operator of all of them reads it.
      await everyTenant(account, { action: 'patches', target: 'patches' });
      return patchReport(client, { taskQueue });
    }),
  );

  api.get(
    '/audit',
    handle(async (req, _res, account) => {
      const filter = parse(auditQuery, req.query);
      await authorize(account, 'view', { action: 'view', target: 'audit' });
      return listAudit(pool, { ...filter, ...(account.tenants ? { tenants: account.tenants } : {}) });
    }),
  );

  api.post(
    '/conversations/:conversationKey/:action',
    handle(async (req, _res, account) => {
      const { conversationKey, action } = req.params as { conversationKey: string; action: string };
      if (!CONVERSATION_ACTIONS.includes(action as ConversationAction))
        throw new OperatorInputError(`a conversation move is one of ${CONVERSATION_ACTIONS.join(', ')}`);
      const { reason } = parse(conversationBody, req.body);
      if (!reason.trim()) throw new OperatorInputError('a reason is required (--reason "…")');
      const refusal = { action: `conversation:${action}`, target: `conversation:${conversationKey}`, reason };
      const operator = await authorize(account, 'conversation', refusal);
      // A conversation's key does not name its tenant for every provider (GitHub's names a repository).
      await everyTenant(account, refusal);
      return operateConversation(pool, {
        action: action as ConversationAction,
        conversationKey,
        operator,
        reason,
      });
    }),
  );

  api.use((_req: Request, res: Response) => {
    res.status(404).json({ error: 'no such operator API endpoint', code: 'bad_input' } satisfies ApiError);
  });
  // A body that is not JSON, or too large: the client's mistake, said without echoing it.
  api.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    const status = (err as { status?: number }).status;
    if (typeof status !== 'number' || status >= 500) return next(err);
    const error = status === 413 ? 'the request body is too large' : 'the request body is not valid JSON';
    res.status(status).json({ error, code: 'bad_input' } satisfies ApiError);
  });

  return {
    router,
    async close() {
      closing = true;
      for (const abort of inFlight.values()) abort.abort();
      await Promise.allSettled([...inFlight.keys()]);
      await connection.close();
    },
  };
}

const CONVERSATION_ACTIONS: ConversationAction[] = ['handoff', 'handback', 'close', 'reopen'];

function decisionRequest(decision: string, body: z.infer<typeof decisionBody>): DecisionRequest {
  if (!isDecisionName(decision)) throw new OperatorInputError(`a decision is ${decisionList()}`);
  if (decision === 'resolve') {
    if (!body.action)
      throw new OperatorInputError(
        `resolve needs an action: ${RESOLVE_ACTIONS.slice(0, -1).join(', ')} or ${RESOLVE_ACTIONS.at(-1)}`,
      );
    return { signal: 'resolve', action: body.action, reason: body.reason, externalId: body.externalId };
  }
  if (body.action || body.externalId)
    throw new OperatorInputError(`${decision} takes a reason only (no action, no external id)`);
  return { signal: decision, reason: body.reason };
}

/** The answer to a refusal the operator can act on, or undefined for an unforeseen error. */
function apiError(err: unknown): [number, ApiError] | undefined {
  if (err instanceof OperatorInputError || err instanceof NotADecisionError)
    return [400, { error: err.message, code: 'bad_input' }];
  if (err instanceof NotPermittedError)
    return [
      403,
      { error: err.message, code: 'not_permitted', operator: err.operator, role: err.role as OperatorRole },
    ];
  if (err instanceof WorkflowUnansweredError || err instanceof StatusUnavailableError)
    return [503, { error: err.message, code: 'unavailable' }];
  if (isUnavailable(err))
    return [503, { error: 'replyflow cannot reach Temporal just now; try again', code: 'unavailable' }];
  return undefined;
}

/** Temporal could not be reached (gRPC UNAVAILABLE or DEADLINE_EXCEEDED), directly or as a cause. */
function isUnavailable(err: unknown): boolean {
  const cause = err instanceof Error ? err.cause : undefined;
  return [err, cause].some((e) => isGrpcServiceError(e) && (e.code === 14 || e.code === 4));
}
