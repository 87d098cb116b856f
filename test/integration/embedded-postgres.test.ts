// The embedded PostgreSQL: generated passwords kept 0600 under the data dir, an application role that
// cannot touch the audit log's append-only trigger, set up by `replyflow start` as the admin (the
// superuser in that file, which the admin commands beside it use), and, as root, binaries and data the
// `postgres` system user can reach wherever the project is cloned (or one clear way out).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config';
import { createPool } from '../../src/db/pool';
import { setUpDatabase } from '../../src/db/setup';
import { sealDecision } from '../../src/decision-seal';
import { EmbeddedPostgresError } from '../../src/embedded/errors';
import {
  APPLICATION_ROLE,
  type Binaries,
  packagedBinaries,
  reachableBinaries,
  runningClusterAdminUrl,
  runningClusterUrl,
  startEmbeddedPostgres,
  systemUser,
} from '../../src/embedded/postgres';
import { launch } from '../../src/launcher';
import { createLogger } from '../../src/logger';
import { freePort } from '../../src/ports';
import { database, devServer } from '../support/servers';

const asRoot = process.getuid?.() === 0;

/** A directory other users can enter (the temp dir's own children are created 0700). */
function openDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

async function refused(url: string, sql: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
    return 'allowed';
  } catch (err) {
    return (err as { code?: string }).code ?? 'refused';
  } finally {
    await client.end();
  }
}

