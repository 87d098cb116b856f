// The docs point only at what a clone has: every relative link in README.md and docs/*.md, and every
// path they quote (`docs/cli.md`, `src/targets/`), names a file or folder inside this repository. A
// path outside it (the project workspace's `../shared/…`) is broken for everyone who cloned.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const DOCS = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
/** A quoted path: relative (`./`, `../`) or under one of the repo's top-level folders. */
const QUOTED_PATH =
  /^(\.\.?\/|(src|docs|test|workflows|activities|deploy|scripts|bench|model|schema|examples|bin)\/)/;

/** The part of a path that must exist: up to its first wildcard or placeholder (`*.ts`, `<name>.ts`). */
function concrete(target: string): string {
  const cut = target.search(/[*<{]/);
  return cut === -1 ? target : path.dirname(`${target.slice(0, cut)}x`);
}

function resolvesInRepo(from: string[], target: string): boolean {
  return from.some((dir) => {
    const full = path.resolve(dir, concrete(target));
    return (full === ROOT || full.startsWith(`${ROOT}${path.sep}`)) && existsSync(full);
  });
}

/** Every relative target in `doc` that names nothing in the repository. */
function brokenIn(doc: string): string[] {
  const text = readFileSync(path.join(ROOT, doc), 'utf8');
  const here = path.dirname(path.join(ROOT, doc));
  const broken: string[] = [];
  // Markdown links resolve from the document's folder, as GitHub renders them.
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target!) || target!.startsWith('#')) continue;
    if (!resolvesInRepo([here], target!.split('#')[0]!)) broken.push(`${doc}: link ${target}`);
  }
  // Quoted paths are written from the repository's root, or from the document's folder.
  for (const [, quoted] of text.matchAll(/`([^`\s]+)`/g)) {
    if (!QUOTED_PATH.test(quoted!)) continue;
    const target = quoted!.replace(/[:#].*$/, '');
    if (!resolvesInRepo([ROOT, here], target)) broken.push(`${doc}: path ${quoted}`);
  }
  return broken;
}

describe('the docs', () => {
  it('link and quote only paths a clone has (README.md, docs/*.md)', () => {
    assert.deepEqual(DOCS.flatMap(brokenIn), []);
  });

  it('count a path outside the repository as broken, even where the workspace has it', () => {
    assert.equal(resolvesInRepo([ROOT], '../shared/DESIGN.md'), false);
    assert.equal(resolvesInRepo([ROOT], '..'), false);
    assert.equal(resolvesInRepo([path.join(ROOT, 'docs')], 'cli.md'), true);
    assert.equal(resolvesInRepo([ROOT], 'src/targets/<name>.ts'), true);
  });
});
