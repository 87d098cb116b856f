// The CLI's plain-text output: aligned tables, ages, and a progress bar drawn only on a terminal.
import assert from 'node:assert/strict';
import { formatAge, progressBar, table } from '../../src/cli/io';

describe('CLI output', () => {
  it('aligns table columns and shows missing values as -', () => {
    assert.equal(
      table(
        ['ID', 'STATE', 'ACTION'],
        [
          ['webhook:a', 'held', 'mark-sent'],
          ['w', undefined, null],
        ],
      ),
      ['ID         STATE  ACTION', 'webhook:a  held   mark-sent', 'w          -      -'].join('\n'),
    );
  });

  it('says ages at a glance', () => {
    assert.deepEqual([45_000, 12 * 60_000, 5 * 3_600_000, 3 * 86_400_000, -5].map(formatAge), [
      '45s',
      '12m',
      '5h',
      '3d',
      '0s',
    ]);
  });

  it('draws a progress bar on a terminal, and nothing elsewhere', () => {
    let drawn = '';
    const bar = progressBar({ isTTY: true, write: (t: string) => (drawn += t) }, 4, 8);
    bar.update(2);
    bar.clear();
    bar.update(4);
    bar.end();
    assert.equal(drawn, '\r[........] 0/4\r[####....] 2/4\r\x1b[K\r[########] 4/4\n');
    let piped = '';
    const silent = progressBar({ write: (t: string) => (piped += t) }, 4);
    silent.update(4);
    silent.end();
    assert.equal(piped, '');
  });
});
