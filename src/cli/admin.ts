// The admin's side of the CLI: the account and maintenance commands (`operator …`, `purge`, `setup`)
// connect with the admin credential — REPLYFLOW_ADMIN_DATABASE_URL, or beside `replyflow start` the
// embedded cluster's superuser from its owner-only credentials file — which receivers and workers never
// hold. As the application role none of them would work: it may not change operators (src/db/privileges.ts).
// Who acted is recorded as `admin:<OS user>`.
import os from 'node:os';
import path from 'node:path';
import { type AdminConfig, cliEnvironment, loadAdminConfig } from '../config';
import { createPool, type Pool } from '../db/pool';
import { runningClusterAdminUrl } from '../embedded/postgres';
import { errorMessage, isUnreachable } from '../failures';
import type { FoundStart } from '../running-start';
import { type CliContext, report } from './command';
import { AdminCredentialError, AdminDatabaseUnreachableError } from './errors';
import type { CliIo } from './io';
import { dataDirOrigin } from './session';

export interface AdminSession {
  config: AdminConfig;
  /** The running `replyflow start` whose data dir `config` has, when it has it from one. */
  runningStart?: FoundStart;
  /** Connected with the admin credential, opened on first use. */
  pool(): Promise<Pool>;
  /** Who the audit log names for what this command changes. */
  actor: string;
  close(): Promise<void>;
}

function openAdminSession(io: CliIo): AdminSession {
  const { env, runningStart } = cliEnvironment(io.env);
  const config = loadAdminConfig(env);
  let pool: Pool | undefined;
  return {
    config,
    runningStart,
    async pool() {
      pool ??= createPool(adminDatabaseUrl(config, runningStart), 2);
      return pool;
    },
    actor: `admin:${osUser()}`,
    async close() {
      await pool?.end();
    },
  };
}

/**
 * REPLYFLOW_ADMIN_DATABASE_URL; else, with no DATABASE_URL either (local mode), the superuser of the
 * embedded PostgreSQL `replyflow start` runs under the data dir. DATABASE_URL itself never counts:
 * it is the application role's.
 */
function adminDatabaseUrl(config: AdminConfig, runningStart?: FoundStart): string {
  if (config.REPLYFLOW_ADMIN_DATABASE_URL) return config.REPLYFLOW_ADMIN_DATABASE_URL;
  const dir = path.join(config.REPLYFLOW_DATA_DIR, 'postgres');
  let local: string | undefined;
  try {
    local = config.DATABASE_URL ? undefined : runningClusterAdminUrl(dir);
  } catch (err) {
    throw new AdminCredentialError(`${errorMessage(err)}, or set REPLYFLOW_ADMIN_DATABASE_URL`);
  }
  if (!local)
    throw new AdminCredentialError(
      'this command needs the admin credential: set REPLYFLOW_ADMIN_DATABASE_URL to a role that owns replyflow’s tables' +
        (config.DATABASE_URL
          ? ' (DATABASE_URL is the application role’s and may not change operators)'
          : ` (or run it as the user of the \`replyflow start\` whose PostgreSQL runs under ${dir}; ${dataDirOrigin(runningStart)})`),
    );
  return local;
}

/** Wraps an admin command's work for commander: its session, its exit code, one line for what went wrong. */
export function adminAction<A extends unknown[]>(
  ctx: CliContext,
  work: (session: AdminSession, ...args: A) => Promise<number>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    let session: AdminSession | undefined;
    try {
      session = openAdminSession(ctx.io);
      ctx.setExitCode(await work(session, ...args));
    } catch (err) {
      ctx.setExitCode(report(ctx.io, notTheAdmin(err) ?? unreachable(err, session) ?? err));
    } finally {
      await session?.close().catch(() => {});
    }
  };
}

/** PostgreSQL's "permission denied" (42501) here means the credential given is not the admin's. */
function notTheAdmin(err: unknown): AdminCredentialError | undefined {
  if ((err as { code?: unknown }).code !== '42501') return undefined;
  return new AdminCredentialError(
    `${errorMessage(err)}: REPLYFLOW_ADMIN_DATABASE_URL must be the admin's role (the owner of replyflow’s tables), not the application role's`,
  );
}

/** A connection that failed (pg's own timeout has no code) becomes one line naming where it went. */
function unreachable(err: unknown, session?: AdminSession): AdminDatabaseUnreachableError | undefined {
  if (!session || !(err instanceof Error)) return undefined;
  const { code, address, port } = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (!isUnreachable(err)) return undefined;
  const { config, runningStart } = session;
  const where = address ? ` at ${address}${port ? `:${port}` : ''}` : '';
  const origin = config.REPLYFLOW_ADMIN_DATABASE_URL
    ? 'REPLYFLOW_ADMIN_DATABASE_URL'
    : `the embedded PostgreSQL under ${path.join(config.REPLYFLOW_DATA_DIR, 'postgres')}, ${dataDirOrigin(runningStart)}`;
  return new AdminDatabaseUnreachableError(
    `cannot reach PostgreSQL${where} (${code ?? 'connection timeout'}; ${origin}): is it running? Set REPLYFLOW_ADMIN_DATABASE_URL to the admin's role where it runs`,
  );
}

function osUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return 'unknown';
  }
}
