// A fake order/warehouse API following the IETF idempotency-key draft
// (draft-ietf-httpapi-idempotency-key-header): `Idempotency-Key: "<key>"` on POST; the first
// result is stored and replayed for the same key and payload; another payload → 422; a key still
// being processed → 409; a missing key → 400. GET /<collection>?reference=<key> finds a record.
import type http from 'node:http';
import { type Answer, FakeApi, type Recorded, send } from './base';

interface OrderRecord {
  id: string;
  collection: string;
  key?: string;
  body: Record<string, unknown>;
}

export class FakeOrders extends FakeApi {
  readonly records: OrderRecord[] = [];
  /** false: an API without idempotency keys (every POST creates). */
  honoursKeys = true;
  /** Lookups miss this many times before they see a record (the target's consistency delay). */
  lookupMisses = 0;
  private readonly byKey = new Map<string, { fingerprint: string; answer: Answer }>();
  private seq = 0;

  in(collection: string): OrderRecord[] {
    return this.records.filter((r) => r.collection === collection);
  }

  posts(collection: string): Recorded[] {
    return this.to(`/${collection}`);
  }

  protected errorBody(status: number): unknown {
    return { type: 'about:blank', title: `scripted ${status}`, status };
  }

  protected handle(request: Recorded, res: http.ServerResponse) {
    const collection = request.path.split('/')[1] ?? '';
    if (request.method === 'GET') return send(res, this.lookup(collection, request.query.get('reference')));
    const header = request.headers['idempotency-key'] as string | undefined;
    if (this.honoursKeys) {
      const key = header === undefined ? undefined : /^"(.*)"$/.exec(header)?.[1];
      if (key === undefined)
        return send(res, {
          status: 400,
          body: { title: 'Idempotency-Key is missing or not a quoted string' },
        });
      const fingerprint = JSON.stringify(request.body);
      const seen = this.byKey.get(key);
      if (seen && seen.fingerprint !== fingerprint)
        return send(res, {
          status: 422,
          body: { title: 'Idempotency-Key is already used with another payload' },
        });
      if (seen) return send(res, seen.answer);
      return this.write(res, () => {
        const answer = this.create(collection, request.body, key);
        this.byKey.set(key, { fingerprint, answer });
        return answer;
      });
    }
    this.write(res, () => this.create(collection, request.body, header?.replace(/^"(.*)"$/, '$1')));
  }

  private create(collection: string, body: Record<string, unknown>, key?: string): Answer {
    this.seq += 1;
    const record = { id: `${collection}-${this.seq}`, collection, key, body };
    this.records.push(record);
    return {
      status: 201,
      body: { id: record.id, ...body },
      headers: { location: `/${collection}/${record.id}` },
    };
  }

  private lookup(collection: string, reference: string | null): Answer {
    const found = this.records.filter((r) => r.collection === collection && r.key === reference);
    if (found.length > 0 && this.lookupMisses > 0) {
      this.lookupMisses -= 1;
      return { status: 200, body: [] };
    }
    return { status: 200, body: found.map((r) => ({ id: r.id })) };
  }
}
