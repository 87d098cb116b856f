// The codec server (Temporal's remote codec protocol), for operators only: POST /codec/decode shows a
// logged-in operator the decrypted payloads (Web UI, `temporal` CLI); POST /codec/encode
// seals and encrypts operator decisions, and nothing else, for the operator it authenticated
// (src/decision-seal.ts), so that who decided is proven and nobody can encrypt other workflow input
// through it (starting workflows is the receiver's job alone). Operators authenticate on every call:
// their token as a bearer token, or the browser session cookie /codec/login sets, whose session row
// signing out revokes. Failed token checks are limited per source address, sign-ins per operator.

import { createHmac, randomUUID } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { DECISION_NAMES, DECISIONS, decisionList, isDecisionName } from '../../workflows/messages';
import type { Config } from '../config';
import { type AuditLog, createAuditLog } from '../db/audit-log';
import { type CodecSessionStore, createCodecSessionStore } from '../db/codec-sessions';
import { createEventLedger, type EventLedger } from '../db/events';
import { createOperatorStore, type OperatorAccount, type OperatorStore } from '../db/operators';
import type { Pool } from '../db/pool';
import { derivedKey, macMatches, sealDecision } from '../decision-seal';
import { errorMessage } from '../failures';
import type { Logger } from '../logger';
import { AttemptCounter } from '../rate-limit';
import { tenantRefusal } from '../tenants/operator-scope';
import { keyring, payloadCodec } from './client';
import type { AesGcmPayloadCodec } from './codec';
import { NotADecisionError, StatusUnavailableError } from './errors';

export const CODEC_PATH = '/codec';
/** The browser session cookie set by /codec/login: the Web UI sends it when "include credentials" is on. */
export const SESSION_COOKIE = 'replyflow_codec';
/** Request headers the Web UI and the `temporal` CLI send to a codec server. */
const ALLOWED_HEADERS = ['content-type', 'x-namespace', 'authorization', 'authorization-extras'];
/** History batches can hold many payloads of up to 2 MB each (Temporal's blob limit). */
const BODY_LIMIT = '16mb';
/** What a decision may carry (workflows/messages.ts `DecisionInput`); `seal` is replaced by ours. */
const DECISION_FIELDS = ['workflowId', 'decision', 'hold', 'action', 'reason', 'externalId', 'seal'];

/**
 * What a workflow shows of itself (its `status` query): its state and the hold a decision would
 * answer, if one awaits it. `undefined`: no such workflow.
 */
type StatusLookup = (workflowId: string) => Promise<{ state: string; hold?: string } | undefined>;

/**
 * Failed token checks (sign-in form, bearer tokens) one source address may make per
 * {@link SIGN_IN_WINDOW_MS} before it gets 429: a person mistyping is never near it, a guessing loop
 * (277 tries a second were measured without it) is stopped.
 */
export const FAILED_SIGN_INS_PER_SOURCE = 30;
/**
 * Browser sign-ins per operator per window: each one opens a session row, and a token that signs in
 * more often than a person does is being used by something else. The token itself keeps working.
 */
export const SIGN_INS_PER_OPERATOR = 10;
const SIGN_IN_WINDOW_MS = 10 * 60_000;

/**
 * Authenticates operators by their token for the codec server and the operator API alike, and stops
 * a source address that keeps presenting wrong tokens: one budget across both, per receiver.
 */
class OperatorGate {
  readonly failures = new AttemptCounter({
    attempts: FAILED_SIGN_INS_PER_SOURCE,
    windowMs: SIGN_IN_WINDOW_MS,
  });

  constructor(readonly operators: OperatorStore) {}

  /** The client's address: the peer's, or what a proxy TRUST_PROXY names says (Express's `req.ip`). */
  source(req: Request): string {
    return req.ip ?? req.socket.remoteAddress ?? 'unknown';
  }

  /** Seconds this request's source must wait before its next token check, 0 when it may go on. */
  retryAfterSeconds(req: Request): number {
    return this.failures.retryAfterSeconds(this.source(req));
  }

