// "Did you mean …?" for names a person typed (a provider, an event type, a field of the route file):
// the known names closest to it by edit distance, so that a typo is named together with its fix.

/**
 * Edits between `a` and `b`: insertions, deletions, substitutions and swaps of two neighbours (the
 * optimal string alignment distance), since `refnud` for `refund` is one slip of the fingers, not two.
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidates closest to `word` (at most three, best first), case ignored; none when even the
 * closest is too far to be a typo of it (more than a third of its letters, at least one).
 */
export function closest(word: string, candidates: Iterable<string>): string[] {
  const typed = word.toLowerCase();
  const limit = Math.max(1, Math.floor(typed.length / 3));
  let best = limit + 1;
  let found: string[] = [];
  for (const candidate of candidates) {
    const distance = editDistance(typed, candidate.toLowerCase());
    if (distance < best) {
      best = distance;
      found = [candidate];
    } else if (distance === best) found.push(candidate);
  }
  return found.slice(0, 3);
}

/** ` (did you mean "stripe"?)`, or `` when nothing is close. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const near = closest(word, candidates);
  return near.length === 0 ? '' : ` (did you mean ${near.map((n) => `"${n}"`).join(' or ')}?)`;
}
