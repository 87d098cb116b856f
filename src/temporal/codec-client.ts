// The codec server as the CLI reaches it, with the operator's token: a payload codec that encodes
// through /codec/encode (which seals each decision for the operator it authenticates) and decodes
// through /codec/decode, and /codec/whoami. The CLI holds no payload key, so it can neither read
// history nor make a decision that names anyone but the operator behind its token.
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { errorMessage } from '../failures';
import type { OperatorRole } from '../model';
import { OperatorTokenRefusedError } from '../operator/errors';

const { Payloads } = temporal.api.common.v1;

/** Thrown when the codec server cannot be reached or cannot do what was asked (other than a refused token). */
export class CodecServerError extends Error {
  override name = 'CodecServerError';
}

export interface Whoami {
  operator: string;
  roles: OperatorRole[];
}

export class CodecServerClient implements PayloadCodec {
  /**
   * @param url the codec endpoint, e.g. `http://127.0.0.1:3000/codec`.
   * @param timeoutMs per request. @default 15 seconds
   */
  constructor(
    readonly url: string,
    private readonly token: string,
    private readonly timeoutMs = 15_000,
  ) {}

  /** The operator the codec server knows this token as. */
  async whoami(): Promise<Whoami> {
    const response = await this.call('whoami', { method: 'GET' });
    return (await response.json()) as Whoami;
  }

  encode(payloads: Payload[]): Promise<Payload[]> {
    return this.convert('encode', payloads);
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return this.convert('decode', payloads);
  }

  private async convert(operation: 'encode' | 'decode', payloads: Payload[]): Promise<Payload[]> {
    if (payloads.length === 0) return payloads;
    const response = await this.call(operation, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(Payloads.toObject(Payloads.create({ payloads }), { bytes: String })),
    });
    return Payloads.fromObject((await response.json()) as Record<string, unknown>).payloads;
  }

  private async call(operation: string, init: RequestInit): Promise<Response> {
    const endpoint = `${this.url.replace(/\/+$/, '')}/${operation}`;
    let response: Response;
    try {
      response = await fetch(endpoint, {
        ...init,
        headers: { ...init.headers, authorization: `Bearer ${this.token}` },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const why = (err as { cause?: { code?: string } }).cause?.code ?? errorMessage(err);
      throw new CodecServerError(
        `cannot reach the codec server at ${this.url} (${why}): is \`replyflow start\` (or a receiver) running, and REPLYFLOW_CODEC_URL right?`,
      );
    }
    if (response.ok) return response;
    if (response.status === 401)
      throw new OperatorTokenRefusedError(`the codec server at ${this.url} refused the operator token`);
    const answer = (await response.json().catch(() => ({}))) as { error?: unknown };
    const why = typeof answer.error === 'string' ? answer.error : `HTTP ${response.status}`;
    throw new CodecServerError(`codec server ${operation}: ${why}`);
  }
}