  /** The enabled operator a token belongs to; a wrong token counts against the request's source. */
  async check(req: Request, token: string): Promise<OperatorAccount | undefined> {
    const account = await this.operators.authenticate(token);
    if (!account) this.failures.record(this.source(req));
    return account;
  }

  /**
   * Middleware for JSON endpoints that take only a bearer token (the operator API): the operator in
   * `res.locals.operator`, else 401, 429 (with Retry-After) or 503, each as `{error, code}`.
   */
  requireBearer(logger: Logger): RequestHandler {
    return async (req, res, next) => {
      res.set('Cache-Control', 'no-store');
      const wait = this.retryAfterSeconds(req);
      if (wait > 0)
        return void tooManyFailures(res, wait).json({ error: failuresMessage(wait), code: 'rate_limited' });
      const bearer = bearerToken(req);
      let account: OperatorAccount | undefined;
      try {
        account = bearer === undefined ? undefined : await this.check(req, bearer);
      } catch (err) {
        logger.error({ err: errorMessage(err) }, 'cannot check operator accounts');
        return void res
          .status(503)
          .json({ error: 'cannot check operator accounts now; try again', code: 'unavailable' });
      }
      if (!account) {
        res.set('WWW-Authenticate', 'Bearer realm="replyflow"');
        return void res.status(401).json({
          error:
            'an operator token is required (Authorization: Bearer); a disabled or rotated one no longer counts',
          code: 'token_refused',
        });
      }
      res.locals.operator = account;
      next();
    };
  }
}

/** The token of an `Authorization: Bearer …` header; undefined for none or another scheme. */
function bearerToken(req: Request): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
}

function tooManyFailures(res: Response, seconds: number): Response {
  return res.status(429).set('Retry-After', String(seconds));
}

const failuresMessage = (seconds: number) =>
  `too many failed sign-ins from this address; try again in ${seconds} s`;

export interface CodecServerOptions {
  /** The payload codec: its current key encrypts and (through HKDF) keys the seals and sessions. */
  codec: AesGcmPayloadCodec;
  /** Who may call: enabled operator accounts, checked on every request, and the source limit. */
  gate: OperatorGate;
  /** Browser sessions: one row per sign-in, revoked by signing out. */
  sessions: CodecSessionStore;
  /** Browser origins allowed to call (the Web UI's); requests from others get no CORS headers. */
  corsOrigins: string[];
  /**
   * Reads a workflow's state and hold, to bind a decision whose body does not name its decision or
   * hold (what an operator types in the Web UI) to what the workflow awaits now.
   */
  statusOf: StatusLookup;
  /** Whose work a workflow is (the event ledger): an operator limited to tenants seals only for theirs. */
  work: Pick<EventLedger, 'tenantOf'>;
  /** Where a refusal to seal for another tenant's work is written. */
  audit: AuditLog;
  /** Mark the session cookie `Secure` even where the request did not arrive over TLS. @default false */
  cookieSecure?: boolean;
  /** How long a browser login lasts. @default 12 hours */
  sessionMs?: number;
  logger: Logger;
}

/** The codec server as the receiver mounts it: the operators table, the payload keys, the UI's origins. */
export function codecServerOptions(
  config: Config,
  encryptionKey: string,
  pool: Pool,
  statusOf: StatusLookup,
  logger: Logger,
): CodecServerOptions {
  return {
    codec: payloadCodec(encryptionKey, keyring(config)),
    gate: new OperatorGate(createOperatorStore(pool)),
    sessions: createCodecSessionStore(pool),
    statusOf,
    work: createEventLedger(pool),
    audit: createAuditLog(pool),
    corsOrigins:
      config.CODEC_CORS_ORIGINS.length > 0 ? config.CODEC_CORS_ORIGINS : uiOrigins(config.TEMPORAL_UI_URL),
    cookieSecure: config.CODEC_COOKIE_SECURE,
    logger,
  };
}

