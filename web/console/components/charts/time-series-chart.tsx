import { useState } from 'preact/hooks';
import { BOX, PLOT, bandOf, indexAt, labelEvery, linePath, niceTicks, xOf, yOf } from './scale.js';

/** One line (or bar set) of a chart: a value per day, null where the day has nothing to show. */
export interface ChartSeries {
  readonly key: string;
  readonly label: string;
  readonly values: readonly (number | null)[];
}

/** The chart's own words, in the page's language. */
export interface ChartLabels {
  /** Shown instead of the chart when no day has data. */
  readonly empty: string;
  /** The table's first column heading. */
  readonly date: string;
  /** How to move through the days, read by screen readers with the chart's name. */
  readonly keys: string;
  /** Shown for a day without a value. */
  readonly none: string;
}

export interface TimeSeriesChartProps {
  /** Unique on the page: ids of the title and the table derive from it. */
  readonly id: string;
  readonly title: string;
  /** Local dates `YYYY-MM-DD`, one per value. */
  readonly dates: readonly string[];
  /** One or two series (e.g. average and p95 latency). */
  readonly series: readonly ChartSeries[];
  readonly kind: 'line' | 'bar';
  /** Whole-number values (counts): the axis steps by whole numbers. */
  readonly integer?: boolean;
  /** A value as text (units, decimals, currency). */
  readonly format: (value: number) => string;
  /** A date as an axis label (default `MM-DD`). */
  readonly formatDate?: (date: string) => string;
  readonly labels: ChartLabels;
}

const shortDate = (d: string) => d.slice(5);

/**
 * A per-day chart drawn as SVG: bars or lines, a value axis with round ticks, date labels, a
 * tooltip for the day under the pointer or chosen with the arrow keys (the chart is one tab stop,
 * a slider over the days whose value text names the day's figures), a table of every value for
 * screen readers, and an empty state when no day has data.
 */
