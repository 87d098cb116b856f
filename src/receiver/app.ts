// The receiver: verify → validate → make durable → answer. It never calls a target, and it answers
// 2xx only after Temporal accepted every event of the request.
import { randomUUID } from 'node:crypto';
import type { Tracer } from '@opentelemetry/api';
import { isGrpcServiceError } from '@temporalio/client';
import express, { type NextFunction, type Request, type Response } from 'express';
import { debugStack, type Logger } from '../logger';
import {
  type ReceiverMetrics,
  UNKNOWN_PROVIDER,
  type UnavailableReason,
  WEBHOOK_OUTCOMES,
  type WebhookOutcome,
} from '../metrics';
import { PROVIDER_SETTINGS } from '../providers';
import { ProviderUnavailableError, WebhookPayloadError, WebhookVerificationError } from '../providers/errors';
import type { InboundEvent, RequestContext, WebhookProvider } from '../providers/types';
import { inServerSpan, setSpanAttributes } from '../tracing';
import { StartTurnTimeoutError, TemporalDeadlineError, TemporalUnavailableError } from './errors';
import { type EventStarter, type StartOutcome, storageProblem } from './start-event';

/** Whether each dependency answered its readiness probe, and what to do about those that did not. */
interface Readiness {
  checks: Record<'temporal' | 'postgres' | 'searchAttributes', boolean>;
  /** One actionable sentence per failed check that has more to say than "down" (e.g. a command to run). */
  problems: string[];
}

interface ReceiverDeps {
  providers: WebhookProvider[];
  starter: EventStarter;
  readiness: () => Promise<Readiness>;
  metrics: ReceiverMetrics;
  logger: Logger;
  /** With traces on: each webhook request is a server span, the root of its event's trace. */
  tracer?: Tracer;
  bodyLimit: number;
  /** Extra routers mounted on the same app (the sandbox page and target). */
  extraRoutes?: express.Router[];
}

/** Seconds a sender should wait before redelivering when we could not make its event durable. */
export const RETRY_AFTER_SECONDS = 5;

/** Refusals are warnings (a misconfigured sender shows up), an event that could not be made durable an error. */
const LOG_LEVELS: Record<WebhookOutcome, 'info' | 'warn' | 'error'> = {
  accepted: 'info',
  duplicate: 'info',
  answered: 'info',
  ignored: 'info',
  rejected_signature: 'warn',
  invalid: 'warn',
  unavailable: 'error',
};

/**
 * What a refusal's one log line says beside its status: why, and what fixes it when the fix is ours
 * (a setting); the error's stack only at debug (src/logger.ts). Never the body or a header's value.
 */
interface Refusal {
  reason?: string;
  fix?: string;
  /** The media type a 415 was sent with. */
  contentType?: string;
  stack?: string;
}

/** The request's logger, carrying its correlation id, for every line logged while serving it. */
interface RequestLocals {
  log?: Logger;
}

