// The docker compose database path, run for real without Docker: deploy/postgres/init-databases.sh (as
// the postgres image runs it on a fresh volume, through psql) and then the `replyflow-setup` job's
// command (`replyflow setup`, the real executable, as the admin role) against a real PostgreSQL. After
// that the application role owns nothing and may not change operators; the admin manages accounts
// from their own machine with the admin credential alone; payload key rotation re-registers the seal
// keys; and a volume made before the admin role existed is refused until it is handed over, as
// docs/deploy.md says.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { sealDecision } from '../../src/decision-seal';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/embedded/postgres';
import { PROJECT_ROOT } from '../../src/temporal/binaries';

const BIN = path.join(PROJECT_ROOT, 'bin', 'replyflow.js');
const INIT_SCRIPT = path.join(PROJECT_ROOT, 'deploy', 'postgres', 'init-databases.sh');

const password = () => randomBytes(12).toString('hex');
const key = () => randomBytes(32).toString('base64');

/** `replyflow <argv>` as a separate process with only `env` (and PATH, HOME). */
function replyflow(argv: string[], env: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-setup-'));
  const result = spawnSync(process.execPath, [BIN, ...argv], {
    env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), REPLYFLOW_DATA_DIR: dataDir, ...env },
    encoding: 'utf8',
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function query(url: string, sql: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

async function refusal(url: string, sql: string, values: unknown[] = []): Promise<string> {
  try {
    await query(url, sql, values);
    return 'allowed';
  } catch (err) {
    return (err as Error).message;
  }
}

describe('database setup as docker compose runs it (init script, then `replyflow setup`)', function () {
  this.timeout(180_000);
  let server: EmbeddedPostgres;
  const passwords = { temporal: password(), app: password(), admin: password() };
  let superuser: (db: string) => string;
  let adminUrl: string;
  let appUrl: string;
  const currentKey = key();

  before(async function () {
    if (spawnSync('psql', ['--version']).status !== 0) this.skip(); // .ci/apt-packages installs it
    const parent = mkdtempSync(path.join(os.tmpdir(), 'replyflow-compose-pg-'));
    chmodSync(parent, 0o755); // as root, PostgreSQL runs as its own user and must reach the data dir
    server = await startEmbeddedPostgres({ dir: path.join(parent, 'data'), ephemeral: true });
    const su = new URL(server.adminUrl);
    superuser = (db) => server.adminUrl.replace(/\/[^/]*$/, `/${db}`);
    // What the embedded launcher made is not on a fresh postgres image's volume: only the superuser.
    await query(superuser('postgres'), 'DROP DATABASE replyflow');
    await query(superuser('postgres'), 'DROP ROLE replyflow');
    const init = spawnSync('sh', [INIT_SCRIPT], {
      env: {
        PATH: process.env.PATH ?? '',
        POSTGRES_USER: su.username,
        PGHOST: '127.0.0.1',
        PGPORT: String(server.port),
        PGPASSWORD: decodeURIComponent(su.password),
        TEMPORAL_DB_PASSWORD: passwords.temporal,
        REPLYFLOW_DB_PASSWORD: passwords.app,
        REPLYFLOW_ADMIN_DB_PASSWORD: passwords.admin,
      },
      encoding: 'utf8',
    });
    assert.equal(init.status, 0, init.stderr);
    adminUrl = `postgres://replyflow_admin:${passwords.admin}@127.0.0.1:${server.port}/replyflow`;
    appUrl = `postgres://replyflow:${passwords.app}@127.0.0.1:${server.port}/replyflow`;
  });
  after(async () => {
    await server?.stop();
  });

  /** The setup job's command, with the keyring given. */
  const setup = (keys: Record<string, string> = {}) =>
    replyflow(['setup', '--app-role', 'replyflow'], {
      REPLYFLOW_ADMIN_DATABASE_URL: adminUrl,
      REPLYFLOW_ENCRYPTION_KEY: currentKey,
      ...keys,
    });

  /** A decision_requests row as the decision path inserts it, as the application role. */
  const useSealed = (payloadKey: string, keyId: string) => {
    const requestId = randomUUID();
    const workflowId = 'webhook:sandbox:evt_setup';
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
      { id: keyId, payloadKey: Buffer.from(payloadKey, 'base64') },
    );
    return refusal(
      appUrl,
      `INSERT INTO decision_requests (request_id, workflow_id, delivery, operator, seal) VALUES ($1, $2, 'update:1', 'ana', $3)`,
      [requestId, workflowId, seal],
    );
  };

  it('migrates as the admin role and leaves the application role owning nothing, with only its privileges', async () => {
    const first = setup();
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^Migrated: 001_ledger_effects_audit\.sql, .*010_/m);
    assert.match(first.stdout, /^Seals of payload key\(s\) default verify in the database\.$/m);
    const again = setup();
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^The schema is up to date\.$/m);

    const owners = await query(
      appUrl,
      `SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'`,
    );
    assert.deepEqual(owners.rows, [{ tableowner: 'replyflow_admin' }]);
    for (const sql of [
      `INSERT INTO operators (name, roles, token_hash, credential_id) VALUES ('eve', '{approve}', '\\x01', '${randomUUID()}')`,
      'DELETE FROM decision_requests',
      'SELECT * FROM seal_keys',
      'CREATE TABLE mine (id int)',
      'CREATE TEMP TABLE mine (id int)',
      'DROP TRIGGER audit_log_claims ON audit_log',
    ])
      assert.match(await refusal(appUrl, sql), /permission denied|must be owner/, sql);
    // The event path as before.
    await query(
      appUrl,
      `INSERT INTO events (provider, event_id, workflow_id, run_id, event_type) VALUES ('sandbox', 'e1', 'w1', 'r1', 'message')`,
    );
    assert.equal(await useSealed(currentKey, 'default'), 'allowed');
  });

  it("manages operators from the admin's own machine with the admin credential alone", async () => {
    const added = replyflow(['operator', 'add', 'ana', '--roles', 'resend'], {
      REPLYFLOW_ADMIN_DATABASE_URL: adminUrl,
    });
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /^token: rfo_/m);
    const asApp = replyflow(['operator', 'add', 'eve', '--roles', 'approve'], {
      REPLYFLOW_ADMIN_DATABASE_URL: appUrl,
    });
    assert.equal(asApp.code, 2);
    assert.match(asApp.stderr, /^replyflow: permission denied for table operators: /);
    const names = await query(appUrl, 'SELECT name FROM operators');
    assert.deepEqual(names.rows, [{ name: 'ana' }]);
  });

  it('registers the seal keys of a rotation as the keyring changes, and retires a dropped key', async () => {
    const newKey = key();
    const rolling = setup({ REPLYFLOW_DECRYPTION_KEYS: `2026-12=${newKey}` });
    assert.equal(rolling.code, 0, rolling.stderr);
    assert.match(rolling.stdout, /^Seals of payload key\(s\) 2026-12, default verify in the database\.$/m);
    assert.equal(await useSealed(newKey, '2026-12'), 'allowed');

    const rotated = replyflow(['setup', '--app-role', 'replyflow'], {
      REPLYFLOW_ADMIN_DATABASE_URL: adminUrl,
      REPLYFLOW_ENCRYPTION_KEY: newKey,
      REPLYFLOW_ENCRYPTION_KEY_ID: '2026-12',
    });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^No longer accepted: seals of key\(s\) default \(not in the keyring\)\.$/m);
    assert.match(
      await useSealed(currentKey, 'default'),
      /^decision_requests: the seal does not verify \(key default is not registered/,
    );
    assert.equal(await useSealed(newKey, '2026-12'), 'allowed');
  });

  it('stops without a payload key, naming the setting, and registers nothing', () => {
    const result = replyflow(['setup'], { REPLYFLOW_ADMIN_DATABASE_URL: adminUrl });
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^replyflow: setup registers the seal keys of the payload keys, and needs them: REPLYFLOW_ENCRYPTION_KEY is unset/,
    );
    assert.equal(result.stderr.trim().split('\n').length, 1);
  });

  it('refuses a database its application role owns (a volume from before the admin role) until it is handed over', async () => {
    // The old init script: the application role owned its database, and the receivers migrated it.
    const legacyPassword = password();
    await query(superuser('postgres'), `CREATE ROLE legacy LOGIN PASSWORD '${legacyPassword}'`);
    await query(superuser('postgres'), 'CREATE DATABASE legacy OWNER legacy');
    const legacyUrl = `postgres://legacy:${legacyPassword}@127.0.0.1:${server.port}/legacy`;
    const legacy = createPool(legacyUrl, 1);
    await migrate(legacy).finally(() => legacy.end());
    const asSuperuser = {
      REPLYFLOW_ADMIN_DATABASE_URL: superuser('legacy'),
      REPLYFLOW_ENCRYPTION_KEY: currentKey,
    };

    const refused = replyflow(['setup', '--app-role', 'legacy'], asSuperuser);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^replyflow: "legacy" owns the database, alerts, audit_log, audit_log_append_only, … \(\d+ tables and functions\): an owner can drop the audit log's triggers\. As a superuser, make the admin the owner \(REASSIGN OWNED BY legacy TO <admin role>, in this database\)/,
    );
    assert.equal(await refusal(legacyUrl, 'DELETE FROM decision_requests'), 'allowed', 'nothing changed');
    // docs/deploy.md's hand-over, then setup again.
    await query(superuser('legacy'), 'REASSIGN OWNED BY legacy TO postgres');
    const done = replyflow(['setup', '--app-role', 'legacy'], asSuperuser);
    assert.equal(done.code, 0, done.stderr);
    assert.match(await refusal(legacyUrl, 'DELETE FROM decision_requests'), /permission denied/);
  });
});
