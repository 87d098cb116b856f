// The codec server (Temporal's remote codec protocol): POST /codec/encode and /codec/decode with
// `{ payloads: [...] }` in proto JSON, so that authorised operators read decrypted payloads in the
// Web UI and the `temporal` CLI, and signals typed in the UI are encrypted like the workers' own.

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Config } from '../config';
import { errorMessage } from '../failures';
import type { Logger } from '../logger';
import { keyring, payloadCodec } from './client';

export const CODEC_PATH = '/codec';
/** Where `replyflow start` keeps the codec token it generated, under the data dir. */
export const CODEC_TOKEN_FILE = 'codec.token';
/** The browser session cookie set by /codec/login: the Web UI sends it when "include credentials" is on. */
export const SESSION_COOKIE = 'replyflow_codec';
/** Request headers the Web UI and the CLI send to a codec server. */
const ALLOWED_HEADERS = ['content-type', 'x-namespace', 'authorization', 'authorization-extras'];
/** History batches can hold many payloads of up to 2 MB each (Temporal's blob limit). */
const BODY_LIMIT = '16mb';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** What `Authorization: Bearer …` must carry (CODEC_AUTH_TOKEN). */
  authToken: string;
  /** Browser origins allowed to call (the Web UI's); requests from others get no CORS headers. */
  corsOrigins: string[];
  /** How long a browser login lasts. @default 12 hours */
  sessionMs?: number;
  logger: Logger;
}

/** The codec server as the receiver mounts it: the configured token and origins, the payload keys. */
export function codecServerOptions(
  config: Config,
  encryptionKey: string,
  logger: Logger,
): CodecServerOptions {
  if (!config.CODEC_AUTH_TOKEN) throw new Error('the codec server needs CODEC_AUTH_TOKEN');
  return {
    codec: payloadCodec(encryptionKey, keyring(config)),
    authToken: config.CODEC_AUTH_TOKEN,
    corsOrigins:
      config.CODEC_CORS_ORIGINS.length > 0 ? config.CODEC_CORS_ORIGINS : uiOrigins(config.TEMPORAL_UI_URL),
    logger,
  };
}

/**
 * The codec server's token: CODEC_AUTH_TOKEN, else the token file under the data dir, which is
 * created when `create` is set (the embedded launcher). Undefined: no codec server.
 */
export function resolveCodecToken(config: Config, options: { create?: boolean } = {}): string | undefined {
  if (config.CODEC_AUTH_TOKEN) return config.CODEC_AUTH_TOKEN;
  const file = codecTokenFile(config);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  if (!options.create) return undefined;
  mkdirSync(config.REPLYFLOW_DATA_DIR, { recursive: true });
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

export function codecTokenFile(config: Config): string {
  return path.join(config.REPLYFLOW_DATA_DIR, CODEC_TOKEN_FILE);
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

/** Equal-time comparison of two secrets of any length (hashing first hides the length). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

function sessionMac(token: string, expiresAt: number): string {
  return createHmac('sha256', token).update(`replyflow-codec-session:${expiresAt}`).digest('base64url');
}

/** A session value proves the token was presented without carrying it; it ends at `expiresAt`. */
export function sessionValue(token: string, expiresAt: number): string {
  return `${expiresAt}.${sessionMac(token, expiresAt)}`;
}

function validSession(token: string, value: string | undefined, now = Date.now()): boolean {
  const match = value ? /^(\d{10,16})\.([\w-]{43})$/.exec(value) : null;
  if (!match) return false;
  const expiresAt = Number(match[1]);
  return expiresAt > now && sameSecret(match[2]!, sessionMac(token, expiresAt));
}

function cookieValue(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim());
  }
  return undefined;
}