/**
 * The UI's origin exactly as it is bound. No `localhost` twin of `127.0.0.1` (or back): browsers try
 * `::1` first for localhost, where another user of this machine may listen and serve a page of their
 * own under that origin. A UI opened under another name is listed in CODEC_CORS_ORIGINS.
 */
export function uiOrigins(uiUrl: string | undefined): string[] {
  return uiUrl ? [new URL(uiUrl).origin] : [];
}

const jsonPayload = z.object({
  metadata: z.record(z.string(), z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'base64')).optional(),
  data: z
    .string()
    .regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'base64')
    .optional(),
  externalPayloads: z.array(z.record(z.string(), z.unknown())).optional(),
});
const payloadsBody = z.object({ payloads: z.array(jsonPayload) });

const { Payloads } = temporal.api.common.v1;

/** Who a browser session belongs to, and until when. */
interface SessionClaims {
  /** The session's row (codec_sessions): signing out revokes it. */
  sessionId: string;
  operator: string;
  /** The credential the operator logged in with: a rotation ends the session. */
  credentialId: string;
  expiresAt: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function sessionMac(payloadKey: Buffer, encodedClaims: string): Buffer {
  return createHmac('sha256', derivedKey(payloadKey, 'codec session v1')).update(encodedClaims).digest();
}

/** A session cookie's value: the claims and their MAC. It names the operator; it carries no token. */
export function sessionValue(payloadKey: Buffer, claims: SessionClaims): string {
  const encoded = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${encoded}.${sessionMac(payloadKey, encoded).toString('base64url')}`;
}

/** The claims of a session value whose MAC verifies (compared in constant time) and that has not expired. */
function openSessionValue(
  payloadKey: Buffer,
  value: string | undefined,
  now = Date.now(),
): SessionClaims | undefined {
  const match = value ? /^([\w-]{1,400})\.([\w-]{43})$/.exec(value) : null;
  if (!match) return undefined;
  const [, encoded, mac] = match as unknown as [string, string, string];
  const given = Buffer.from(mac, 'base64url');
  const expected = sessionMac(payloadKey, encoded);
  if (!macMatches(given, expected)) return undefined;
  const claims = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as SessionClaims;
  // A cookie from before sessions had rows names none: its browser signs in again.
  const named = typeof claims.sessionId === 'string' && UUID.test(claims.sessionId);
  return named && claims.expiresAt > now ? claims : undefined;
}

/** A cookie's value; one that is not valid percent-encoding is no value (no session), not an error. */
function cookieValue(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at <= 0 || part.slice(0, at).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(at + 1).trim());
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** The decision a payload carries: a json/plain JSON object with a workflowId and only a decision's fields. */
function decisionOf(payload: Payload, index: number): Record<string, unknown> & { workflowId: string } {
  const at = `payload ${index + 1}`;
  const encoding = new TextDecoder().decode(payload.metadata?.[METADATA_ENCODING_KEY] ?? new Uint8Array());
  if (encoding !== 'json/plain')
    throw new NotADecisionError(`${at} is ${encoding || 'unencoded'}, not json/plain`);
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(payload.data ?? new Uint8Array()));
  } catch {
    throw new NotADecisionError(`${at} is not JSON`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new NotADecisionError(`${at} is not one JSON object`);
  const fields = Object.entries(body as Record<string, unknown>);
  if (fields.some(([key]) => !DECISION_FIELDS.includes(key)))
    throw new NotADecisionError(`${at} has fields other than ${DECISION_FIELDS.slice(0, -1).join(', ')}`);
  if (fields.some(([key, value]) => key !== 'seal' && typeof value !== 'string'))
    throw new NotADecisionError(`${at}: every field of a decision is a string`);
  const { seal: _replaced, ...decision } = body as Record<string, string>;
  if (!decision.workflowId) throw new NotADecisionError(`${at} has no workflowId`);
  return decision as Record<string, unknown> & { workflowId: string };
}

/** The decision a body is: the one it names, else `resolve` when it carries an action, else what the state awaits. */
function decisionFor(body: Record<string, unknown>, state: string | undefined, at: string): string {
  if (body.decision !== undefined) return body.decision as string;
  const implied = DECISION_NAMES.find((name) =>
    body.action !== undefined
      ? DECISIONS[name].takesAction
      : state !== undefined && DECISIONS[name].impliedBy === state,
  );
  if (implied) return implied;
  throw new NotADecisionError(
    `${at}: say which decision it is ("decision": ${decisionList('"')}), or give the "action" of a resolve`,
  );
}

/**
 * Seals decisions for an authenticated operator (fresh request id, issued now, the current key),
 * each bound to its workflow, its decision and the hold it answers: as the body names them, else as
 * the workflow's status shows them now. @returns the sealed bodies as json/plain payloads.
 * @throws NotADecisionError for anything that is not a decision; StatusUnavailableError when the
 * status is needed and cannot be read.
 */
export function decisionSealer(
  options: Pick<CodecServerOptions, 'codec' | 'statusOf' | 'logger' | 'work' | 'audit'>,
) {
  const { codec, statusOf, logger } = options;
  return async (payloads: Payload[], account: OperatorAccount): Promise<Payload[]> => {
    const sealed: Payload[] = [];
    for (const [index, payload] of payloads.entries()) {
      const at = `payload ${index + 1}`;
      const body = decisionOf(payload, index);
      if (body.decision !== undefined && !isDecisionName(body.decision))
        throw new NotADecisionError(`${at}: decision must be one of ${DECISION_NAMES.join(', ')}`);
      await refuseOtherTenants(account, body);
      const named = body.hold !== undefined && (body.decision !== undefined || body.action !== undefined);
      const status = named ? undefined : await readStatus(body.workflowId);
      const decision = decisionFor(body, status?.state, at);
      const hold = (body.hold as string | undefined) ?? status?.hold;
      if (!hold)
        throw new NotADecisionError(
          `${body.workflowId} awaits no decision (state ${status?.state ?? 'unknown'}): nothing to seal`,
        );
      const sealedBody = sealDecision(
        body,
        {
          operator: account.name,
          credentialId: account.credentialId,
          workflowId: body.workflowId,
          decision,
          hold,
          requestId: randomUUID(),
          issuedAt: Date.now(),
        },
        codec.currentKey,
      );
      sealed.push({
        metadata: { [METADATA_ENCODING_KEY]: new TextEncoder().encode('json/plain') },
        data: new TextEncoder().encode(JSON.stringify(sealedBody)),
      });
    }
    logger.info({ operator: account.name, decisions: sealed.length }, 'codec: decisions sealed');
    return sealed;
  };

  /**
   * An operator limited to tenants gets no seal for another tenant's work (nor work without one): the
   * refusal is audited, and the workflow reads as not found. The worker's decision check refuses
   * such a decision again, should a seal for it come from elsewhere.
   */
  async function refuseOtherTenants(account: OperatorAccount, body: Record<string, unknown>) {
    const workflowId = body.workflowId as string;
    const refusal = await tenantRefusal(options.work, account, workflowId);
    if (!refusal) return;
    await options.audit.append([
      {
        actor: account.name,
        action: String(body.action ?? body.decision ?? 'decision').slice(0, 40),
        workflowId,
        reason: typeof body.reason === 'string' ? body.reason.slice(0, 500) : undefined,
        result: `rejected: ${refusal}`,
      },
    ]);
    logger.info({ operator: account.name }, 'codec: refused to seal for another tenant');
    throw new NotADecisionError(`no running workflow ${workflowId}`);
  }

  async function readStatus(workflowId: string) {
    let status: Awaited<ReturnType<StatusLookup>>;
    try {
      status = await statusOf(workflowId);
    } catch (err) {
      throw new StatusUnavailableError(
        `cannot read ${workflowId}'s status to bind the decision to the hold it answers (${errorMessage(err)}); try again`,
      );
    }
    if (!status) throw new NotADecisionError(`no running workflow ${workflowId}`);
    return status;
  }
}

