import { describe, expect, it } from 'vitest';
import { runBounded } from '../../src/engine/bounded-items.js';
import { ScopedPool } from '../../src/engine/scoped-pool.js';
import { VariablePool } from '../../src/engine/variable-pool.js';

describe('ScopedPool (a parallel iteration item)', () => {
  const parent = () => new VariablePool({ start: { q: 'hi' }, conversation: { n: 1 }, outer: { v: 'o' }, child: { r: 'stale' } });

  it('keeps the item scopes to itself and sends every other read and write to the parent', () => {
    const p = parent();
    const a = new ScopedPool(p, ['it', 'child']);
    const b = new ScopedPool(p, ['it', 'child']);
    expect(a.get(['child', 'r'])).toBeUndefined();
    a.setAll('it', { item: 'x', index: 0 });
    b.setAll('it', { item: 'y', index: 1 });
    a.setAll('child', { r: 'ax' });
    b.setAll('child', { r: 'by' });
    expect([a.get(['it', 'item']), b.get(['it', 'item'])]).toEqual(['x', 'y']);
    expect([a.get(['child', 'r']), b.get(['child', 'r'])]).toEqual(['ax', 'by']);
    expect(p.get(['child', 'r'])).toBe('stale');
    expect(p.get(['it', 'item'])).toBeUndefined();
    expect(a.render('{{#start.q#}} {{#it.item#}} {{#child.r#}} {{#outer.v#}}')).toBe('hi x ax o');

    a.setAll('conversation', { n: 2 });
    expect(b.get(['conversation', 'n'])).toBe(2);
    expect(p.get(['conversation', 'n'])).toBe(2);
    b.remove('child');
    expect([a.get(['child', 'r']), b.get(['child', 'r'])]).toEqual(['ax', undefined]);
    expect(a.toJSON()).toMatchObject({ start: { q: 'hi' }, it: { item: 'x' }, child: { r: 'ax' } });
  });
});

describe('runBounded', () => {
  it('runs at most `limit` at once, returns results in index order, and starts nothing once canStart says no', async () => {
    let running = 0;
    let max = 0;
    const release: (() => void)[] = [];
    const out = runBounded(5, 2, () => true, async (i) => {
      running++;
      max = Math.max(max, running);
      await new Promise<void>((r) => release.push(r));
      running--;
      return i * 10;
    });
    // finish in reverse order of start, two at a time
    for (let done = 0; done < 5; ) {
      await new Promise((r) => setImmediate(r));
      const batch = release.splice(0).reverse();
      batch.forEach((r) => r());
      done += batch.length;
    }
    expect(await out).toEqual([0, 10, 20, 30, 40]);
    expect(max).toBe(2);

    let started = 0;
    const partial = await runBounded(5, 2, () => started < 3, async (i) => (started++, i));
    expect(partial).toEqual([0, 1, 2, undefined, undefined]);
  });
});
