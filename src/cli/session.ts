// What one operator command runs with: the configuration, who is acting and what their roles allow,
// and connections to Temporal and PostgreSQL opened on first use and closed when the command ends.
// Unset addresses mean the embedded system `replyflow start` runs under the data dir.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { type Config, loadConfig } from '../config';
import { createPool, type Pool } from '../db/pool';
import { NOT_PERMITTED, recordAction } from '../operator/audit';
import { NotPermittedError, OperatorInputError } from '../operator/errors';
import { loadRoles, permits, type Role, type RoleTable } from '../operator/roles';
import {
  connectClient,
  connectionSecurity,
  keyring,
  resolveEncryptionKey,
  type TemporalClient,
} from '../temporal/client';
import type { CliIo } from './io';

/** The embedded launcher's Temporal frontend (src/launcher.ts). */
export const EMBEDDED_TEMPORAL_ADDRESS = '127.0.0.1:7233';

export interface Session {
  config: Config;
  roles: RoleTable;
  /** Who acts: `--operator`, else REPLYFLOW_OPERATOR; undefined when neither is given. */
  operator?: string;
  pool(): Promise<Pool>;
  client(): Promise<Client>;
  /**
   * Returns who acts when their roles allow `role`; otherwise records the refusal in the audit log
   * (actor, action, target, `rejected: not permitted`) and throws {@link NotPermittedError}.
   */
  authorize(role: Role, refusal: { action: string; target: string; reason?: string }): Promise<string>;
  close(): Promise<void>;
}

export function openSession(io: CliIo, operatorFlag?: string): Session {
  const config = loadConfig(io.env);
  const roles = loadRoles(config);
  const operator = validOperator(operatorFlag ?? config.REPLYFLOW_OPERATOR);
  let pool: Pool | undefined;
  let temporal: Promise<TemporalClient> | undefined;

  const session: Session = {
    config,
    roles,
    operator,
    async pool() {
      pool ??= createPool(databaseUrl(config), 4);
      return pool;
    },
    async client() {
      temporal ??= connectClient(
        config.TEMPORAL_ADDRESS ?? EMBEDDED_TEMPORAL_ADDRESS,
        config.TEMPORAL_NAMESPACE,
        resolveEncryptionKey(config),
        connectionSecurity(config),
        keyring(config),
      );
      return (await temporal).client;
    },
    async authorize(role, refusal) {
      if (operator === undefined) {
        if (role === 'view' && permits(roles, undefined, 'view')) return '(anonymous)';
        throw new OperatorInputError('say who you are: --operator <name> or REPLYFLOW_OPERATOR');
      }
      if (permits(roles, operator, role)) return operator;
      await recordAction(await session.pool(), { actor: operator, ...refusal, result: NOT_PERMITTED });
      throw new NotPermittedError(operator, role, roles.source);
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

function validOperator(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const name = value.trim();
  if (!name || name.length > 100)
    throw new OperatorInputError('the operator name must be 1 to 100 characters');
  return name;
}

/**
 * DATABASE_URL, else the embedded PostgreSQL of `replyflow start`: its port is in the cluster's
 * postmaster.pid (fourth line), its credentials are the launcher's fixed local ones.
 */
export function databaseUrl(config: Config): string {
  if (config.DATABASE_URL) return config.DATABASE_URL;
  const pidFile = path.join(config.REPLYFLOW_DATA_DIR, 'postgres', 'postmaster.pid');
  let port: string | undefined;
  try {
    port = readFileSync(pidFile, 'utf8').split('\n')[3]?.trim();
  } catch {
    port = undefined;
  }
  if (!port || !/^\d+$/.test(port)) {
    throw new OperatorInputError(
      `DATABASE_URL is unset and no embedded PostgreSQL is running under ${path.dirname(pidFile)}: ` +
        'run `replyflow start` first, or set DATABASE_URL',
    );
  }
  return `postgres://postgres:postgres@127.0.0.1:${port}/replyflow`;
}
