// What one CLI command runs with: the configuration, and what it reaches, opened on first use and
// closed when the command ends. Operator commands reach replyflow's operator API (REPLYFLOW_URL) with
// the operator's token and nothing else: no database, no Temporal, no payload key. The account and
// maintenance commands an admin runs (`operator …`, `purge`) use the database instead. Unset
// addresses mean the system `replyflow start` runs on this machine: the one its runtime file names
// (src/running-start.ts), else the defaults.
import path from 'node:path';
import { type Config, cliEnvironment, loadConfig } from '../config';
import { createOperatorStore, type OperatorAccount } from '../db/operators';
import { createPool, type Pool } from '../db/pool';
import { runningClusterUrl } from '../embedded/postgres';
import type { OperatorRole } from '../model';
import { NOT_PERMITTED, recordAction } from '../operator/audit';
import { NotPermittedError, OperatorInputError, OperatorTokenRefusedError } from '../operator/errors';
import type { FoundStart } from '../running-start';
import { CODEC_PATH } from '../temporal/codec-server';
import type { CliIo } from './io';
import { OperatorApiClient } from './operator-api';
import { operatorToken } from './operator-token';

export interface Session {
  config: Config;
  /** The running `replyflow start` whose addresses `config` has, when it has them from one. */
  runningStart?: FoundStart;
  /** replyflow's operator API, as the operator behind the token (or as `token`, for `login`). */
  api(token?: string): OperatorApiClient;
  /** The database, for the admin's account and maintenance commands; operator commands never open it. */
  pool(): Promise<Pool>;
  /** The enabled account the token belongs to, from the operators table (the admin's `purge`). */
  operator(): Promise<OperatorAccount>;
  /**
   * For commands that run on the database (`purge`): who acts when their roles allow `role`; otherwise
   * records the refusal in the audit log (`rejected: not permitted`) and throws {@link NotPermittedError}.
   * Operator commands are authorised by the operator API instead.
   */
  authorize(
    role: OperatorRole,
    refusal: { action: string; target: string; reason?: string },
  ): Promise<string>;
  close(): Promise<void>;
}

export function openSession(io: CliIo): Session {
  const { env, runningStart } = cliEnvironment(io.env);
  const config = loadConfig(env);
  let pool: Pool | undefined;
  let api: OperatorApiClient | undefined;
  let account: Promise<OperatorAccount> | undefined;

  const session: Session = {
    config,
    runningStart,
    api(token) {
      const client = (as: string) =>
        new OperatorApiClient(replyflowUrl(config), as, replyflowUrlOrigin(config, runningStart));
      if (token !== undefined) return client(token);
      api ??= client(operatorToken(config, io.env));
      return api;
    },
    async pool() {
      pool ??= createPool(databaseUrl(config, runningStart), 4);
      return pool;
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
      await pool?.end();
    },
  };
  return session;
}

/**
 * replyflow's base URL for the CLI: REPLYFLOW_URL; else the receiver of REPLYFLOW_CODEC_URL (the
 * setting before, a receiver's `/codec`); else the receiver `replyflow start` runs on this machine.
 */
function replyflowUrl(config: Config): string {
  if (config.REPLYFLOW_URL) return config.REPLYFLOW_URL.replace(/\/+$/, '');
  if (!config.REPLYFLOW_CODEC_URL) return `http://127.0.0.1:${config.PORT}`;
  // The receiver's part of the URL: everything before its codec path (a proxy may add a prefix).
  const codec = new URL(config.REPLYFLOW_CODEC_URL);
  const segments = codec.pathname.split('/');
  const at = segments.indexOf(CODEC_PATH.slice(1));
  if (at < 0)
    throw new OperatorInputError(
      `REPLYFLOW_CODEC_URL (${codec.origin}${codec.pathname}) is not a receiver's ${CODEC_PATH}: set REPLYFLOW_URL to the receiver's URL instead`,
    );
  return `${codec.origin}${segments.slice(0, at).join('/')}`;
}

/**
 * Which setting gave replyflow's URL, as the CLI's errors name it: the variable, or the running start
 * that told it, or the default on PORT.
 */
function replyflowUrlOrigin(config: Config, runningStart?: FoundStart): string {
  if (runningStart) return `REPLYFLOW_URL from ${startInWords(runningStart)}`;
  if (config.REPLYFLOW_URL) return 'REPLYFLOW_URL';
  if (config.REPLYFLOW_CODEC_URL) return 'REPLYFLOW_CODEC_URL';
  return `REPLYFLOW_URL unset: PORT ${config.PORT} on this machine, and no running replyflow start of this clone says otherwise`;
}

/** Which setting gave the data dir, as the CLI's errors name it. */
export function dataDirOrigin(runningStart?: FoundStart): string {
  return runningStart ? `REPLYFLOW_DATA_DIR from ${startInWords(runningStart)}` : 'REPLYFLOW_DATA_DIR';
}

function startInWords(start: FoundStart): string {
  return `the runtime file of the replyflow start running here (pid ${start.pid}, ${start.file})`;
}

/**
 * DATABASE_URL, else the embedded PostgreSQL of `replyflow start` under the data dir, as the
 * application's role (src/embedded/postgres.ts).
 */
function databaseUrl(config: Config, runningStart?: FoundStart): string {
  if (config.DATABASE_URL) return config.DATABASE_URL;
  const dir = path.join(config.REPLYFLOW_DATA_DIR, 'postgres');
  const url = runningClusterUrl(dir);
  if (!url)
    throw new OperatorInputError(
      `DATABASE_URL is unset and no embedded PostgreSQL is running under ${dir} (${dataDirOrigin(runningStart)}): ` +
        'run `replyflow start` first, or set DATABASE_URL',
    );
  return url;
}