export function TimeSeriesChart(props: TimeSeriesChartProps) {
  const { id, title, dates, series, kind, format, labels } = props;
  const formatDate = props.formatDate ?? shortDate;
  const [active, setActive] = useState<number | null>(null);
  const days = dates.length;
  const values = series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const hasData = values.some((v) => v !== 0);
  const ticks = niceTicks(Math.max(0, ...values), 4, props.integer);
  const top = ticks.at(-1)!;
  const describe = (i: number) => `${dates[i]}: ${series.map((s) => `${s.label} ${s.values[i] === null || s.values[i] === undefined ? labels.none : format(s.values[i]!)}`).join(', ')}`;

  const table = (
    <table class="sr-only" id={`${id}-table`}>
      <caption>{title}</caption>
      <thead>
        <tr>
          <th scope="col">{labels.date}</th>
          {series.map((s) => (
            <th scope="col" key={s.key}>
              {s.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {dates.map((d, i) => (
          <tr key={d}>
            <th scope="row">{d}</th>
            {series.map((s) => (
              <td key={s.key} data-series={s.key}>
                {s.values[i] === null || s.values[i] === undefined ? labels.none : format(s.values[i]!)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );

  if (!hasData || days === 0) {
    return (
      <figure class="chart chart-empty-state" data-chart={id} aria-labelledby={`${id}-title`}>
        <figcaption id={`${id}-title`} class="chart-title">
          {title}
        </figcaption>
        <p class="chart-empty">{labels.empty}</p>
      </figure>
    );
  }

  const move = (to: number) => setActive(Math.min(days - 1, Math.max(0, to)));
  const onKey = (e: KeyboardEvent) => {
    const at = active ?? days - 1;
    const step = { ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1, PageDown: -7, PageUp: 7 }[e.key];
    if (step !== undefined) move(at + step);
    else if (e.key === 'Home') move(0);
    else if (e.key === 'End') move(days - 1);
    else return;
    e.preventDefault();
  };
  const onPointer = (e: MouseEvent) => {
    const svg = (e.currentTarget as HTMLElement).querySelector('svg')!;
    const r = svg.getBoundingClientRect();
    if (r.width > 0) move(indexAt(((e.clientX - r.left) / r.width) * BOX.width, days));
  };
  const band = bandOf(days);
  const every = labelEvery(days);
  const tip = active === null ? null : tooltip(active, days, series, format, formatDate(dates[active]!), labels.none, top);

  return (
    <figure class="chart" data-chart={id} aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`} class="chart-title">
        {title}
      </figcaption>
      {series.length > 1 && (
        <ul class="chart-legend" aria-hidden="true">
          {series.map((s, n) => (
            <li key={s.key}>
              <span class={`chart-swatch series-${n}`} />
              {s.label}
            </li>
          ))}
        </ul>
      )}
      <div
        class="chart-plot"
        role="slider"
        tabIndex={0}
        aria-label={`${title}. ${labels.keys}`}
        aria-valuemin={0}
        aria-valuemax={days - 1}
        aria-valuenow={active ?? days - 1}
        aria-valuetext={describe(active ?? days - 1)}
        onKeyDown={onKey}
        onFocus={() => setActive((a) => a ?? days - 1)}
        onBlur={() => setActive(null)}
        onMouseMove={onPointer}
        onMouseLeave={(e) => {
          if (document.activeElement !== e.currentTarget) setActive(null);
        }}
      >
        <svg viewBox={`0 0 ${BOX.width} ${BOX.height}`} class="chart-svg" aria-hidden="true" focusable="false">
          <g class="chart-grid">
            {ticks.map((t) => (
              <g key={t}>
                <line x1={PLOT.x} x2={PLOT.x + PLOT.width} y1={yOf(t, top)} y2={yOf(t, top)} />
                <text x={PLOT.x - 8} y={yOf(t, top)} dy="0.32em" text-anchor="end" class="chart-axis-label">
                  {format(t)}
                </text>
              </g>
            ))}
          </g>
          <g class="chart-dates">
            {dates.map((d, i) =>
              i % every === 0 ? (
                <text key={d} x={xOf(i, days)} y={PLOT.y + PLOT.height + 20} text-anchor="middle" class="chart-axis-label">
                  {formatDate(d)}
                </text>
              ) : null,
            )}
          </g>
          {active !== null && <rect class="chart-hover-band" x={PLOT.x + band * active} y={PLOT.y} width={band} height={PLOT.height} />}
          {series.map((s, n) =>
            kind === 'bar' ? (
              <g key={s.key} class={`chart-series series-${n}`} data-series={s.key}>
                {s.values.map((v, i) => {
                  if (v === null) return null;
                  const w = (band * 0.7) / series.length;
                  const x = PLOT.x + band * i + band * 0.15 + w * n;
                  return <rect key={i} class="chart-bar" data-date={dates[i]} data-value={v} x={x} y={yOf(v, top)} width={Math.max(1, w)} height={Math.max(0, PLOT.y + PLOT.height - yOf(v, top))} />;
                })}
              </g>
            ) : (
              <g key={s.key} class={`chart-series series-${n}`} data-series={s.key}>
                <path class="chart-line" d={linePath(s.values, top)} />
                {s.values.map((v, i) =>
                  v === null ? null : <circle key={i} class={`chart-point${i === active ? ' active' : ''}`} data-date={dates[i]} data-value={v} cx={xOf(i, days)} cy={yOf(v, top)} r={i === active ? 5 : days > 45 ? 2 : 3.5} />,
                )}
              </g>
            ),
          )}
          {tip}
        </svg>
      </div>
      <p class="chart-readout" aria-hidden="true" data-readout>
        {active === null ? '\u00a0' : describe(active)}
      </p>
      {table}
    </figure>
  );
}

/** The tooltip box drawn in the SVG beside the active day (no inline styles: the page's CSP allows none). */
function tooltip(index: number, days: number, series: readonly ChartSeries[], format: (v: number) => string, date: string, none: string, top: number) {
  const lines = [date, ...series.map((s) => `${s.label}: ${s.values[index] === null || s.values[index] === undefined ? none : format(s.values[index]!)}`)];
  const width = Math.min(260, 16 + 7.2 * Math.max(...lines.map((l) => l.length)));
  const height = 12 + 18 * lines.length;
  const x = xOf(index, days);
  const left = x + 12 + width > BOX.width ? x - 12 - width : x + 12;
  const highest = Math.max(0, ...series.map((s) => s.values[index] ?? 0));
  const y = Math.min(Math.max(PLOT.y, yOf(highest, top) - height / 2), PLOT.y + PLOT.height - height);
  return (
    <g class="chart-tooltip" data-tooltip>
      <rect x={left} y={y} width={width} height={height} rx={6} />
      {lines.map((l, i) => (
        <text key={i} x={left + 8} y={y + 20 + 18 * i} class={i === 0 ? 'chart-tooltip-date' : undefined}>
          {l}
        </text>
      ))}
    </g>
  );
}
