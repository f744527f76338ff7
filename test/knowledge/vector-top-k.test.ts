import { describe, expect, it } from 'vitest';
import { keepBest } from '../../src/knowledge/index/vector-index.js';
import type { Hit } from '../../src/knowledge/index/keyword-index.js';

describe('exact vector search: keeping the k best', () => {
  it('equals a stable sort by descending score cut at k, ties included', () => {
    let x = 9;
    const rnd = (n: number) => ((x = (x * 1103515245 + 12345) & 0x7fffffff) % n);
    for (let round = 0; round < 300; round++) {
      // Few distinct scores, so most hits tie with others.
      const hits: Hit[] = Array.from({ length: 1 + rnd(200) }, (_, i) => ({ segmentId: `s${i}`, score: (rnd(12) - 4) / 8 }));
      for (const k of [1, 2, 5, 10, 40, 500]) {
        const best: Hit[] = [];
        for (const h of hits) keepBest(best, k, h.segmentId, h.score);
        const expected = [...hits].sort((a, b) => b.score - a.score).slice(0, k);
        expect(best).toEqual(expected);
      }
    }
  });

  it('keeps nothing for k = 0', () => {
    const best: Hit[] = [];
    keepBest(best, 0, 'a', 1);
    expect(best).toEqual([]);
  });
});
