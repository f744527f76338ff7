import { describe, expect, it } from 'vitest';
import { deferredIterable } from '../../src/lib/deferred-iterable.js';

/** An async generator over `items` that records what happened to it. */
function source(items: number[], log: string[]) {
  return (async function* () {
    try {
      for (const i of items) yield i;
    } finally {
      log.push('inner finally');
    }
  })();
}

describe('deferredIterable', () => {
  it('opens at the first read and yields the inner items', async () => {
    const log: string[] = [];
    const it = deferredIterable(async () => {
      log.push('open');
      return source([1, 2, 3], log);
    });
    expect(log).toEqual([]);
    const got: number[] = [];
    for await (const i of it) got.push(i);
    expect(got).toEqual([1, 2, 3]);
    expect(log).toEqual(['open', 'inner finally']);
  });

  it('a failure to open rejects the first read', async () => {
    const it = deferredIterable<number>(async () => {
      throw new Error('no upstream');
    });
    await expect((async () => { for await (const _ of it) void _; })()).rejects.toThrow('no upstream');
  });

  it('a break closes the inner iterator and calls close', async () => {
    const log: string[] = [];
    const it = deferredIterable(async () => source([1, 2, 3], log), () => log.push('close'));
    for await (const i of it) if (i === 2) break;
    expect(log).toEqual(['inner finally', 'close']);
  });

  it('a return while it opens ends reads and calls close once it is open (the inner generator never ran)', async () => {
    const log: string[] = [];
    let opened!: () => void;
    const gate = new Promise<void>((r) => (opened = r));
    const iterator = deferredIterable(async () => {
      await gate;
      return source([1], log);
    }, () => log.push('close'))[Symbol.asyncIterator]();
    const first = iterator.next();
    const ended = iterator.return!();
    opened();
    expect(await first).toEqual({ done: true, value: undefined });
    await ended;
    expect(log).toEqual(['close']);
  });

  it('a return before any read opens nothing', async () => {
    let opened = false;
    const iterator = deferredIterable(async () => {
      opened = true;
      return source([1], []);
    })[Symbol.asyncIterator]();
    await iterator.return!();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(opened).toBe(false);
  });
});