export function codecRouter(options: CodecServerOptions): express.Router {
  const { codec, gate, sessions, logger } = options;
  const { operators } = gate;
  const signIns = new AttemptCounter({ attempts: SIGN_INS_PER_OPERATOR, windowMs: SIGN_IN_WINDOW_MS });
  const sessionMs = options.sessionMs ?? 12 * 3_600_000;
  const origins = new Set(options.corsOrigins);
  const router = express.Router();
  // Sessions are keyed by the current payload key: rotating it ends every session.
  const { payloadKey } = codec.currentKey;

  // CORS for the Web UI: its requests carry X-Namespace (and may carry credentials), so browsers
  // send a preflight first. Only listed origins get an answer they can read.
  router.use(CODEC_PATH, (req: Request, res: Response, next: NextFunction) => {
    const origin = req.get('origin');
    const allowed = origin !== undefined && origins.has(origin);
    res.vary('Origin');
    if (allowed) {
      res.set('Access-Control-Allow-Origin', origin);
      res.set('Access-Control-Allow-Credentials', 'true');
    }
    if (req.method !== 'OPTIONS') return next();
    if (!allowed) return void res.status(403).json({ error: 'origin not allowed' });
    const requested = (req.get('access-control-request-headers') ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean);
    const refused = requested.filter((h) => !ALLOWED_HEADERS.includes(h));
    if (refused.length > 0) return void res.status(403).json({ error: `headers not allowed: ${refused}` });
    res.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.set('Access-Control-Allow-Headers', ALLOWED_HEADERS.join(', '));
    res.set('Access-Control-Max-Age', '600');
    res.status(204).end();
  });

  /**
   * The operator of a session cookie: its row still open (not signed out, not expired), its operator
   * still enabled with the credential it signed in with. Checked against the database every time, so
   * a sign-out, a disable or a rotation ends it at once.
   */
  async function sessionOperator(req: Request): Promise<OperatorAccount | undefined> {
    const claims = openSessionValue(payloadKey, cookieValue(req, SESSION_COOKIE));
    if (!claims || !(await sessions.isOpen(claims.sessionId))) return undefined;
    const account = await operators.get(claims.operator);
    return account && !account.disabled && account.credentialId === claims.credentialId ? account : undefined;
  }

  /**
   * The enabled operator behind a request: its bearer token (looked up by hash; a wrong one counts
   * against the source's limit), else its session cookie.
   */
  async function operatorOf(req: Request): Promise<OperatorAccount | undefined> {
    if (req.get('authorization') !== undefined) {
      const bearer = bearerToken(req);
      return bearer === undefined ? undefined : gate.check(req, bearer);
    }
    return sessionOperator(req);
  }

  const requireOperator = async (req: Request, res: Response, next: NextFunction) => {
    res.set('Cache-Control', 'no-store');
    const wait = gate.retryAfterSeconds(req);
    if (wait > 0) return void tooManyFailures(res, wait).json({ error: failuresMessage(wait) });
    let account: OperatorAccount | undefined;
    try {
      account = await operatorOf(req);
    } catch (err) {
      logger.error({ err: errorMessage(err) }, 'codec: cannot check operator accounts');
      return void res.status(503).json({ error: 'cannot check operator accounts now; try again' });
    }
    if (!account) {
      res.set('WWW-Authenticate', 'Bearer realm="replyflow codec"');
      return void res.status(401).json({
        error:
          'an operator token (Authorization: Bearer) or a codec login is required; a disabled or rotated one no longer counts',
      });
    }
    res.locals.operator = account;
    next();
  };

  router.get(/^\/codec(?:\/[^/]+)*\/whoami$/, requireOperator, (_req: Request, res: Response) => {
    const account = res.locals.operator as OperatorAccount;
    res.json({
      operator: account.name,
      roles: account.roles,
      ...(account.tenants ? { tenants: account.tenants } : {}),
    });
  });

  // The protocol says to look only at the last path segment, so a proxy may mount us at any depth.
  router.post(
    /^\/codec(?:\/[^/]+)*\/(encode|decode)$/,
    requireOperator,
    express.json({ limit: BODY_LIMIT }),
    async (req: Request, res: Response) => {
      const account = res.locals.operator as OperatorAccount;
      const parsed = payloadsBody.safeParse(req.body);
      if (!parsed.success) {
        return void res.status(400).json({
          error: 'expected {"payloads":[{"metadata":{…},"data":"…"}]}',
          issues: parsed.error.issues,
        });
      }
      const operation = req.path.endsWith('/encode') ? 'encode' : 'decode';
      // Temporal's codec protocol does not say whose workflow a payload is from, so a decode cannot
      // be limited to some tenants: an operator who is limited reads their work through the CLI.
      if (operation === 'decode' && account.tenants !== null) {
        logger.info({ operator: account.name }, 'codec: decode refused to an operator limited to tenants');
        return void res.status(403).json({
          error: `${account.name} works for some tenants only, and a payload does not say whose it is: use \`replyflow show\` (decisions may still be sent from the Web UI)`,
        });
      }
      const payloads = Payloads.fromObject(parsed.data).payloads;
      let converted: Payload[];
      try {
        converted =
          operation === 'encode'
            ? await codec.encode(await sealDecisions(payloads, account))
            : await codec.decode(payloads);
      } catch (err) {
        if (err instanceof StatusUnavailableError) {
          logger.warn({ operator: account.name, err: err.message }, 'codec: cannot bind a decision now');
          return void res.status(503).set('Retry-After', '5').json({ error: err.message });
        }
        if (err instanceof NotADecisionError) {
          logger.warn({ operator: account.name, err: err.message }, 'codec: refused to encode');
          return void res
            .status(422)
            .json({ error: `the codec server encodes operator decisions only: ${err.message}` });
        }
        // The codec's messages name a key id or a failed authentication tag, never payload content.
        logger.warn({ operation, operator: account.name, err: errorMessage(err) }, 'codec request failed');
        return void res.status(422).json({ error: `could not ${operation}: ${errorMessage(err)}` });
      }
      res.json(Payloads.toObject(Payloads.create({ payloads: converted }), { bytes: String }));
    },
  );

  /**
   * Secure when configured (CODEC_COOKIE_SECURE) or when the request came over TLS, directly or as a
   * trusted proxy says (TRUST_PROXY): a client's own X-Forwarded-Proto is never believed.
   */
  const cookieOptions = (req: Request) => ({
    path: CODEC_PATH,
    httpOnly: true,
    // The UI and the codec endpoint share a host (same site), nothing else may use it.
    sameSite: 'strict' as const,
    secure: Boolean(options.cookieSecure) || req.secure,
  });

  const sealDecisions = decisionSealer(options);
  router.get(`${CODEC_PATH}/login`, async (req: Request, res: Response) => {
    const account = await sessionOperator(req).catch(() => undefined);
    res
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(account ? signedInPage(account, endpointOf(req)) : loginPage());
  });

  router.post(
    `${CODEC_PATH}/login`,
    express.urlencoded({ extended: false, limit: '4kb' }),
    async (req: Request, res: Response) => {
      res.set('Cache-Control', 'no-store');
      const fromSource = gate.retryAfterSeconds(req);
      if (fromSource > 0) {
        logger.warn('codec login limited: too many failed sign-ins from one address');
        return void tooManyFailures(res, fromSource)
          .type('html')
          .send(loginPage(failuresMessage(fromSource)));
      }
      const token = typeof req.body?.token === 'string' ? req.body.token.trim() : '';
      let account: OperatorAccount | undefined;
      try {
        account = await gate.check(req, token);
      } catch (err) {
        logger.error({ err: errorMessage(err) }, 'codec: cannot check operator accounts');
        return void res.status(503).type('html').send(loginPage('Cannot sign in just now: try again.'));
      }
      if (!account) {
        logger.warn('codec login refused');
        return void res
          .status(401)
          .type('html')
          .send(loginPage('That token is not valid (unknown, disabled or rotated).'));
      }
      const forOperator = signIns.retryAfterSeconds(account.name);
      if (forOperator > 0) {
        logger.warn({ operator: account.name }, 'codec login limited: too many sign-ins for one operator');
        return void tooManyFailures(res, forOperator)
          .type('html')
          .send(loginPage(`too many sign-ins for this operator; try again in ${forOperator} s`));
      }
      signIns.record(account.name);
      const expiresAt = Date.now() + sessionMs;
      let sessionId: string;
      try {
        sessionId = await sessions.open({
          operator: account.name,
          credentialId: account.credentialId,
          expiresAt: new Date(expiresAt),
        });
      } catch (err) {
        logger.error({ err: errorMessage(err) }, 'codec: cannot open a session');
        return void res.status(503).type('html').send(loginPage('Cannot sign in just now: try again.'));
      }
      const claims = { sessionId, operator: account.name, credentialId: account.credentialId, expiresAt };
      res.cookie(SESSION_COOKIE, sessionValue(payloadKey, claims), {
        ...cookieOptions(req),
        maxAge: sessionMs,
      });
      logger.info({ operator: account.name }, 'codec login');
      res.type('html').send(signedInPage(account, endpointOf(req)));
    },
  );

  // Ends the session on the server too: a copy of the cookie taken before is worth nothing after.
  router.post(`${CODEC_PATH}/logout`, async (req: Request, res: Response) => {
    res.set('Cache-Control', 'no-store');
    const claims = openSessionValue(payloadKey, cookieValue(req, SESSION_COOKIE));
    if (claims) {
      try {
        await sessions.revoke(claims.sessionId);
      } catch (err) {
        logger.error({ err: errorMessage(err) }, 'codec: cannot sign out');
        return void res.status(503).type('html').send(loginPage('Could not sign out just now: try again.'));
      }
      logger.info({ operator: claims.operator }, 'codec logout');
    }
    res.clearCookie(SESSION_COOKIE, cookieOptions(req));
    res.type('html').send(loginPage());
  });

  return router;
}

