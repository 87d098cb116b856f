// The codec server (Temporal's remote codec protocol), for operators only: POST /codec/decode shows a
// logged-in operator the decrypted payloads (Web UI, `temporal` CLI, replyflow CLI); POST /codec/encode
// seals and encrypts operator decisions, and nothing else, for the operator it authenticated
// (src/decision-seal.ts), so that who decided is proven and nobody can encrypt other workflow input
// through it (starting workflows is the receiver's job alone). Operators authenticate on every call:
// their token as a bearer token, or the browser session cookie /codec/login sets.

import { createHmac, randomUUID } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Config } from '../config';
import { createOperatorStore, type OperatorAccount, type OperatorStore } from '../db/operators';
import type { Pool } from '../db/pool';
import { derivedKey, macMatches, sealDecision } from '../decision-seal';
import { errorMessage } from '../failures';
import type { Logger } from '../logger';
import { keyring, payloadCodec } from './client';
import type { AesGcmPayloadCodec } from './codec';

export const CODEC_PATH = '/codec';
/** The browser session cookie set by /codec/login: the Web UI sends it when "include credentials" is on. */
export const SESSION_COOKIE = 'replyflow_codec';
/** Request headers the Web UI and the CLI send to a codec server. */
const ALLOWED_HEADERS = ['content-type', 'x-namespace', 'authorization', 'authorization-extras'];
/** History batches can hold many payloads of up to 2 MB each (Temporal's blob limit). */
const BODY_LIMIT = '16mb';
/** What a decision may carry (workflows/messages.ts `DecisionInput`); `seal` is replaced by ours. */
const DECISION_FIELDS = ['workflowId', 'decision', 'hold', 'action', 'reason', 'externalId', 'seal'];
/** The decisions a seal can be made for (the names of their updates and signals). */
const DECISIONS = ['resolve', 'approve', 'reprocess'];

/**
 * What a workflow shows of itself (its `status` query): its state and the hold a decision would
 * answer, if one awaits it. `undefined`: no such workflow.
 */
export type StatusLookup = (workflowId: string) => Promise<{ state: string; hold?: string } | undefined>;

export interface CodecServerOptions {
  /** The payload codec: its current key encrypts and (through HKDF) keys the seals and sessions. */
  codec: AesGcmPayloadCodec;
  /** Who may call: enabled operator accounts, checked on every request. */
  operators: OperatorStore;
  /** Browser origins allowed to call (the Web UI's); requests from others get no CORS headers. */
  corsOrigins: string[];
  /**
   * Reads a workflow's state and hold, to bind a decision whose body does not name its decision or
   * hold (what an operator types in the Web UI) to what the workflow awaits now.
   */
  statusOf: StatusLookup;
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
    operators: createOperatorStore(pool),
    statusOf,
    corsOrigins:
      config.CODEC_CORS_ORIGINS.length > 0 ? config.CODEC_CORS_ORIGINS : uiOrigins(config.TEMPORAL_UI_URL),
    logger,
  };
}

/** The UI's origin, and its twin for a browser that opened it as localhost instead of 127.0.0.1. */
export function uiOrigins(uiUrl: string | undefined): string[] {
  if (!uiUrl) return [];
  const url = new URL(uiUrl);
  const twins: Record<string, string> = { '127.0.0.1': 'localhost', localhost: '127.0.0.1' };
  const origins = [url.origin];
  const twin = twins[url.hostname];
  if (twin) {
    url.hostname = twin;
    origins.push(url.origin);
  }
  return origins;
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
export interface SessionClaims {
  operator: string;
  /** The credential the operator logged in with: a rotation ends the session. */
  credentialId: string;
  expiresAt: number;
}

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
  return claims.expiresAt > now ? claims : undefined;
}

function cookieValue(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim());
  }
  return undefined;
}

/** Thrown for a payload /codec/encode will not seal; the message names the problem, never the content. */
class NotADecisionError extends Error {
  override name = 'NotADecisionError';
}

/** Thrown when the workflow's status, needed to bind a decision to its hold, cannot be read now. */
class StatusUnavailableError extends Error {
  override name = 'StatusUnavailableError';
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
  if (body.action !== undefined) return 'resolve';
  if (state === 'awaiting_approval') return 'approve';
  if (state === 'failed') return 'reprocess';
  throw new NotADecisionError(
    `${at}: say which decision it is ("decision": "resolve", "approve" or "reprocess"), or give the "action" of a resolve`,
  );
}