export function createReceiverApp(deps: ReceiverDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // Answers to senders are never cached or revalidated: hashing each body for an ETag is waste.
  app.set('etag', false);
  const providers = new Map(deps.providers.map((p) => [p.name, p]));
  // Every series exists from the start, so a dashboard's rate() sees the first request of each kind.
  for (const provider of [...providers.keys(), UNKNOWN_PROVIDER])
    for (const outcome of WEBHOOK_OUTCOMES) deps.metrics.requests.inc({ provider, outcome }, 0);

  // The signature covers these exact bytes, so the body is kept raw; the limit applies while reading
  // (a chunked body has no Content-Length to check up front).
  const rawParser = express.raw({ type: () => true, limit: deps.bodyLimit });
  const readRawBody = (req: Request, res: Response) =>
    new Promise<Buffer>((resolve, reject) =>
      rawParser(req, res, (err?: unknown) =>
        err ? reject(err) : resolve(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)),
      ),
    );

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const { checks, problems } = await deps.readiness();
    const ready = Object.values(checks).every(Boolean);
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ready' : 'unavailable',
      checks: Object.fromEntries(Object.entries(checks).map(([name, up]) => [name, up ? 'up' : 'down'])),
      ...(problems.length > 0 ? { problems } : {}),
    });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  /** `route` names the request's span; `answer` adds the provider, the outcome and the status. */
  const traced =
    (route: string, handler: (req: Request, res: Response) => Promise<void>) =>
    (req: Request, res: Response) =>
      inServerSpan(deps.tracer, `POST ${route}`, { 'http.request.method': 'POST', 'http.route': route }, () =>
        handler(req, res),
      );

  const handle = (providerName: (req: Request) => string) => async (req: Request, res: Response) => {
    const started = process.hrtime.bigint();
    const provider = providers.get(providerName(req));
    // Only configured names become label values: arbitrary paths must not grow the metric series.
    const label = provider?.name ?? UNKNOWN_PROVIDER;
    const correlationId = correlationIdOf(req);
    const log = deps.logger.child({ correlationId, provider: label });
    (res.locals as RequestLocals).log = log;
    // One log line per request, carrying what the request led to (identifiers, never the body).
    const answer = (outcome: WebhookOutcome, status: number, body: unknown, detail: object = {}) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      deps.metrics.requests.inc({ provider: label, outcome });
      deps.metrics.ackSeconds.observe({ provider: label, outcome }, seconds);
      setSpanAttributes({
        'http.response.status_code': status,
        'replyflow.provider': label,
        'replyflow.outcome': outcome,
        ...('workflowId' in detail && { 'replyflow.workflow_id': String(detail.workflowId) }),
      });
      log[LOG_LEVELS[outcome]](
        { status, outcome, ms: Math.round(seconds * 1000), ...detail },
        outcome === 'rejected_signature' || outcome === 'invalid' ? 'webhook refused' : 'webhook answered',
      );
      res.setHeader('x-request-id', correlationId);
      if (emptyAck && status < 300) res.status(200).end();
      else res.status(status).json(body);
    };
    let emptyAck = false;
    // Answered before reading the body. Node discards a body the handler left unread so that the
    // connection can carry the next request; that is fine for one within the limit. A larger or
    // unbounded one is not read at all: the connection closes after the answer (closing with a
    // small body still unread could reset the connection before the sender reads our answer).
    const refuseUnread = (status: number, body: { error: string }, refusal: Refusal = {}) => {
      const declared = Number(req.headers['content-length'] ?? 0);
      if (declared > deps.bodyLimit || req.headers['transfer-encoding'] !== undefined)
        res.setHeader('connection', 'close');
      answer('invalid', status, body, { reason: body.error, ...refusal });
    };
    const overLimit = { error: `body over ${deps.bodyLimit} bytes` };
    const raiseLimit = { fix: 'raise WEBHOOK_BODY_LIMIT if the sender sends bodies this large' };

    if (!provider) return refuseUnread(404, { error: 'unknown or disabled provider' }, enabling(req));
    if (!req.is(provider.contentTypes as string[])) {
      return refuseUnread(
        415,
        { error: `content type must be ${provider.contentTypes.join(' or ')}` },
        { contentType: mediaType(req) },
      );
    }
    if (Number(req.headers['content-length'] ?? 0) > deps.bodyLimit)
      return refuseUnread(413, overLimit, raiseLimit);

    let rawBody: Buffer;
    try {
      rawBody = await readRawBody(req, res);
    } catch (err) {
      const status = (err as { status?: number }).status;
      const stack = debugStack(log, err);
      if (status === 413)
        return answer('invalid', 413, overLimit, { reason: overLimit.error, ...raiseLimit, ...stack });
      const refusal = status === 415 ? 'unsupported content encoding or charset' : 'could not read the body';
      return answer('invalid', status === 415 ? 415 : 400, { error: refusal }, { reason: refusal, ...stack });
    }
    const ctx: RequestContext = {
      rawBody,
      headers: req.headers,
      params: req.params as Record<string, string>,
      receivedAt: new Date(),
      correlationId,
    };
    const unavailable = (err: Error, workflowIds?: string[]) => {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      deps.metrics.unavailable.inc({ provider: label, reason: unavailableReason(err) });
      return answer(
        'unavailable',
        503,
        { error: 'temporarily unavailable, retry later' },
        { err: err.message, ...(workflowIds ? { workflowIds } : {}) },
      );
    };
    try {
      await provider.verify(ctx);
    } catch (err) {
      // What verifies the request (LINE's channels in the tenant store) is down: nothing is recorded.
      if (err instanceof ProviderUnavailableError) return unavailable(err);
      if (!(err instanceof WebhookVerificationError)) throw err;
      return answer(
        'rejected_signature',
        401,
        { error: 'invalid signature', reason: err.message },
        { reason: err.message, ...secretFix(provider.name, err.message), ...debugStack(log, err) },
      );
    }
    let result: Awaited<ReturnType<WebhookProvider['parse']>>;
    try {
      result = await provider.parse(ctx);
    } catch (err) {
      if (err instanceof ProviderUnavailableError) return unavailable(err);
      if (!(err instanceof WebhookPayloadError)) throw err;
      return answer(
        'invalid',
        400,
        { error: err.message, issues: err.issues },
        {
          reason: err.message,
          issues: err.issues.map((i) => i.path.join('.') || '(body)'),
          ...debugStack(log, err),
        },
      );
    }
    if (result.kind === 'answer') return answer('answered', result.status, result.body);
    emptyAck = result.ack === 'empty';
    if (result.kind === 'ignored') {
      deps.metrics.ignored.inc({ provider: label, reason: result.reason });
      return answer('ignored', 200, { status: 'ignored', reason: result.reason }, { reason: result.reason });
    }
    // Checked before any start, so that no event of a request is made durable when one cannot be.
    const unstorable = result.events.map(storageProblem).find((problem) => problem !== undefined);
    if (unstorable)
      return answer('invalid', unstorable.status, { error: unstorable.error }, { reason: unstorable.error });

    let outcomes: StartOutcome[];
    try {
      outcomes = await startAll(deps.starter, result.events);
    } catch (err) {
      if (!(err instanceof TemporalUnavailableError)) throw err;
      return unavailable(
        err,
        result.events.map((e) => e.workflowId),
      );
    }
    for (const [i, event] of result.events.entries())
      if (outcomes[i] === 'accepted') deps.metrics.accepted(label, event.tenant);
    const accepted = outcomes.includes('accepted');
    const status = accepted ? 'accepted' : 'duplicate';
    const workflows = result.events.map((e, i) => ({
      workflowId: e.workflowId,
      eventType: e.eventType,
      status: outcomes[i],
    }));
    if (workflows.length === 1) {
      const [{ workflowId, eventType }] = workflows as [(typeof workflows)[0]];
      return answer(status, accepted ? 202 : 200, { status, workflowId }, { workflowId, eventType });
    }
    return answer(
      status,
      accepted ? 202 : 200,
      { status, workflows: workflows.map(({ workflowId, status }) => ({ workflowId, status })) },
      { workflows },
    );
  };

  app.post(
    '/webhooks/std/:source',
    traced(
      '/webhooks/std/:source',
      handle(() => 'std'),
    ),
  );
  app.post(
    '/webhooks/:provider',
    traced(
      '/webhooks/:provider',
      handle((req) => String(req.params.provider)),
    ),
  );
  for (const router of deps.extraRoutes ?? []) app.use(router);

  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: 'not found' });
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    // Express marks what the request got wrong (an undecodable path, say) with a 4xx status; the
    // message may quote the request, so only the status goes back.
    const status = (err as { status?: number }).status;
    const clientError = typeof status === 'number' && status >= 400 && status < 500;
    const log = (res.locals as RequestLocals).log ?? deps.logger;
    if (clientError) log.warn({ status }, 'bad request');
    // A bug's message may quote the body (JSON.parse does), so only its class and origin are logged.
    else log.error({ err: (err as Error)?.name, at: stackFrames(err) }, 'receiver error');
    if (res.headersSent) return;
    if (clientError) res.status(status).json({ error: 'bad request' });
    else res.status(500).json({ error: 'internal error' });
  });
  return app;
}

