import { describe, expect, it } from 'vitest';
import { indexAt, linePath, niceTicks, xOf } from '../../web/console/components/charts/scale.js';

/** The monitoring charts' geometry (web/console/components/charts/scale.ts). */
describe('chart scale', () => {
  it('round ticks from 0 at or above the maximum; whole numbers for counts', () => {
    expect(niceTicks(3)).toEqual([0, 1, 2, 3]);
    expect(niceTicks(2, 4)).toEqual([0, 0.5, 1, 1.5, 2]);
    expect(niceTicks(2, 4, true)).toEqual([0, 1, 2]);
    expect(niceTicks(1873)).toEqual([0, 500, 1000, 1500, 2000]);
    expect(niceTicks(0.000015)).toEqual([0, 0.000005, 0.00001, 0.000015]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });

  it('a day under the pointer is the band it falls in; a line breaks at a day without a value', () => {
    expect(indexAt(xOf(3, 7), 7)).toBe(3);
    expect(indexAt(-50, 7)).toBe(0);
    expect(indexAt(10_000, 7)).toBe(6);
    expect(linePath([1, 2, null, 3], 4).match(/M/g)).toHaveLength(2);
  });
});
