/**
 * The geometry of the console's charts, free of Preact: a "nice" value axis, the plot box and the
 * x position of each day. Our own ~100 lines instead of a charting library (docs/decisions.md,
 * "Console charts: our own SVG").
 */

/** The SVG's coordinate box; the element scales to its container's width. */
export const BOX = { width: 640, height: 240, left: 56, right: 16, top: 16, bottom: 32 } as const;

/** The plot area inside the margins. */
export const PLOT = { x: BOX.left, y: BOX.top, width: BOX.width - BOX.left - BOX.right, height: BOX.height - BOX.top - BOX.bottom } as const;

/**
 * Axis ticks from 0 to a round maximum at or above `max` (1, 2, 2.5 or 5 × a power of ten per
 * step), about `count` steps; `[0, 1]` when there is nothing above 0. `integer`: whole-number
 * steps (counts).
 */
export function niceTicks(max: number, count = 4, integer = false): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0, 1];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const nice = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  const step = integer ? Math.max(1, Math.ceil(nice)) : nice;
  const ticks: number[] = [];
  for (let v = 0; v < max + step / 2 && ticks.length <= count + 1; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks.at(-1)! < max) ticks.push(Number((ticks.at(-1)! + step).toPrecision(12)));
  return ticks;
}

/** The y of a value on an axis from 0 to `top`. */
export function yOf(value: number, top: number): number {
  return PLOT.y + PLOT.height - (top > 0 ? (value / top) * PLOT.height : 0);
}

/** The width of one day's band. */
export function bandOf(days: number): number {
  return PLOT.width / Math.max(1, days);
}

/** The x of a day's centre. */
export function xOf(index: number, days: number): number {
  return PLOT.x + bandOf(days) * (index + 0.5);
}

/** Which day's band an x (in SVG units) falls in, clamped to the days. */
export function indexAt(x: number, days: number): number {
  return Math.min(days - 1, Math.max(0, Math.floor((x - PLOT.x) / bandOf(days))));
}

/** Every how many days an x label fits (about 8 labels at most). */
export function labelEvery(days: number): number {
  return Math.max(1, Math.ceil(days / 8));
}

/** A line's path through the values, broken where a value is null (a day with nothing to average). */
export function linePath(values: readonly (number | null)[], top: number): string {
  let d = '';
  let pen = false;
  values.forEach((v, i) => {
    if (v === null) {
      pen = false;
      return;
    }
    d += `${pen ? 'L' : 'M'}${xOf(i, values.length).toFixed(1)},${yOf(v, top).toFixed(1)}`;
    pen = true;
  });
  return d;
}
