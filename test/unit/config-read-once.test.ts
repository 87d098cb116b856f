// Config is read in one place: no code of replyflow's own (src/, activities/, workflows/, bin/) reads
// process.env except src/config.ts, and every variable config.ts reads is documented in README.md's
// Configuration table and in .env.example. test/, bench/ and scripts/ may read it: they are harnesses that
// set up the environment of the processes they start (and their own knobs, e.g. BENCH_*), not replyflow.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { adminConfigSchema, clusterConfigSchema, configSchema, toolchainSchema } from '../../src/config';

const ROOT = path.resolve(__dirname, '../..');
const PRODUCT_FOLDERS = ['src', 'activities', 'workflows', 'bin'];
const CONFIG_MODULE = 'src/config.ts';

/** `process.env`, `process['env']`, and `{ env } = process` (or `const e = process`, which would hide it). */
const READS_ENV = /\bprocess\s*(\.\s*env\b|\[\s*['"`]env['"`]\s*\])|=\s*process\s*(;|,|$)|\}\s*=\s*process\b/;

function sourceFiles(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|js|mjs|cjs)$/.test(file))
    .map((file) => path.posix.join(folder, file.split(path.sep).join('/')));
}

function readersOfEnv(files: string[]): string[] {
  return files.flatMap((file) =>
    readFileSync(path.join(ROOT, file), 'utf8')
      .split('\n')
      .flatMap((line, i) => (READS_ENV.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
  );
}

/** Every variable config.ts reads: the keys of its schemas (settings, the admin's, the cluster's, the toolchain's). */
const VARIABLES = [
  ...new Set(
    [configSchema, adminConfigSchema, clusterConfigSchema, toolchainSchema].flatMap((schema) =>
      Object.keys(schema.shape),
    ),
  ),
];

describe('config is read once (src/config.ts)', () => {
  it('no module of replyflow but src/config.ts reads process.env', () => {
    const files = PRODUCT_FOLDERS.flatMap(sourceFiles).filter((file) => file !== CONFIG_MODULE);
    assert.ok(
      files.length > 100,
      `found only ${files.length} source files: is the scan looking in the right place?`,
    );
    assert.deepEqual(readersOfEnv(files), []);
  });

  it('catches every way of reading it (the negative control)', () => {
    for (const line of [
      'const level = process.env.LOG_LEVEL;',
      "const level = process['env'].LOG_LEVEL;",
      'const { env } = process;',
      'const p = process;',
    ])
      assert.ok(READS_ENV.test(line), line);
    for (const line of ['process.exitCode = 1;', 'const processEnv = processEnvironment();', 'io.env.PORT'])
      assert.ok(!READS_ENV.test(line), line);
  });

  it('every variable it reads is in .env.example (set, or commented out with its default)', () => {
    const listed = new Set(
      [...readFileSync(path.join(ROOT, '.env.example'), 'utf8').matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=/gm)].map(
        (match) => match[1]!,
      ),
    );
    assert.ok(VARIABLES.length > 80, `found only ${VARIABLES.length} variables`);
    assert.deepEqual(
      VARIABLES.filter((name) => !listed.has(name)),
      [],
    );
  });

  it("every variable it reads is in README.md's Configuration table", () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Deploying'));
    assert.ok(table.includes('| variable'), 'README.md has its Configuration table before Deploying');
    assert.deepEqual(
      VARIABLES.filter((name) => !table.includes(`\`${name}\``)),
      [],
    );
  });
});
