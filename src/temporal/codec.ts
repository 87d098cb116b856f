// AES-256-GCM payload codec: every payload in Temporal history (event bodies, reply text, signal
// arguments) is ciphertext, so only holders of REPLYFLOW_ENCRYPTION_KEY (workers, the codec server
// for authorised operators) can read message text. Search attributes are not payloads: keep text out.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

const ENCODING = 'binary/encrypted';
const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly key: Buffer;

  /** @param key 32 bytes. @param keyId stored in each payload's metadata so that keys can rotate. */
  constructor(
    key: Buffer,
    private readonly keyId = 'default',
    private readonly previousKeys: Record<string, Buffer> = {},
  ) {
    if (key.length !== 32) throw new Error('REPLYFLOW_ENCRYPTION_KEY must be 32 bytes (base64-encoded)');
    this.key = key;
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
    return payloads.map((payload) => {
      const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
      if (!encoding || new TextDecoder().decode(encoding) !== ENCODING || !payload.data) return payload;
      const keyIdBytes = payload.metadata?.['encryption-key-id'];
      const keyId = keyIdBytes ? new TextDecoder().decode(keyIdBytes) : this.keyId;
      const key = keyId === this.keyId ? this.key : this.previousKeys[keyId];
      if (!key) throw new Error(`payload encrypted with unknown key id "${keyId}"`);
      const data = Buffer.from(payload.data);
      const iv = data.subarray(0, IV_BYTES);
      const tag = data.subarray(data.length - TAG_BYTES);
      const decipher = createDecipheriv(CIPHER, key, iv);
      decipher.setAuthTag(tag);
      const plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}
