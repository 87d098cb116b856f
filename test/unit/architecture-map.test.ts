// docs/architecture.md is the map of the tree: every path it names in backticks exists, and every
// folder of the repository's top level, of src/, activities/ and workflows/ is named in it (as
// `folder/`), so that a folder added, moved or removed fails here until the map says so.
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

  it('counts a folder as named only with its own path, and a missing path as missing', () => {
    assert.equal(namedPaths('`src/nowhere/x.ts` and `db/`').length, 1);
    assert.equal(existsSync(path.join(ROOT, concrete('src/targets/<name>.ts'))), true);
    assert.equal(existsSync(path.join(ROOT, concrete('src/nowhere/x.ts'))), false);
  });
});
