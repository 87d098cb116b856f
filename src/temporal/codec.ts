// AES-256-GCM payload codec: every payload in Temporal history (event bodies, reply text, signal
// arguments) is ciphertext, so only holders of REPLYFLOW_ENCRYPTION_KEY (workers, the codec server
// for authorised operators) can read message text. Search attributes are not payloads: keep text out.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { RefusedPayload } from '../model';
import { UnknownPayloadKeyError } from './errors';

const ENCODING = 'binary/encrypted';
const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A refused payload as the workflow receives it (src/model.ts `isRefusedPayload`). */
function refused(why: string): Payload {
  const value: RefusedPayload = { replyflowRefusedPayload: why };
  return {
    metadata: { [METADATA_ENCODING_KEY]: new TextEncoder().encode('json/plain') },
    data: new TextEncoder().encode(JSON.stringify(value)),
  };
}

export interface CodecOptions {
  /**
   * Workers: hand a refusal to the workflow instead of a payload not encrypted by a known key
   * (plaintext, or ciphertext that does not authenticate), so that nobody without the key can put
   * data in front of a workflow, and such a payload cannot wedge one either. @default false
   */
  refuseUnencrypted?: boolean;
}

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly key: Buffer;

  /** @param key 32 bytes. @param keyId stored in each payload's metadata so that keys can rotate. */
  constructor(
    key: Buffer,
    readonly keyId = 'default',
    private readonly previousKeys: Record<string, Buffer> = {},
    private readonly options: CodecOptions = {},
  ) {
    if (key.length !== 32) throw new Error('REPLYFLOW_ENCRYPTION_KEY must be 32 bytes (base64-encoded)');
    this.key = key;
  }

  /** Every key by id, the current one included: decision seals are checked against these. */
  get keys(): Record<string, Buffer> {
    return { ...this.previousKeys, [this.keyId]: this.key };
  }

  /** The current key, for sealing. */
  get currentKey(): { id: string; payloadKey: Buffer } {
    return { id: this.keyId, payloadKey: this.key };
  }

  static fromBase64(key: string): AesGcmPayloadCodec {
    return new AesGcmPayloadCodec(Buffer.from(key, 'base64'));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv(CIPHER, this.key, iv);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const encrypted = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          [METADATA_ENCODING_KEY]: new TextEncoder().encode(ENCODING),
          'encryption-key-id': new TextEncoder().encode(this.keyId),
        },
        data: encrypted,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    const { refuseUnencrypted } = this.options;
    return payloads.map((payload) => {
      const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
      if (!encoding || new TextDecoder().decode(encoding) !== ENCODING || !payload.data)
        return refuseUnencrypted ? refused('plaintext: not encrypted by a known key') : payload;
      const keyIdBytes = payload.metadata?.['encryption-key-id'];
      const keyId = keyIdBytes ? new TextDecoder().decode(keyIdBytes) : this.keyId;
      const key = keyId === this.keyId ? this.key : this.previousKeys[keyId];
      // A key this process lacks may be a rollout in progress: fail, and let a worker that has it try.
      if (!key) throw new UnknownPayloadKeyError(`payload encrypted with unknown key id "${keyId}"`);
      try {
        return this.decrypt(key, Buffer.from(payload.data));
      } catch (err) {
        if (refuseUnencrypted) return refused('ciphertext that does not authenticate with a known key');
        throw err;
      }
    });
  }

  private decrypt(key: Buffer, data: Buffer): Payload {
    const iv = data.subarray(0, IV_BYTES);
    const tag = data.subarray(data.length - TAG_BYTES);
    const decipher = createDecipheriv(CIPHER, key, iv);
    decipher.setAuthTag(tag);
    const plain = Buffer.concat([
      decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return temporal.api.common.v1.Payload.decode(plain);
  }
}
