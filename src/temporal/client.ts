// Connections to Temporal for the receiver, the worker and the scripts that hold the payload key: one
// place that knows the address, namespace, TLS/API key and the encrypting data converter, so that
// every role reads the same history. (The operator CLI holds no key and reaches no Temporal.)

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import { AesGcmPayloadCodec, type CodecOptions } from './codec';
import { ConnectionSecurityError } from './errors';

const ENCRYPTION_KEY_FILE = 'encryption.key';

/**
 * The payload key: REPLYFLOW_ENCRYPTION_KEY, else the key file under the data dir, which is created
 * when `create` is set (the embedded launcher). Anything else is a setup mistake with a clear fix.
 */
export function resolveEncryptionKey(config: Config, options: { create?: boolean } = {}): string {
  if (config.REPLYFLOW_ENCRYPTION_KEY) return config.REPLYFLOW_ENCRYPTION_KEY;
  const file = path.join(config.REPLYFLOW_DATA_DIR, ENCRYPTION_KEY_FILE);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  if (!options.create) {
    throw new Error(
      `REPLYFLOW_ENCRYPTION_KEY is unset and ${file} does not exist: set it to 32 random bytes in base64 ` +
        '(`openssl rand -base64 32`), the same value for every receiver and worker.',
    );
  }
  mkdirSync(config.REPLYFLOW_DATA_DIR, { recursive: true });
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** Which key id new payloads carry, and the other keys (by id) that older or newer payloads may carry. */
interface Keyring {
  keyId?: string;
  decryptionKeys?: Record<string, string>;
}

export function keyring(config: Config): Keyring {
  return { keyId: config.REPLYFLOW_ENCRYPTION_KEY_ID, decryptionKeys: config.REPLYFLOW_DECRYPTION_KEYS };
}

/** The codec every role and the codec server share: encrypts with the current key, decrypts with any. */
export function payloadCodec(
  encryptionKey: string,
  keys: Keyring = {},
  options: CodecOptions = {},
): AesGcmPayloadCodec {
  const keyId = keys.keyId ?? 'default';
  const others = keys.decryptionKeys ?? {};
  if (keyId in others) {
    throw new Error(
      `REPLYFLOW_DECRYPTION_KEYS lists the current key id "${keyId}": give the new key a new REPLYFLOW_ENCRYPTION_KEY_ID`,
    );
  }
  const decryptionKeys = Object.fromEntries(
    Object.entries(others).map(([id, key]) => [id, Buffer.from(key, 'base64')]),
  );
  return new AesGcmPayloadCodec(Buffer.from(encryptionKey, 'base64'), keyId, decryptionKeys, options);
}

export function dataConverter(
  encryptionKey: string,
  keys: Keyring = {},
  options: CodecOptions = {},
): DataConverter {
  return { payloadCodecs: [payloadCodec(encryptionKey, keys, options)] };
}

/** What the receiver and the worker add to `{ address }` to reach a secured frontend. */
interface ConnectionSecurity {
  tls: TLSConfig | false;
  apiKey?: string;
}

/**
 * TLS (server CA, client certificate pair, server name) and API key for TEMPORAL_ADDRESS, following
 * Temporal's client environment configuration: an API key or any TLS file turns TLS on unless
 * TEMPORAL_TLS=false. Every problem is listed at once; file contents never appear in errors.
 */
export function connectionSecurity(config: Config): ConnectionSecurity {
  const problems: string[] = [];
  const files = {
    TEMPORAL_TLS_CLIENT_CERT_PATH: config.TEMPORAL_TLS_CLIENT_CERT_PATH,
    TEMPORAL_TLS_CLIENT_KEY_PATH: config.TEMPORAL_TLS_CLIENT_KEY_PATH,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: config.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
  };
  const tlsDetails = Object.values(files).some(Boolean) || Boolean(config.TEMPORAL_TLS_SERVER_NAME);
  const anything = tlsDetails || Boolean(config.TEMPORAL_API_KEY) || config.TEMPORAL_TLS === 'true';
  if (anything && !config.TEMPORAL_ADDRESS) {
    problems.push(
      'TEMPORAL_TLS* / TEMPORAL_API_KEY apply to TEMPORAL_ADDRESS, which is unset (the embedded dev server is plaintext)',
    );
  }
  if (config.TEMPORAL_TLS === 'false' && tlsDetails) {
    problems.push('TEMPORAL_TLS=false contradicts the TEMPORAL_TLS_* settings: remove one or the other');
  }
  if (Boolean(files.TEMPORAL_TLS_CLIENT_CERT_PATH) !== Boolean(files.TEMPORAL_TLS_CLIENT_KEY_PATH)) {
    problems.push(
      'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH go together: set both or neither',
    );
  }
  const contents: Partial<Record<keyof typeof files, Buffer>> = {};
  for (const [name, file] of Object.entries(files) as [keyof typeof files, string | undefined][]) {
    if (!file) continue;
    try {
      contents[name] = readFileSync(file);
    } catch (err) {
      problems.push(`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (problems.length > 0) throw new ConnectionSecurityError(problems);

  const useTls = config.TEMPORAL_TLS ? config.TEMPORAL_TLS === 'true' : anything;
  const tls: TLSConfig | false = useTls
    ? {
        serverNameOverride: config.TEMPORAL_TLS_SERVER_NAME,
        serverRootCACertificate: contents.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
        clientCertPair:
          contents.TEMPORAL_TLS_CLIENT_CERT_PATH && contents.TEMPORAL_TLS_CLIENT_KEY_PATH
            ? { crt: contents.TEMPORAL_TLS_CLIENT_CERT_PATH, key: contents.TEMPORAL_TLS_CLIENT_KEY_PATH }
            : undefined,
      }
    : false;
  return config.TEMPORAL_API_KEY ? { tls, apiKey: config.TEMPORAL_API_KEY } : { tls };
}

export interface TemporalClient {
  client: Client;
  connection: Connection;
  close(): Promise<void>;
}

/** `security` and `keys` come from {@link connectionSecurity} and {@link keyring} for a configured server. */
export async function connectClient(
  address: string,
  namespace: string,
  encryptionKey: string,
  security: Partial<ConnectionSecurity> = {},
  keys: Keyring = {},
): Promise<TemporalClient> {
  // connectTimeout bounds the first connection; later calls carry their own deadlines.
  const connection = await Connection.connect({ address, connectTimeout: 5000, ...security });
  const client = new Client({ connection, namespace, dataConverter: dataConverter(encryptionKey, keys) });
  return { client, connection, close: () => connection.close() };
}
