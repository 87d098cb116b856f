// Every table has one owner in src/db/: no SQL in replyflow's own code (src/, activities/, workflows/,
// bin/, scripts/) outside src/db/, every table the migrations create is written by exactly one src/db
// module, and one statement adds audit rows. test/ and bench/ keep their SQL: they are harnesses that
// check the database from outside (privileges, triggers, what a run left behind).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const PRODUCT_FOLDERS = ['src', 'activities', 'workflows', 'bin', 'scripts'];
const DB = 'src/db/';

/** The statements replyflow runs, as they would stand in a string; `.query(` alone is Temporal's too. */
const SQL =
  /\b(SELECT\s+[\w*"(]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|ALTER\s+(ROLE|SYSTEM|TABLE|DEFAULT)|CREATE\s+(TABLE|ROLE|DATABASE|INDEX)|TRUNCATE|GRANT\s+\w|REVOKE\s+\w|SHOW\s+[a-z_]+)/;

/** Each table's owner: the one module that writes it (schema_migrations is the migrator's). */
const OWNERS: Record<string, string> = {
  alerts: 'src/db/alerts.ts',
  audit_log: 'src/db/audit-log.ts',
  codec_sessions: 'src/db/codec-sessions.ts',
  conversations: 'src/db/conversations.ts',
  decision_requests: 'src/db/decision-requests.ts',
  effects: 'src/db/effects.ts',
  events: 'src/db/events.ts',
  github_signed_bodies: 'src/db/github-signed-bodies.ts',
  operators: 'src/db/operators.ts',
  rejected_events: 'src/db/conversations.ts',
  sandbox_faults: 'src/db/sandbox-faults.ts',
  sandbox_messages: 'src/db/sandbox-messages.ts',
  schema_migrations: 'src/db/migrate.ts',
  seal_keys: 'src/db/seal-keys.ts',
  send_pacing: 'src/db/send-pacing.ts',
  tenant_credentials: 'src/db/tenant-credentials.ts',
};

function sourceFiles(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|js|mjs|cjs)$/.test(file))
    .map((file) => path.posix.join(folder, file.split(path.sep).join('/')));
}

/** The file's code, comments removed (a comment may name a statement it does not run). */
function codeOf(file: string): string {
  return readFileSync(path.join(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
}

function sqlLines(file: string, code = codeOf(file)): string[] {
  return code.split('\n').flatMap((line, i) => (SQL.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

const WRITES = (table: string) => new RegExp(`\\b(INSERT\\s+INTO|UPDATE|DELETE\\s+FROM)\\s+${table}\\b`, 'i');

describe('SQL has one home: src/db/, one module per table', () => {
  const product = PRODUCT_FOLDERS.flatMap(sourceFiles);
  const dbModules = sourceFiles('src/db').filter((file) => !file.startsWith('src/db/migrations/'));

  it('finds no SQL in replyflow code outside src/db/ (and would find it)', () => {
    assert.deepEqual(
      product.filter((file) => !file.startsWith(DB)).flatMap((file) => sqlLines(file)),
      [],
    );
    const sample =
      "  const { rows } = await pool.query('SELECT data FROM shards');\n  // SELECT 1 in a comment";
    assert.equal(sqlLines('sample.ts', sample.replace(/^\s*\/\/.*$/gm, '')).length, 1);
  });

  it('gives every table the migrations create exactly one module that writes it', () => {
    const created = readdirSync(path.join(ROOT, 'src/db/migrations'))
      .filter((file) => file.endsWith('.sql'))
      .flatMap((file) => [
        ...readFileSync(path.join(ROOT, 'src/db/migrations', file), 'utf8').matchAll(
          /CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)/gi,
        ),
      ])
      .map((match) => match[1]!.toLowerCase());
    assert.deepEqual(
      [...new Set([...created, 'schema_migrations'])].sort(),
      Object.keys(OWNERS).sort(),
      'OWNERS lists exactly the tables the migrations create',
    );
    for (const [table, owner] of Object.entries(OWNERS)) {
      const writers = dbModules.filter((file) => WRITES(table).test(codeOf(file)));
      assert.deepEqual(writers, [owner], `${table} is written by ${owner} alone`);
    }
  });

  it('adds audit rows in one statement, audit-log.ts append', () => {
    const inserts = product.flatMap((file) =>
      [...codeOf(file).matchAll(/INSERT\s+INTO\s+audit_log\b/gi)].map(() => file),
    );
    assert.deepEqual(inserts, ['src/db/audit-log.ts']);
  });
});