export function codecRouter(options: CodecServerOptions): express.Router {
  const { codec, authToken, logger } = options;
  const sessionMs = options.sessionMs ?? 12 * 3_600_000;
  const origins = new Set(options.corsOrigins);
  const router = express.Router();

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

  const authorised = (req: Request): boolean => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
    if (bearer !== undefined) return sameSecret(bearer, authToken);
    return validSession(authToken, cookieValue(req, SESSION_COOKIE));
  };

  // The protocol says to look only at the last path segment, so a proxy may mount us at any depth.
  router.post(
    /^\/codec(?:\/[^/]+)*\/(encode|decode)$/,
    express.json({ limit: BODY_LIMIT }),
    async (req: Request, res: Response) => {
      res.set('Cache-Control', 'no-store');
      if (!authorised(req)) {
        res.set('WWW-Authenticate', 'Bearer realm="replyflow codec"');
        return void res.status(401).json({ error: 'a valid bearer token or codec login is required' });
      }
      const parsed = payloadsBody.safeParse(req.body);
      if (!parsed.success) {
        return void res.status(400).json({
          error: 'expected {"payloads":[{"metadata":{…},"data":"…"}]}',
          issues: parsed.error.issues,
        });
      }
      const operation = req.path.endsWith('/encode') ? 'encode' : 'decode';
      const payloads = Payloads.fromObject(parsed.data).payloads;
      let converted: typeof payloads;
      try {
        converted = await (operation === 'encode' ? codec.encode(payloads) : codec.decode(payloads));
      } catch (err) {
        // The codec's messages name a key id or a failed authentication tag, never payload content.
        logger.warn({ operation, err: errorMessage(err) }, 'codec request failed');
        return void res.status(422).json({ error: `could not ${operation}: ${errorMessage(err)}` });
      }
      res.json(Payloads.toObject(Payloads.create({ payloads: converted }), { bytes: String }));
    },
  );

  router.get(`${CODEC_PATH}/login`, (req: Request, res: Response) => {
    const signedIn = validSession(authToken, cookieValue(req, SESSION_COOKIE));
    res
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(loginPage(signedIn ? 'signed-in' : 'form', endpointOf(req)));
  });

  router.post(
    `${CODEC_PATH}/login`,
    express.urlencoded({ extended: false, limit: '4kb' }),
    (req: Request, res: Response) => {
      res.set('Cache-Control', 'no-store');
      const token = typeof req.body?.token === 'string' ? req.body.token.trim() : '';
      if (!sameSecret(token, authToken)) {
        logger.warn('codec login refused');
        return void res
          .status(401)
          .type('html')
          .send(loginPage('refused', endpointOf(req)));
      }
      const expiresAt = Date.now() + sessionMs;
      // SameSite=Strict: the UI and the codec endpoint share a host (same site), nothing else may use it.
      res.cookie(SESSION_COOKIE, sessionValue(authToken, expiresAt), {
        path: CODEC_PATH,
        httpOnly: true,
        sameSite: 'strict',
        secure: req.secure,
        maxAge: sessionMs,
      });
      logger.info('codec login');
      res.type('html').send(loginPage('signed-in', endpointOf(req)));
    },
  );

  router.post(`${CODEC_PATH}/logout`, (req: Request, res: Response) => {
    res.clearCookie(SESSION_COOKIE, {
      path: CODEC_PATH,
      httpOnly: true,
      sameSite: 'strict',
      secure: req.secure,
    });
    res
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(loginPage('form', endpointOf(req)));
  });

  return router;
}

/** This codec endpoint as the browser reached it, for the UI's browser setting. */
function endpointOf(req: Request): string {
  return `${req.protocol}://${req.get('host') ?? 'localhost'}${CODEC_PATH}`;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function loginPage(state: 'form' | 'refused' | 'signed-in', endpoint: string): string {
  const body =
    state === 'signed-in'
      ? `<p id="codec-status" role="status">Signed in: this browser may now decode payloads.</p>
<p>In the Temporal Web UI open <b>Codec Server</b> (the icon in the top bar), choose <b>Use my browser
setting</b>, enter the endpoint <code>${escapeHtml(endpoint)}</code>, turn on <b>Include cross-origin
credentials</b> and apply; then reload the page.</p>
<form method="post" action="${CODEC_PATH}/logout"><button type="submit">Sign out</button></form>`
      : `${state === 'refused' ? '<p id="codec-status" role="alert">That token is not valid.</p>' : ''}
<form method="post" action="${CODEC_PATH}/login">
<label>Codec token (CODEC_AUTH_TOKEN) <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Sign in</button></form>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>replyflow codec login</title>
<style>body{font:15px system-ui,sans-serif;max-width:640px;margin:2em auto;padding:0 1em}input{width:100%;padding:.4em;margin:.4em 0}</style>
</head><body><h1>replyflow codec server</h1>
<p>Payloads in Temporal history are encrypted. Sign in with the codec token to let the Temporal Web UI
in this browser show them decrypted.</p>
${body}
</body></html>`;
}
