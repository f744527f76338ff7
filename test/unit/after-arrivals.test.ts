import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { AFTER_ARRIVALS_MAX_WAIT_HELD_MS, AFTER_ARRIVALS_MAX_WAIT_MS, afterArrivals, noteArrival, noteWaiting } from '../../src/infra/after-arrivals.js';

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
    // in a process of its own: the error is uncaught there, as an immediate's would be
    const script = [
      `import { afterArrivals } from ${JSON.stringify(pathToFileURL(path.join(PROJECT_ROOT, 'src/infra/after-arrivals.ts')).href)};`,
      "afterArrivals(() => console.log('ran a'));",
      "afterArrivals(() => { throw new Error('broken task'); });",
      "afterArrivals(() => console.log('ran c'));",
    ].join('\n');
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: PROJECT_ROOT, encoding: 'utf8' });
    expect(child.stdout.split('\n').filter(Boolean)).toEqual(['ran a', 'ran c']);
    expect(child.stderr).toContain('Error: broken task');
    expect(child.status).not.toBe(0);
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

  it(`while requests wait to be handled, holds tasks past ${AFTER_ARRIVALS_MAX_WAIT_MS} ms (up to ${AFTER_ARRIVALS_MAX_WAIT_HELD_MS} ms), and keeps the shorter wait once none waits`, async () => {
    let ran = false;
    noteWaiting(1);
    try {
      afterArrivals(() => (ran = true));
      const started = performance.now();
      while (performance.now() - started < 3 * AFTER_ARRIVALS_MAX_WAIT_MS) {
        noteArrival();
        await nextTurn();
      }
      expect(ran).toBe(false);
    } finally {
      noteWaiting(-1);
    }
    // the task has waited over the shorter limit: with arrivals still coming, it runs in the next check
    noteArrival();
    await nextTurn();
    await nextTurn();
    expect(ran).toBe(true);
  });
});
