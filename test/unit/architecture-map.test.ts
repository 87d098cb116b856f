// docs/architecture.md is the map of the tree: every path it names in backticks exists, and every
// folder of the repository's top level, of src/, activities/ and workflows/ is named in it (as
// `folder/`), so that a folder added, moved or removed fails here until the map says so. The names of
// code it quotes (`awaitDecision`, `EFFECT_STEPS`) are found in the code, so that a rename does too.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const MAP = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
/** What a clone does not have: the .gitignore's entries (node_modules, .tools, data dirs) and git's own. */
const IGNORED = new Set([
  '.git',
  ...readFileSync(path.join(ROOT, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim().replace(/\/$/, ''))
    .filter((line) => line && !line.startsWith('#')),
]);

function folders(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir))
    .filter((name) => !IGNORED.has(name) && statSync(path.join(ROOT, dir, name)).isDirectory())
    .map((name) => path.posix.join(dir, name));
}

function foldersUnder(dir: string): string[] {
  return folders(dir).flatMap((sub) => [sub, ...foldersUnder(sub)]);
}

const TOP_LEVEL = folders('.').map((f) => f.replace(/^\.\//, ''));
const TOP_FILES = readdirSync(ROOT).filter(
  (name) => !IGNORED.has(name) && statSync(path.join(ROOT, name)).isFile(),
);

/** Everything in backticks that names a path of the repository: under a top-level folder, or a top-level file. */
function namedPaths(text: string): string[] {
  const quoted = [...text.matchAll(/`([^`\s]+)`/g)].map(([, q]) => q!.replace(/[:#].*$/, ''));
  return quoted.filter((q) => TOP_FILES.includes(q) || TOP_LEVEL.some((dir) => q.startsWith(`${dir}/`)));
}

/** The part of a path that must exist: up to its first wildcard or placeholder (`*.ts`, `<name>.ts`). */
function concrete(target: string): string {
  const cut = target.search(/[*<{]/);
  return cut === -1 ? target : path.dirname(`${target.slice(0, cut)}x`);
}

/** The text of the code the map may quote names from. */
function codeText(): string {
  const files = ['src', 'activities', 'workflows', 'model', 'scripts']
    .flatMap((dir) => [dir, ...foldersUnder(dir)])
    .flatMap((dir) =>
      readdirSync(path.join(ROOT, dir))
        .filter((name) => /\.(ts|pml|sql|sh)$/.test(name))
        .map((name) => path.join(ROOT, dir, name)),
    );
  return [...files, path.join(ROOT, 'biome.json')].map((file) => readFileSync(file, 'utf8')).join('\n');
}

/** Backticked code names: camelCase (`awaitDecision`, `OperatorDesk.endIfRevoked`), PascalCase, CONSTANTS. */
function namedIdentifiers(text: string): string[] {
  const quoted = [...text.matchAll(/`([A-Za-z_][A-Za-z0-9_.]*)(?:\(\))?`/g)].map(([, q]) => q!);
  return [...new Set(quoted)].filter((q) =>
    /[a-z][A-Z]|^[A-Z][a-z]+[A-Z]|^[A-Z][A-Z0-9]*_[A-Z0-9_]+$/.test(q),
  );
}

describe('docs/architecture.md, the map of the tree', () => {
  it('names only paths that exist', () => {
    const paths = namedPaths(MAP);
    assert.ok(paths.length > 50, `found ${paths.length} paths`);
    assert.deepEqual(
      paths.filter((p) => !existsSync(path.join(ROOT, concrete(p)))),
      [],
    );
  });

  it('names every top-level folder and every folder of src/, activities/ and workflows/', () => {
    const required = [...TOP_LEVEL, ...['src', 'activities', 'workflows'].flatMap(foldersUnder)];
    assert.ok(required.includes('src/db') && required.includes('.ci'), required.join(', '));
    assert.deepEqual(
      required.filter((folder) => !MAP.includes(`\`${folder}/\``)),
      [],
    );
  });

  it('quotes only names the code has', () => {
    const code = codeText();
    const names = namedIdentifiers(MAP);
    assert.ok(names.length > 30, `found ${names.length} names`);
    assert.deepEqual(
      names.filter((name) => !name.split('.').every((part) => code.includes(part))),
      [],
    );
    assert.deepEqual(namedIdentifiers('`awaitOperator` and `plain` and `EFFECT_STEPS`'), [
      'awaitOperator',
      'EFFECT_STEPS',
    ]);
  });

  it('counts a folder as named only with its own path, and a missing path as missing', () => {
    assert.equal(namedPaths('`src/nowhere/x.ts` and `db/`').length, 1);
    assert.equal(existsSync(path.join(ROOT, concrete('src/targets/<name>.ts'))), true);
    assert.equal(existsSync(path.join(ROOT, concrete('src/nowhere/x.ts'))), false);
  });
});
