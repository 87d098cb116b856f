// Tenant secrets at rest: AES-256-GCM under the payload key (the one that encrypts Temporal history),
// with the tenant as associated data, so that a ciphertext opens only on its own row. The key id is
// stored beside it; payload keys rotate as REPLYFLOW_DECRYPTION_KEYS describes (docs/deploy.md).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { TenantSecretError } from './errors';

/** What the payload codec (src/temporal/codec.ts AesGcmPayloadCodec) holds: the current key and every key by id. */
export interface SecretKeys {
  readonly currentKey: { id: string; payloadKey: Buffer };
  readonly keys: Record<string, Buffer>;
}

const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function sealSecret(
  keys: SecretKeys,
  tenant: string,
  secret: Record<string, string>,
): { keyId: string; sealed: Buffer } {
  const { id, payloadKey } = keys.currentKey;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, payloadKey, iv);
  cipher.setAAD(Buffer.from(tenant, 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify(secret), 'utf8'), cipher.final()]);
  return { keyId: id, sealed: Buffer.concat([iv, body, cipher.getAuthTag()]) };
}

export function openSecret(
  keys: SecretKeys,
  tenant: string,
  keyId: string,
  sealed: Buffer,
): Record<string, string> {
  const key = keys.keys[keyId];
  if (!key)
    throw new TenantSecretError(
      `the credential of ${tenant} is sealed under payload key "${keyId}", which this process does not hold (REPLYFLOW_DECRYPTION_KEYS)`,
    );
  try {
    const decipher = createDecipheriv(CIPHER, key, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(tenant, 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const plain = Buffer.concat([
      decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return JSON.parse(plain.toString('utf8')) as Record<string, string>;
  } catch {
    throw new TenantSecretError(
      `the stored credential of ${tenant} does not open with payload key "${keyId}"`,
    );
  }
}