describe('embedded PostgreSQL', function () {
  this.timeout(180_000);

  describe("the application's role (the shared test database)", () => {
    it('is no superuser, and still reads and writes the rows it needs', async () => {
      const { pool } = await database();
      const { rows } = await pool.query<{ su: boolean }>(
        'SELECT rolsuper AS su FROM pg_roles WHERE rolname = current_user',
      );
      assert.equal(rows[0]?.su, false);
      await pool.query(
        `INSERT INTO audit_log (actor, action, workflow_id, reason, result) VALUES ('test', 'probe', 'wf-probe', 'role check', 'accepted')`,
      );
    });

    for (const sql of [
      'ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update_delete',
      'DROP TRIGGER audit_log_no_update_delete ON audit_log',
      'ALTER TABLE audit_log OWNER TO replyflow',
      "SET session_replication_role = 'replica'",
      'UPDATE audit_log SET reason = reason',
      'CREATE TABLE not_ours (id int)',
    ]) {
      it(`may not: ${sql}`, async () => {
        assert.notEqual(await refused((await database()).url, sql), 'allowed');
      });
    }
  });

  describe('a cluster of its own', () => {
    let dir: string;
    before(() => {
      dir = path.join(openDir('replyflow-pg-own-'), 'data');
    });

    it('generates its passwords, keeps them 0600 in the data dir, and keeps them across restarts', async () => {
      const first = await startEmbeddedPostgres({ dir });
      await first.stop();
      const file = path.join(dir, 'replyflow-credentials.json');
      assert.equal(statSync(file).mode & 0o777, 0o600);
      const stored = JSON.parse(readFileSync(file, 'utf8')) as { admin: string; app: string };
      assert.ok(stored.admin.length >= 24 && stored.app.length >= 24 && stored.admin !== stored.app);
      const again = await startEmbeddedPostgres({ dir, ephemeral: true });
      try {
        assert.equal(again.url, first.url.replace(/:\d+\//, `:${again.port}/`));
        assert.equal(decodeURIComponent(new URL(again.adminUrl).password), stored.admin);
        const admin = new pg.Client({ connectionString: again.adminUrl });
        await admin.connect();
        await admin.end();
        // The password every embedded cluster used to have opens nothing.
        const legacy = new pg.Client({ connectionString: again.adminUrl.replace(/:[^:@/]+@/, ':postgres@') });
        await assert.rejects(legacy.connect(), /password authentication failed/);
        await legacy.end().catch(() => {});
      } finally {
        await again.stop();
      }
    });
  });

  it("runs with only the environment it needs, never replyflow's secrets", async () => {
    const secrets = {
      GITHUB_TOKEN: 'ghp_embedded_pg_env_probe',
      SLACK_SIGNING_SECRET: 'slack-embedded-pg-env-probe',
      REPLYFLOW_ENCRYPTION_KEY: 'a2V5LWVtYmVkZGVkLXBnLWVudi1wcm9iZS0zMmJ5dGVz',
      PGPASSWORD: 'pg-embedded-env-probe',
    };
    const saved = Object.fromEntries(Object.keys(secrets).map((k) => [k, process.env[k]]));
    Object.assign(process.env, secrets);
    const dir = path.join(openDir('replyflow-pg-env-'), 'data');
    let running: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
    try {
      running = await startEmbeddedPostgres({ dir, ephemeral: true });
    } finally {
      for (const [key, value] of Object.entries(saved))
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
    }
    try {
      // The postmaster's pid is postmaster.pid's first line; as root it runs as another user, whose
      // environment only root (or that user) can read.
      const pid = readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]!.trim();
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
      for (const value of Object.values(secrets))
        assert.ok(!environ.some((entry) => entry.includes(value)), 'no secret in its environment');
      assert.deepEqual(
        environ
          .map((entry) => entry.split('=')[0])
          .filter((key) => !['PATH', 'TZ', 'LC_MESSAGES'].includes(key!)),
        [],
        'nothing but what PostgreSQL needs',
      );
    } finally {
      await running.stop();
    }
  });

  it('gives the admin commands beside `replyflow start` its superuser, from the owner-only credentials file', async () => {
    const dataDir = openDir('replyflow-pg-cli-');
    const dir = path.join(dataDir, 'postgres');
    const running = await startEmbeddedPostgres({ dir, ephemeral: true });
    try {
      assert.equal(runningClusterUrl(dir), running.url);
      assert.equal(runningClusterAdminUrl(dir), running.adminUrl);
      const admin = createPool(running.adminUrl, 1);
      await setUpDatabase(admin, { appRole: APPLICATION_ROLE });
      await admin.end();
      // A user's shell beside `npm start`: no DATABASE_URL, no admin URL, the data dir's cluster found by itself.
      const env = {
        ...process.env,
        REPLYFLOW_DATA_DIR: dataDir,
        DATABASE_URL: undefined,
        REPLYFLOW_ADMIN_DATABASE_URL: undefined,
      };
      const bin = path.resolve(__dirname, '..', '..', 'bin', 'replyflow.js');
      const added = spawnSync(process.execPath, [bin, 'operator', 'add', 'ana', '--roles', 'resend'], {
        env,
        encoding: 'utf8',
      });
      assert.equal(added.status, 0, added.stderr);
      assert.match(added.stdout, /^token: rfo_/m);
      // The application role's password, in the same file, does not make anyone an admin.
      assert.match(await refused(running.url, 'INSERT INTO operators SELECT * FROM operators'), /^42501$/);
      const client = new pg.Client({ connectionString: running.url });
      await client.connect();
      const { rows } = await client.query<{ name: string }>('SELECT name FROM operators');
      await client.end();
      assert.deepEqual(
        rows.map((r) => r.name),
        ['ana'],
      );
    } finally {
      await running.stop();
    }
    assert.equal(runningClusterUrl(dir), undefined, 'nothing runs there any more');
    assert.equal(runningClusterAdminUrl(dir), undefined);
  });

  it('is set up by `replyflow start` as the admin: the application role restricted, the seal key of its payload key registered', async () => {
    const dataDir = openDir('replyflow-pg-start-');
    const config = loadConfig({
      REPLYFLOW_DATA_DIR: dataDir,
      TEMPORAL_ADDRESS: (await devServer()).address,
      TEMPORAL_TASK_QUEUE: `q-embedded-${randomUUID()}`,
      PORT: String(await freePort()),
      WORKER_METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
    });
    const running = await launch(config, createLogger('silent'));
    try {
      const dir = path.join(dataDir, 'postgres');
      const appUrl = runningClusterUrl(dir)!;
      assert.match(await refused(appUrl, "UPDATE operators SET roles = '{view,approve}'"), /^42501$/);
      assert.match(await refused(appUrl, 'SELECT * FROM seal_keys'), /^42501$/);
      // A decision sealed with the payload key `start` generated verifies in its database.
      const payloadKey = Buffer.from(
        readFileSync(path.join(dataDir, 'encryption.key'), 'utf8').trim(),
        'base64',
      );
      const requestId = randomUUID();
      const workflowId = 'webhook:sandbox:evt_embedded';
      const { seal } = sealDecision(
        { workflowId, reason: 'checked' },
        {
          operator: 'ana',
          credentialId: randomUUID(),
          workflowId,
          decision: 'approve',
          hold: 'e:1',
          requestId,
          issuedAt: Date.now(),
        },
        { id: 'default', payloadKey },
      );
      const client = new pg.Client({ connectionString: appUrl });
      await client.connect();
      try {
        await client.query(
          `INSERT INTO decision_requests (request_id, workflow_id, delivery, operator, seal) VALUES ($1, $2, 'update:1', 'ana', $3)`,
          [requestId, workflowId, seal],
        );
      } finally {
        await client.end();
      }
    } finally {
      await running.stop();
    }
  });

  it('replaces the fixed password of a cluster initialised before passwords were generated', async () => {
    const dir = path.join(openDir('replyflow-pg-legacy-'), 'data');
    const made = await startEmbeddedPostgres({ dir });
    // What older versions left behind: the superuser with password 'postgres', nothing stored.
    const admin = new pg.Client({ connectionString: made.adminUrl });
    await admin.connect();
    await admin.query("ALTER ROLE postgres PASSWORD 'postgres'");
    await admin.end();
    await made.stop();
    rmSync(path.join(dir, 'replyflow-credentials.json'));

    const adopted = await startEmbeddedPostgres({ dir, ephemeral: true });
    try {
      const stored = JSON.parse(readFileSync(path.join(dir, 'replyflow-credentials.json'), 'utf8')) as {
        admin: string;
      };
      assert.notEqual(stored.admin, 'postgres');
      const legacy = new pg.Client({ connectionString: adopted.adminUrl.replace(/:[^:@/]+@/, ':postgres@') });
      await assert.rejects(legacy.connect(), /password authentication failed/);
      await legacy.end().catch(() => {});
      assert.equal(await refused(adopted.url, 'SELECT 1'), 'allowed');
    } finally {
      await adopted.stop();
    }
  });

  describe('as root, from a clone other users cannot enter (mode 0700)', () => {
    it('runs binaries that sit in such a directory from a copy the postgres user can reach', async () => {
      const closed = mkdtempSync(path.join(os.tmpdir(), 'replyflow-closed-'));
      chmodSync(closed, 0o700);
      const native = path.dirname(path.dirname((await packagedBinaries()).postgres));
      cpSync(native, path.join(closed, 'native'), { recursive: true, verbatimSymlinks: true });
      const inside: Binaries = {
        initdb: path.join(closed, 'native', 'bin', 'initdb'),
        postgres: path.join(closed, 'native', 'bin', 'postgres'),
      };
      const runAs = asRoot ? systemUser() : undefined;
      const usable = reachableBinaries(inside, runAs);
      if (!runAs) {
        assert.deepEqual(usable, inside, 'not root: PostgreSQL runs as this user, who can reach them');
        return;
      }
      assert.ok(!usable.postgres.startsWith(closed), usable.postgres);
      const version = spawnSync(usable.postgres, ['--version'], { ...runAs, encoding: 'utf8' });
      assert.match(version.stdout, /PostgreSQL/);
    });

    it('refuses a data dir the postgres user cannot reach with one line that says what to set', async () => {
      const closed = mkdtempSync(path.join(os.tmpdir(), 'replyflow-closed-'));
      chmodSync(closed, 0o700);
      const dir = path.join(closed, 'data');
      if (!asRoot) {
        const pg = await startEmbeddedPostgres({ dir, ephemeral: true });
        await pg.stop();
        return;
      }
      await assert.rejects(startEmbeddedPostgres({ dir }), (err: unknown) => {
        assert.ok(err instanceof EmbeddedPostgresError);
        assert.equal(err.message.split('\n').length, 1);
        assert.match(err.message, /REPLYFLOW_DATA_DIR=/);
        return true;
      });
      assert.equal(existsSync(path.join(dir, 'PG_VERSION')), false, 'no cluster was initialised');
    });
  });
});