/**
 * Seals decisions for an authenticated operator (fresh request id, issued now, the current key),
 * each bound to its workflow, its decision and the hold it answers: as the body names them, else as
 * the workflow's status shows them now. @returns the sealed bodies as json/plain payloads.
 * @throws NotADecisionError for anything that is not a decision; StatusUnavailableError when the
 * status is needed and cannot be read.
 */
export function decisionSealer(options: Pick<CodecServerOptions, 'codec' | 'statusOf' | 'logger'>) {
  const { codec, statusOf, logger } = options;
  return async (payloads: Payload[], account: OperatorAccount): Promise<Payload[]> => {
    const sealed: Payload[] = [];
    for (const [index, payload] of payloads.entries()) {
      const at = `payload ${index + 1}`;
      const body = decisionOf(payload, index);
      if (body.decision !== undefined && !DECISIONS.includes(body.decision as string))
        throw new NotADecisionError(`${at}: decision must be one of ${DECISIONS.join(', ')}`);
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
  const { codec, operators, logger } = options;
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
   * The enabled operator behind a request: its bearer token (looked up by hash), else its session
   * cookie, whose operator must still be enabled with the same credential. Checked against the
   * database every time, so a disabled or rotated operator is refused at once.
   */
  async function operatorOf(req: Request): Promise<OperatorAccount | undefined> {
    const authorization = req.get('authorization');
    if (authorization !== undefined) {
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
      return bearer === undefined ? undefined : operators.authenticate(bearer);
    }
    const claims = openSessionValue(payloadKey, cookieValue(req, SESSION_COOKIE));
    if (!claims) return undefined;
    const account = await operators.get(claims.operator);
    return account && !account.disabled && account.credentialId === claims.credentialId ? account : undefined;
  }

  const requireOperator = async (req: Request, res: Response, next: NextFunction) => {
    res.set('Cache-Control', 'no-store');
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
    res.json({ operator: account.name, roles: account.roles });
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

  const sealDecisions = decisionSealer(options);
  router.get(`${CODEC_PATH}/login`, async (req: Request, res: Response) => {
    const claims = openSessionValue(payloadKey, cookieValue(req, SESSION_COOKIE));
    const account = claims && (await operators.get(claims.operator).catch(() => undefined));
    const current = account && !account.disabled && account.credentialId === claims?.credentialId;
    res
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(current ? signedInPage(account, endpointOf(req)) : loginPage());
  });

  router.post(
    `${CODEC_PATH}/login`,
    express.urlencoded({ extended: false, limit: '4kb' }),
    async (req: Request, res: Response) => {
      res.set('Cache-Control', 'no-store');
      const token = typeof req.body?.token === 'string' ? req.body.token.trim() : '';
      const account = token ? await operators.authenticate(token) : undefined;
      if (!account) {
        logger.warn('codec login refused');
        return void res.status(401).type('html').send(loginPage('refused'));
      }
      const claims = {
        operator: account.name,
        credentialId: account.credentialId,
        expiresAt: Date.now() + sessionMs,
      };
      // SameSite=Strict: the UI and the codec endpoint share a host (same site), nothing else may use it.
      res.cookie(SESSION_COOKIE, sessionValue(payloadKey, claims), {
        path: CODEC_PATH,
        httpOnly: true,
        sameSite: 'strict',
        secure: req.secure,
        maxAge: sessionMs,
      });
      logger.info({ operator: account.name }, 'codec login');
      res.type('html').send(signedInPage(account, endpointOf(req)));
    },
  );

  router.post(`${CODEC_PATH}/logout`, (req: Request, res: Response) => {
    res.clearCookie(SESSION_COOKIE, {
      path: CODEC_PATH,
      httpOnly: true,
      sameSite: 'strict',
      secure: req.secure,
    });
    res.set('Cache-Control', 'no-store').type('html').send(loginPage());
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
<p>In the Temporal Web UI open <b>Codec Server</b> (the icon in the top bar), choose <b>Use my browser
setting</b>, enter the endpoint <code>${escapeHtml(endpoint)}</code>, turn on <b>Include cross-origin
credentials</b> and apply; then reload the page.</p>
<form method="post" action="${CODEC_PATH}/logout"><button type="submit">Sign out</button></form>`);
}

function loginPage(state?: 'refused'): string {
  return page(`${state === 'refused' ? '<p id="codec-status" role="alert">That token is not valid (unknown, disabled or rotated).</p>' : ''}
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
