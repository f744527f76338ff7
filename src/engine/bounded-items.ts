/**
 * Runs `run(0) … run(count - 1)` with at most `limit` at once, starting them in index order. Before
 * each start `canStart()` is asked; once it says no, nothing new starts and the ones already running
 * are awaited. `run` must not reject (it reports failures in its result). Results are in index order;
 * an item that never started is `undefined`.
 */
export async function runBounded<T>(count: number, limit: number, canStart: () => boolean, run: (index: number) => Promise<T>): Promise<(T | undefined)[]> {
  const results: (T | undefined)[] = new Array<T | undefined>(count).fill(undefined);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count && canStart()) {
      const index = next++;
      results[index] = await run(index);
    }
  };
  const lanes = Math.max(1, Math.min(limit, count));
  await Promise.all(Array.from({ length: lanes }, lane));
  return results;
}