/** Starts every event; all must be durable before the request may be acknowledged. */
async function startAll(starter: EventStarter, events: InboundEvent[]): Promise<StartOutcome[]> {
  const settled = await Promise.allSettled(events.map((e) => starter.start(e)));
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return settled.map((s) => (s as PromiseFulfilledResult<StartOutcome>).value);
}

/** For a 404 to a provider we have but that is not configured: the setting that turns it on. */
function enabling(req: Request): Refusal {
  const name = req.path.startsWith('/webhooks/std/') ? 'std' : String(req.params.provider ?? '');
  const settings = PROVIDER_SETTINGS.get(name);
  return settings ? { fix: `set ${settings.enabledBy} to enable /webhooks/${name}` } : {};
}

/**
 * For a 401: our secret may be the one that is wrong. Said only when the reason does not say it
 * already; a forged request or one a sender left unsigned looks the same to us.
 */
function secretFix(providerName: string, reason: string): Refusal {
  const setting = PROVIDER_SETTINGS.get(providerName)?.secret;
  return setting && !reason.includes(setting) ? { fix: `if the sender is genuine, check ${setting}` } : {};
}

/** The media type a refused request declared, when it is one (a header's value is the sender's to fill). */
function mediaType(req: Request): string | undefined {
  const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  return type && /^[\w.+-]{1,64}\/[\w.+-]{1,64}$/.test(type) ? type : undefined;
}

function stackFrames(err: unknown): string | undefined {
  return (err as Error)?.stack?.split('\n').slice(1, 4).join('\n');
}

function correlationIdOf(req: Request): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && /^[\w.:-]{1,100}$/.test(given) ? given : randomUUID();
}

/** Why a 503 was answered (src/metrics.ts): from the error the start or the store gave. */
export function unavailableReason(err: Error): UnavailableReason {
  if (err instanceof ProviderUnavailableError) return 'store_down';
  const cause = err.cause;
  if (cause instanceof StartTurnTimeoutError) return 'temporal_queued';
  if (cause instanceof TemporalDeadlineError) return 'temporal_slow';
  // gRPC status codes: 4 DEADLINE_EXCEEDED, 14 UNAVAILABLE.
  if (isGrpcServiceError(cause)) {
    if (cause.code === 4) return 'temporal_slow';
    if (cause.code === 14) return 'temporal_down';
  }
  return 'temporal_refused';
}