/** This codec endpoint as the browser reached it, for the UI's browser setting. */
function endpointOf(req: Request): string {
  return `${req.protocol}://${req.get('host') ?? 'localhost'}${CODEC_PATH}`;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function signedInPage(account: OperatorAccount, endpoint: string): string {
  return page(`<p id="codec-status" role="status">Signed in as <b id="codec-operator">${escapeHtml(account.name)}</b>
(roles: ${escapeHtml(account.roles.join(', '))}): this browser may now decode payloads, and decisions it
sends are sealed for ${escapeHtml(account.name)}.</p>
<p>Reload the Temporal Web UI: the UI of <code>replyflow start</code> (and one configured with
<code>TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true</code>) decodes through this endpoint with this login. A UI set
up otherwise: open <b>Codec Server</b> (the icon in its top bar), choose <b>Use my browser setting</b>,
enter the endpoint <code>${escapeHtml(endpoint)}</code>, turn on <b>Include cross-origin credentials</b>,
apply and reload.</p>
<form method="post" action="${CODEC_PATH}/logout"><button type="submit">Sign out</button></form>`);
}

/** The sign-in form, after `problem` when the last attempt did not sign in. */
function loginPage(problem?: string): string {
  return page(`${problem ? `<p id="codec-status" role="alert">${escapeHtml(problem)}</p>` : ''}
<form method="post" action="${CODEC_PATH}/login">
<label>Operator token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Sign in</button></form>
<p>No token? An admin creates one: <code>replyflow operator add &lt;name&gt; --roles …</code>.</p>`);
}

function page(body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>replyflow codec login</title>
<style>body{font:15px system-ui,sans-serif;max-width:640px;margin:2em auto;padding:0 1em}input{width:100%;padding:.4em;margin:.4em 0}</style>
</head><body><h1>replyflow codec server</h1>
<p>Payloads in Temporal history are encrypted. Sign in with your operator token to let the Temporal Web
UI in this browser show them decrypted and send decisions in your name.</p>
${body}
</body></html>`;
}
