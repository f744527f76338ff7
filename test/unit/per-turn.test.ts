import { describe, expect, it } from 'vitest';
import { perTurn } from '../../src/lib/per-turn.js';

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('perTurn', () => {
  it('reads each key once per event-loop turn, and again in the next turn', async () => {
    const reads: string[] = [];
    let n = 0;
    const read = perTurn((k: string) => {
      reads.push(k);
      return `${k}${++n}`;
    });
    await nextTurn();
    expect([read('a'), read('a'), read('b'), read('a')]).toEqual(['a1', 'a1', 'b2', 'a1']);
    expect(reads).toEqual(['a', 'b']);
    await nextTurn();
    expect(read('a')).toBe('a3');
    expect(reads).toEqual(['a', 'b', 'a']);
  });

  it("keeps a failed read's promise for the turn: its callers share the failure, the next turn reads again", async () => {
    let calls = 0;
    const read = perTurn(() => (++calls === 1 ? Promise.reject(new Error('down')) : Promise.resolve('up')));
    await nextTurn();
    const first = read(undefined);
    expect(read(undefined)).toBe(first);
    await expect(first).rejects.toThrow('down');
    await nextTurn();
    await expect(read(undefined)).resolves.toBe('up');
    expect(calls).toBe(2);
  });
});
