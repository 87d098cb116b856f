// Connections to Temporal for the receiver, the worker and the CLI: one place that knows the address,
// namespace, TLS/API key and the encrypting data converter, so that every role reads the same history.

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import { AesGcmPayloadCodec } from './codec';

export const ENCRYPTION_KEY_FILE = 'encryption.key';

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

export function dataConverter(encryptionKey: string): DataConverter {
  return { payloadCodecs: [AesGcmPayloadCodec.fromBase64(encryptionKey)] };
}

export interface TemporalClient {
  client: Client;
  connection: Connection;
  close(): Promise<void>;
}

export async function connectClient(
  address: string,
  namespace: string,
  encryptionKey: string,
): Promise<TemporalClient> {
  // connectTimeout bounds the first connection; later calls carry their own deadlines.
  const connection = await Connection.connect({ address, connectTimeout: 5000 });
  const client = new Client({ connection, namespace, dataConverter: dataConverter(encryptionKey) });
  return { client, connection, close: () => connection.close() };
}
