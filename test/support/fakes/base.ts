// What every provider fake shares: a real HTTP server on 127.0.0.1:0 that records each request and,
// for requests that write, follows a fault script the way real APIs fail (TESTING.md "Fakes").
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Fault =
  | 'accept'
  /** Apply the write, then destroy the socket before answering: the lost response. */
  | 'accept-then-drop'
  /** Destroy the socket without applying anything. */
  | 'drop'
  /** Never answer (past the attempt's timeout); applies nothing. */
  | 'hang'
  /** Answer this status (and body, else the provider's usual error body) without applying anything. */
  | { status: number; retryAfter?: string; body?: unknown };

export interface Recorded {
  at: number;
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export abstract class FakeApi {
  readonly requests: Recorded[] = [];
  url = '';
  private readonly script: Fault[] = [];
  private listening?: Listening;

  /** Queues faults for the next writes; once the script runs out, writes are accepted. */
  next(...faults: Fault[]): this {
    this.script.push(...faults);
    return this;
  }

  /** Requests to `path` (exact, or a RegExp), in arrival order. */
  to(path: string | RegExp, method = 'POST'): Recorded[] {
    return this.requests.filter(
      (r) => r.method === method && (typeof path === 'string' ? r.path === path : path.test(r.path)),
    );
  }

  async start(): Promise<this> {
    const server = http.createServer((req, res) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => {
        raw += chunk;
      });
      req.on('end', () => {
        const url = new URL(req.url ?? '/', this.url);
        const recorded: Recorded = {
          at: Date.now(),
          method: req.method ?? 'GET',
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          body: parseBody(raw, req.headers['content-type']),
        };
        this.requests.push(recorded);
        this.handle(recorded, res);
      });
    });
    this.listening = await listenLocally(server);
    this.url = this.listening.url;
    return this;
  }

  async stop(): Promise<void> {
    await this.listening?.close();
  }

  protected abstract handle(request: Recorded, res: http.ServerResponse): unknown;

  /** The provider's error body for a scripted status (e.g. Slack's `{ok:false}`). */
  protected abstract errorBody(status: number): unknown;

  /** Runs the next fault around a write: `apply` commits it and returns the success answer. */
  protected write(res: http.ServerResponse, apply: () => Answer) {
    const fault = this.script.shift() ?? 'accept';
    if (fault === 'drop') return void res.socket?.destroy();
    if (fault === 'hang') return;
    if (typeof fault === 'object') {
      return send(res, {
        status: fault.status,
        body: fault.body ?? this.errorBody(fault.status),
        headers: fault.retryAfter ? { 'retry-after': fault.retryAfter } : {},
      });
    }
    const answer = apply();
    if (fault === 'accept-then-drop') return void res.socket?.destroy();
    send(res, answer);
  }
}

export function send(res: http.ServerResponse, { status, body, headers = {} }: Answer): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function parseBody(raw: string, contentType = ''): Record<string, unknown> {
  if (!raw) return {};
  if (contentType.startsWith('application/x-www-form-urlencoded'))
    return Object.fromEntries(new URLSearchParams(raw));
  try {
    return JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return { raw };
  }
}

export interface Listening {
  url: string;
  /** Closes the server, cutting kept-alive connections instead of waiting for their clients. */
  close(): Promise<void>;
}

/** Listens on a free port of 127.0.0.1, tracking connections so that a fake stops at once. */
export async function listenLocally(server: http.Server): Promise<Listening> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
