// What one operator command runs with: the configuration, the operator behind the token (checked
// against the operators table, or by the codec server), and connections to Temporal and PostgreSQL
// opened on first use and closed when the command ends. Temporal payloads go through the codec
// server with the operator's token, so the CLI needs no payload key. Unset addresses mean the
// embedded system `replyflow start` runs under the data dir.
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { type Config, loadConfig } from '../config';
import { createOperatorStore, type OperatorAccount } from '../db/operators';
import { createPool, type Pool } from '../db/pool';
import { runningClusterUrl } from '../embedded/postgres';
import type { OperatorRole } from '../model';
import { NOT_PERMITTED, recordAction } from '../operator/audit';
import { NotPermittedError, OperatorInputError, OperatorTokenRefusedError } from '../operator/errors';
import { connectionSecurity, connectWithCodec, type TemporalClient } from '../temporal/client';
import { CodecServerClient } from '../temporal/codec-client';
import { CODEC_PATH } from '../temporal/codec-server';
import type { CliIo } from './io';
import { operatorToken } from './operator-token';

export interface Session {
  config: Config;
  pool(): Promise<Pool>;
  /** Temporal, with payloads encoded (decisions sealed) and decoded by the codec server as this operator. */
  client(): Promise<Client>;
  /** The codec server, as this operator. */
  codecServer(): CodecServerClient;
  /** The enabled account the token belongs to, from the operators table. */
  operator(): Promise<OperatorAccount>;
  /**
   * Returns who acts when their roles allow `role`; otherwise records the refusal in the audit log
   * (actor, action, target, `rejected: not permitted`) and throws {@link NotPermittedError}.
   */
  authorize(
    role: OperatorRole,
    refusal: { action: string; target: string; reason?: string },
  ): Promise<string>;
  close(): Promise<void>;
}

export function openSession(io: CliIo): Session {
  const config = loadConfig(io.env);
  let pool: Pool | undefined;
  let temporal: Promise<TemporalClient> | undefined;
  let codec: CodecServerClient | undefined;
  let account: Promise<OperatorAccount> | undefined;

  const session: Session = {
    config,
    async pool() {
      pool ??= createPool(databaseUrl(config), 4);
      return pool;
    },
    codecServer() {
      codec ??= new CodecServerClient(codecUrl(config), operatorToken(config, io.env));
      return codec;
    },
    async client() {
      const payloadCodec = session.codecServer();
      temporal ??= connectWithCodec(
        config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_DEV_PORT}`,
        config.TEMPORAL_NAMESPACE,
        payloadCodec,
        connectionSecurity(config),
      );
      return (await temporal).client;
    },
    operator() {
      account ??= (async () => {
        const token = operatorToken(config, io.env);
        const found = await createOperatorStore(await session.pool()).authenticate(token);
        if (!found)
          throw new OperatorTokenRefusedError('the operators table does not know the operator token');
        return found;
      })();
      return account;
    },
    async authorize(role, refusal) {
      const { name, roles } = await session.operator();
      if (roles.includes(role)) return name;
      await recordAction(await session.pool(), { actor: name, ...refusal, result: NOT_PERMITTED });
      throw new NotPermittedError(name, role);
    },
    async close() {
      await Promise.all([
        pool?.end(),
        temporal?.then(
          (t) => t.close(),
          () => {},
        ),
      ]);
    },
  };
  return session;
}

/** REPLYFLOW_CODEC_URL, else the codec server of the receiver `replyflow start` runs on this machine. */
export function codecUrl(config: Config): string {
  return config.REPLYFLOW_CODEC_URL ?? `http://127.0.0.1:${config.PORT}${CODEC_PATH}`;
}

/**
 * DATABASE_URL, else the embedded PostgreSQL of `replyflow start` under the data dir, as the
 * application's role (src/embedded/postgres.ts).
 */
export function databaseUrl(config: Config): string {
  if (config.DATABASE_URL) return config.DATABASE_URL;
  const dir = path.join(config.REPLYFLOW_DATA_DIR, 'postgres');
  const url = runningClusterUrl(dir);
  if (!url)
    throw new OperatorInputError(
      `DATABASE_URL is unset and no embedded PostgreSQL is running under ${dir}: ` +
        'run `replyflow start` first, or set DATABASE_URL',
    );
  return url;
}
