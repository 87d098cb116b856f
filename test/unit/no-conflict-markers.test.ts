// A merge conflict committed by mistake survives formatting (biome turned one in docs/runbook.md into
// table rows): no tracked text file may carry a conflict marker, raw or as a formatter leaves it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const MARKERS = [/^<{7}( |$)/m, /^>{7}( |$)/m, /^\|? ?={7} *\|?$/m, /^(> ){7}\S/m];
const TEXT = /\.(ts|js|mjs|json|md|ya?ml|sql|sh|toml|txt|example)$|^\.env/;

describe('the tree', () => {
  it('carries no merge-conflict marker in any tracked text file', () => {
    const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f && TEXT.test(path.basename(f)) && !f.startsWith('test/histories/'));
    const marked = files.filter((file) => {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      return MARKERS.some((marker) => marker.test(text));
    });
    assert.deepEqual(marked, []);
  });
});
