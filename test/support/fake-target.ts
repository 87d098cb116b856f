// A fake of the sandbox target API as a real HTTP server: it records every request and misbehaves on
// command, the way real providers do (lost responses, 429 with Retry-After, 5xx, hangs).
import http from 'node:http';
import { type Listening, listenLocally } from './fakes/base';

type Behaviour =
  | 'accept'
  /** Commit the reply, then destroy the socket before answering: the lost response. */
  | 'accept-then-drop'
  /** Destroy the socket without committing anything. */
  | 'drop'
  /** Never answer (past the attempt's timeout); commits nothing. */
  | 'hang'
  /** Commit the reply, then never answer: the sender dies or times out with the request applied. */
  | 'commit-then-hold'
  | { status: number; retryAfter?: string }
  /** Commit and answer after a delay (a slow but successful target). */
  | { delayMs: number };

interface RecordedRequest {
  at: number;
  /** When the answer was written (accepted sends only). */
  answeredAt?: number;
  method: string;
  idempotencyKey?: string;
  reference?: string;
  conversationId?: string;
  text?: string;
}

export class FakeTarget {
  readonly requests: RecordedRequest[] = [];
  readonly lookups: string[] = [];
  /** Committed replies by reference (our effect id): what the person actually received. */
  readonly delivered: { id: number; reference: string; conversationId: string; text: string }[] = [];
  private readonly script: Behaviour[] = [];
  private readonly byKey = new Map<string, number>();
  /** Lookups miss this many times before they see a committed reply (consistency delay). */
  lookupMisses = 0;
  private listening?: Listening;
  url = '';

  /** Every accepted send is answered after this delay unless its behaviour says otherwise. */
  answerDelayMs = 0;

  /** Queues behaviours for the next sends; after the script runs out, sends are accepted. */
  next(...behaviours: Behaviour[]): this {
    this.script.push(...behaviours);
    return this;
  }

  sendsFor(reference: string): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.reference === reference);
  }

  deliveredTo(conversationId: string) {
    return this.delivered.filter((d) => d.conversationId === conversationId);
  }

  async start(): Promise<this> {
    this.listening = await listenLocally(http.createServer((req, res) => this.handle(req, res)));
    this.url = this.listening.url;
    return this;
  }

  async stop(): Promise<void> {
    await this.listening?.close();
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? '/', this.url);
    if (req.method === 'GET' && url.pathname === '/replies') {
      const reference = url.searchParams.get('reference') ?? '';
      this.lookups.push(reference);
      this.requests.push({ at: Date.now(), method: 'GET', reference });
      const found = this.delivered.find((d) => d.reference === reference);
      if (found && this.lookupMisses > 0) {
        this.lookupMisses -= 1;
        return json(res, 404, { error: 'not found' });
      }
      return found ? json(res, 200, { id: found.id }) : json(res, 404, { error: 'not found' });
    }
    if (req.method !== 'POST' || url.pathname !== '/replies')
      return json(res, 404, { error: 'no such path' });
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as {
        conversationId: string;
        text: string;
        reference: string;
        mode: string;
      };
      const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
      const recorded: RecordedRequest = {
        at: Date.now(),
        method: 'POST',
        idempotencyKey,
        reference: body.reference,
        conversationId: body.conversationId,
        text: body.text,
      };
      this.requests.push(recorded);
      const behaviour =
        this.script.shift() ?? (this.answerDelayMs > 0 ? { delayMs: this.answerDelayMs } : 'accept');
      if (behaviour === 'drop') return req.socket.destroy();
      if (behaviour === 'hang') return;
      if (typeof behaviour === 'object' && 'status' in behaviour) {
        if (behaviour.retryAfter) res.setHeader('Retry-After', behaviour.retryAfter);
        return json(res, behaviour.status, { error: `scripted ${behaviour.status}` });
      }
      // Idempotency keys are honoured only where the target's mode promises it.
      const replayed = body.mode === 'sandbox' && idempotencyKey ? this.byKey.get(idempotencyKey) : undefined;
      let id = replayed;
      if (id === undefined) {
        id = this.delivered.length + 1;
        this.delivered.push({
          id,
          reference: body.reference,
          conversationId: body.conversationId,
          text: body.text,
        });
        if (body.mode === 'sandbox' && idempotencyKey) this.byKey.set(idempotencyKey, id);
      }
      if (behaviour === 'accept-then-drop') return req.socket.destroy();
      if (behaviour === 'commit-then-hold') return;
      const answer = () => {
        recorded.answeredAt = Date.now();
        json(res, replayed === undefined ? 201 : 200, { id });
      };
      if (typeof behaviour === 'object') setTimeout(answer, behaviour.delayMs);
      else answer();
    });
  }
}

function json(res: http.ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
