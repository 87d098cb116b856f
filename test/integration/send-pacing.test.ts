// Paced destinations (src/db/send-pacing.ts): each send reserves its destination's next slot in one
// statement, so that concurrent senders (any number of workers) leave a gap between their requests
// instead of all writing at once and learning the limit from a 429. Real PostgreSQL.
import assert from 'node:assert/strict';
import { createSendPacing } from '../../src/db/send-pacing';
import { database } from '../support/servers';
import { uniqueId } from '../support/system';

describe('send pacing: slots per destination (real PostgreSQL)', () => {
  it('gives concurrent senders to one destination slots an interval apart, and none past the wait allowed', async () => {
    const { pool } = await database();
    const pacing = createSendPacing(pool);
    const key = uniqueId('slack:T1:C');
    const waits = await Promise.all(Array.from({ length: 6 }, () => pacing.reserve(key, 1000, 4500)));
    const given = waits.filter((w): w is number => w !== undefined).sort((a, b) => a - b);
    // Five slots fit within 4.5 s (0, 1, 2, 3, 4 s); the sixth would be 5 s away: not reserved.
    assert.equal(given.length, 5, `waits: ${waits.join(', ')}`);
    assert.equal(waits.filter((w) => w === undefined).length, 1);
    given.forEach((wait, i) => {
      assert.ok(Math.abs(wait - i * 1000) < 250, `slot ${i} is ${wait} ms away, expected about ${i * 1000}`);
    });
  });

  it('paces each destination on its own: a busy channel does not delay another', async () => {
    const { pool } = await database();
    const pacing = createSendPacing(pool);
    const busy = uniqueId('slack:T1:C');
    for (let i = 0; i < 4; i++) await pacing.reserve(busy, 1000, 10_000);
    assert.equal(await pacing.reserve(uniqueId('slack:T2:C'), 1000, 10_000), 0);
    const next = await pacing.reserve(busy, 1000, 10_000);
    assert.ok(next !== undefined && next > 3000, `the busy channel's fifth slot is ${next} ms away`);
  });
});
