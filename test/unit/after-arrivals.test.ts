import { describe, expect, it } from 'vitest';
import { AFTER_ARRIVALS_MAX_WAIT_MS, afterArrivals, noteArrival } from '../../src/infra/after-arrivals.js';

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('afterArrivals', () => {
  it('runs a task in the next turn of a quiet event loop', async () => {
    const ran: string[] = [];
    afterArrivals(() => ran.push('a'));
    afterArrivals(() => ran.push('b'));
    expect(ran).toEqual([]);
    await nextTurn();
    expect(ran).toEqual(['a', 'b']);
  });

  it('a task that throws does not keep the others from running; its error is thrown after them', async () => {
    const ran: string[] = [];
    const thrown = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    afterArrivals(() => ran.push('a'));
    afterArrivals(() => {
      throw new Error('broken task');
    });
    afterArrivals(() => ran.push('c'));
    await nextTurn();
    expect(ran).toEqual(['a', 'c']);
    expect(((await thrown) as Error).message).toBe('broken task');
  });

  it('holds tasks while each turn brings a request, and runs them in the first turn without one', async () => {
    const ran: number[] = [];
    afterArrivals(() => ran.push(1));
    for (let turn = 0; turn < 5; turn++) {
      noteArrival();
      await nextTurn();
      expect(ran).toEqual([]);
      // queued during the arrivals: runs with the first
      if (turn === 2) afterArrivals(() => ran.push(2));
    }
    await nextTurn();
    expect(ran).toEqual([1, 2]);
  });

  it(`runs a task at the latest ${AFTER_ARRIVALS_MAX_WAIT_MS} ms after it was queued, however long arrivals go on`, async () => {
    let ran = false;
    afterArrivals(() => (ran = true));
    const started = performance.now();
    // arrivals in every turn for four times the longest wait
    while (!ran && performance.now() - started < 4 * AFTER_ARRIVALS_MAX_WAIT_MS) {
      noteArrival();
      await nextTurn();
    }
    expect(ran).toBe(true);
  });
});
