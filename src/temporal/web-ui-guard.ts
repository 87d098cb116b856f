// The embedded Temporal Web UI's front door. The UI server answers any Host header, so a page on a
// host name rebound to 127.0.0.1 is "same origin" to it and passes its CSRF check; the UI therefore
// listens where browsers never connect (browser-blocked-ports.ts), and this proxy, on the port the
// banner prints, passes on only what is addressed to this machine by name and comes from the UI's own
// origin, or is a person opening a page (an alert's link). It also completes the UI's codec settings
// (codecSettings): the cluster-level codec endpoint goes with the browser's codec login cookie, and
// the banner shown while decoding fails links to that login, so the UI's own dialog is never needed.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebUiGuardListenError } from './errors';

interface WebUiGuardOptions {
  /** Where operators open the UI: the banner's port, on 127.0.0.1. */
  port: number;
  /** The UI server itself, on 127.0.0.1. */
  upstreamPort: number;
  /**
   * The codec server's login page, when the UI is started with its codec endpoint: the UI's settings
   * then send the login cookie along and name this page in the banner (codecSettings).
   */
  codecLogin?: string;
}

export interface WebUiGuard {
  url: string;
  close(): Promise<void>;
}

/** The Host headers a browser sends for the UI's own addresses (no port for 80, as browsers omit it). */
function uiHosts(port: number): string[] {
  const names = ['127.0.0.1', 'localhost'];
  return names.flatMap((name) => (port === 80 ? [name, `${name}:80`] : [`${name}:${port}`]));
}

/**
 * Why a request to the UI is refused, or undefined when it may pass: a Host that is not one of the
 * UI's own names (DNS rebinding), an Origin other than the UI's, or a request that another site's
 * page made (Sec-Fetch-Site) other than a top-level navigation. Clients that are not browsers send
 * neither Origin nor Sec-Fetch-*, and pass on their Host alone.
 */
export function refusal(
  req: Pick<http.IncomingMessage, 'method' | 'headers'>,
  port: number,
): string | undefined {
  const host = req.headers.host?.toLowerCase();
  if (!host || !uiHosts(port).includes(host))
    return `this Temporal Web UI answers only at http://127.0.0.1:${port} or http://localhost:${port}`;
  const { origin } = req.headers;
  if (origin !== undefined && origin.toLowerCase() !== `http://${host}`)
    return 'the Temporal Web UI refuses requests from other origins';
  const site = req.headers['sec-fetch-site'];
  const opensPage =
    req.headers['sec-fetch-mode'] === 'navigate' &&
    req.headers['sec-fetch-dest'] === 'document' &&
    (req.method === 'GET' || req.method === 'HEAD');
  if ((site === 'cross-site' || site === 'same-site') && !opensPage)
    return 'the Temporal Web UI refuses requests from other origins';
  return undefined;
}

/** Where the UI's page reads its settings (Temporal UI's `GET /api/v1/settings`). */
export const SETTINGS_PATH = '/api/v1/settings';

/** What the UI's banner says while it cannot decode, before the link to the codec login. */
export const CODEC_BANNER =
  'Encrypted: sign in with your operator token at the codec login, then reload this page:';

/**
 * The UI server's settings answer (JSON) with the codec's completed: its cluster-level endpoint is
 * called with credentials, so the browser sends the SameSite=Strict login cookie of that endpoint's
 * host (what TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true does for a UI in a container), and the banner
 * names the login page instead of Temporal's docs. Nothing else changes; no endpoint, no change.
 */
export function codecSettings(body: string, codecLogin: string): string {
  const settings = JSON.parse(body) as { Codec?: Record<string, unknown> | null };
  if (!settings.Codec?.Endpoint) return body;
  settings.Codec = {
    ...settings.Codec,
    IncludeCredentials: true,
    DefaultErrorMessage: CODEC_BANNER,
    DefaultErrorLink: codecLogin,
  };
  return JSON.stringify(settings);
}

/** Connection-level headers: each hop sets its own (RFC 9110, section 7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

function endToEnd(raw: string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < raw.length; i += 2)
    if (!HOP_BY_HOP.has(raw[i]!.toLowerCase())) kept.push(raw[i]!, raw[i + 1]!);
  return kept;
}

function answer(res: http.ServerResponse, status: number, message: string): void {
  res
    .writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' })
    .end(`${message}\n`);
}

/** Headers without the named ones (lower case), from a raw list. */
function without(raw: string[], names: string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < raw.length; i += 2)
    if (!names.includes(raw[i]!.toLowerCase())) kept.push(raw[i]!, raw[i + 1]!);
  return kept;
}

/**
 * Passes one allowed request to the UI server and its answer back, streaming both bodies; the
 * settings answer is read whole (asked for uncompressed, unconditionally) to complete its codec part.
 */
function forward(req: http.IncomingMessage, res: http.ServerResponse, options: WebUiGuardOptions): void {
  const { codecLogin } = options;
  const settings =
    codecLogin !== undefined && req.method === 'GET' && req.url?.split('?')[0] === SETTINGS_PATH;
  const headers = endToEnd(req.rawHeaders);
  const upstream = http.request(
    {
      host: '127.0.0.1',
      port: options.upstreamPort,
      method: req.method,
      path: req.url,
      // Whole and fresh: a 304 would keep settings a browser cached before they were completed.
      headers: settings
        ? without(headers, ['accept-encoding', 'if-none-match', 'if-modified-since'])
        : headers,
    },
    (reply) => {
      if (!settings || reply.statusCode !== 200) {
        res.writeHead(reply.statusCode ?? 502, reply.statusMessage, endToEnd(reply.rawHeaders));
        return void reply.pipe(res);
      }
      const chunks: Buffer[] = [];
      reply.on('error', () => res.destroy());
      reply.on('data', (chunk: Buffer) => chunks.push(chunk));
      reply.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let completed: string;
        try {
          completed = codecSettings(body, codecLogin);
        } catch {
          completed = body; // not the JSON we know: the UI reads it as it is
        }
        const changed = ['content-length', 'content-encoding', 'etag', 'last-modified', 'cache-control'];
        res.writeHead(200, reply.statusMessage, [
          ...without(endToEnd(reply.rawHeaders), changed),
          'content-length',
          String(Buffer.byteLength(completed)),
          'cache-control',
          'no-store',
        ]);
        res.end(completed);
      });
    },
  );
  upstream.on('error', () => {
    if (res.headersSent) res.destroy();
    else answer(res, 502, 'the Temporal Web UI is not answering: is the embedded Temporal still running?');
  });
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

/**
 * Listens on 127.0.0.1:`port` in front of the UI server on `upstreamPort`. Upgrades (websockets)
 * are not passed on: the UI uses none.
 */
export async function startWebUiGuard(options: WebUiGuardOptions): Promise<WebUiGuard> {
  const server = http.createServer((req, res) => {
    const why = refusal(req, options.port);
    if (why) answer(res, 403, why);
    else forward(req, res, options);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new WebUiGuardListenError(
          err.code === 'EADDRINUSE'
            ? `port ${options.port} (Temporal Web UI) is already in use: stop what holds it, or set TEMPORAL_UI_PORT to another port`
            : `the Temporal Web UI could not listen on 127.0.0.1:${options.port}: ${err.message}`,
        ),
      ),
    );
    server.listen(options.port, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
