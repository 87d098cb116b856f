// The patch registry (workflows/patches.ts) is the whole truth about the workflow's patches: every
// `patched()`/`deprecatePatch()` in workflows/ asks by a registry constant, every registry entry is
// asked somewhere, and the recorded histories (test/histories) follow the code paths: each entry's
// history sets record its marker, and no other file does. Retiring a patch (docs/deploy.md) so
// changes the registry, the call sites and the histories together.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as patches from '../../workflows/patches';
import { type HistorySet, PATCHES } from '../../workflows/patches';

const ROOT = path.resolve(__dirname, '../..');
const WORKFLOWS = path.join(ROOT, 'workflows');
const HISTORIES = path.join(ROOT, 'test', 'histories');

/** A source file's code without its comments (which name `patched()` in prose). */
function code(file: string): string {
  return readFileSync(path.join(WORKFLOWS, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
}

/** Every argument of a `patched(…)` or `deprecatePatch(…)` call in workflows/, by file. */
function patchCalls(): { file: string; call: string; arg: string }[] {
  return readdirSync(WORKFLOWS)
    .filter((f) => f.endsWith('.ts') && f !== 'patches.ts')
    .flatMap((file) =>
      [...code(file).matchAll(/\b(patched|deprecatePatch)\(([^)]*)\)/g)].map((m) => ({
        file,
        call: m[1]!,
        arg: m[2]!.trim(),
      })),
    );
}

/** The patch ids each recorded history's markers name (the SDK's `core_patch` marker). */
function recordedPatches(): Map<string, Set<string>> {
  const byFile = new Map<string, Set<string>>();
  for (const file of readdirSync(HISTORIES).filter((f) => f.endsWith('.json'))) {
    const { history } = JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8'));
    const ids = new Set<string>();
    for (const event of history.events) {
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_patch') continue;
      const data = marker.details['patch-data'].payloads[0].data;
      ids.add(JSON.parse(Buffer.from(data, 'base64').toString('utf8')).id);
    }
    byFile.set(file.replace(/\.json$/, ''), ids);
  }
  return byFile;
}

/** The history set a recorded file belongs to: `vN` for `vN-*`, `current` for the rest. */
function setOf(name: string): HistorySet {
  return (/^(v\d+)-/.exec(name)?.[1] as HistorySet | undefined) ?? 'current';
}

describe('patch registry (workflows/patches.ts)', () => {
  const constants = patches as unknown as Record<string, unknown>;

  it('lists each id once, and exports a constant for each', () => {
    const ids = PATCHES.map((p) => p.id);
    assert.deepEqual(ids, [...new Set(ids)], 'an id listed twice');
    const exported = Object.values(constants).filter((v): v is string => typeof v === 'string');
    assert.deepEqual([...exported].sort(), [...ids].sort());
  });

  it('is asked by its constants only, and every entry is asked somewhere in workflows/', () => {
    const calls = patchCalls();
    assert.ok(calls.length > 0, 'no patched() call found: the pattern no longer matches');
    const unknown = calls.filter(({ arg }) => !/^[A-Z][A-Z0-9_]*$/.test(arg) || !(arg in constants));
    assert.deepEqual(unknown, [], 'a patch asked by a string or a name not in workflows/patches.ts');
    // A deprecated entry is asked by deprecatePatch() only, every other one by patched() only.
    const deprecated = new Set(PATCHES.filter((p) => p.deprecated).map((p) => p.id));
    assert.deepEqual(
      calls.filter(
        ({ call, arg }) => deprecated.has(constants[arg] as string) !== (call === 'deprecatePatch'),
      ),
      [],
      "a call that does not match its entry's `deprecated`",
    );
    const asked = new Set(calls.map(({ arg }) => constants[arg] as string));
    assert.deepEqual(
      PATCHES.map((p) => p.id).filter((id) => !asked.has(id)),
      [],
      'a registry entry no workflow asks: remove it (docs/deploy.md)',
    );
  });

  it('says where each came from and what it guards', () => {
    for (const p of PATCHES) {
      assert.match(p.added.commit, /^[0-9a-f]{7,40}$/, p.id);
      assert.match(p.added.date, /^\d{4}-\d{2}-\d{2}$/, p.id);
      assert.ok(p.guards.length > 0 && p.retiring.length > 0, p.id);
    }
  });

  it("has each entry's recorded histories, and no history records a patch outside its sets", () => {
    const recorded = recordedPatches();
    const problems: string[] = [];
    for (const p of PATCHES) {
      if (p.histories.length === 0) problems.push(`${p.id}: no history set`);
      const files = [...recorded].filter(([, ids]) => ids.has(p.id)).map(([name]) => name);
      for (const set of p.histories)
        if (!files.some((name) => setOf(name) === set))
          problems.push(`${p.id}: no history of set ${set} records it`);
      for (const name of files)
        if (!p.histories.includes(setOf(name)))
          problems.push(`${p.id}: ${name}.json records it, but its set ${setOf(name)} is not listed`);
      // A patch new runs record is in what the code records now.
      if (p.recordedByNewRuns !== p.histories.includes('current'))
        problems.push(
          `${p.id}: recordedByNewRuns says ${p.recordedByNewRuns}, the current histories disagree`,
        );
    }
    const known = new Set(PATCHES.map((p) => p.id));
    for (const [name, ids] of recorded)
      for (const id of ids)
        if (!known.has(id)) problems.push(`${name}.json records ${id}, not in the registry`);
    assert.deepEqual(problems, []);
  });
});
