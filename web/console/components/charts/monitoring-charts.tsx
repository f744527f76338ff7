import type { MonitoringKey } from '../../i18n/monitoring.js';
import { TimeSeriesChart, type ChartLabels, type ChartSeries } from './time-series-chart.js';

/** One local day's figures as `GET /console/api/…/statistics` answers them (src/console/app-stats.ts `DailyStats`). */
export interface StatsDay {
  readonly date: string;
  readonly messages: number;
  readonly conversations: number;
  readonly runs: number;
  readonly end_users: number;
  readonly messages_per_conversation: number | null;
  readonly runs_per_end_user: number | null;
  readonly tokens: number;
  readonly cost: readonly { currency: string; total_price: string }[];
  readonly latency_avg_ms: number | null;
  readonly latency_p95_ms: number | null;
  readonly finished: number;
  readonly errors: number;
  readonly error_rate: number | null;
  readonly likes: number;
  readonly satisfaction: number | null;
}

export interface StatsResult {
  readonly kinds: { readonly chat: boolean; readonly workflow: boolean };
  readonly days: readonly StatsDay[];
}

export type Translate = (key: MonitoringKey, vars?: Record<string, string>) => string;

interface ChartSpec {
  readonly id: string;
  readonly title: string;
  readonly kind: 'line' | 'bar';
  readonly integer?: boolean;
  readonly series: ChartSeries[];
  readonly format: (v: number) => string;
}

/**
 * Every monitoring chart that applies to the figures: conversations and messages (chat-like apps),
 * runs (workflow apps), end users, interactions, tokens, cost per currency, latency (average and
 * p95), error rate and user satisfaction, each over the range's days.
 */
export function MonitoringCharts({ result, t, locale }: { result: StatsResult; t: Translate; locale: string }) {
  const days = result.days;
  const dates = days.map((d) => d.date);
  const count = new Intl.NumberFormat(locale, { maximumFractionDigits: 0 });
  const decimal = new Intl.NumberFormat(locale, { maximumFractionDigits: 2 });
  const percent = new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 1 });
  const ms = (v: number) => (v >= 1000 ? `${decimal.format(v / 1000)} s` : `${count.format(v)} ms`);
  const labels: ChartLabels = { empty: t('monitoring.chart.empty'), date: t('monitoring.chart.date'), keys: t('monitoring.chart.keys'), none: t('monitoring.chart.none') };
  const one = (key: string, label: string, values: (number | null)[]): ChartSeries[] => [{ key, label, values }];

  const charts: ChartSpec[] = [];
  if (result.kinds.chat) {
    charts.push({ id: 'conversations', title: t('monitoring.chart.conversations'), kind: 'bar', series: one('conversations', t('monitoring.chart.conversations'), days.map((d) => d.conversations)), format: count.format, integer: true });
    charts.push({ id: 'messages', title: t('monitoring.chart.messages'), kind: 'bar', series: one('messages', t('monitoring.chart.messages'), days.map((d) => d.messages)), format: count.format, integer: true });
  }
  if (result.kinds.workflow) {
    charts.push({ id: 'runs', title: t('monitoring.chart.runs'), kind: 'bar', series: one('runs', t('monitoring.chart.runs'), days.map((d) => d.runs)), format: count.format, integer: true });
  }
  charts.push({ id: 'end-users', title: t('monitoring.chart.endUsers'), kind: 'bar', series: one('end_users', t('monitoring.chart.endUsers'), days.map((d) => d.end_users)), format: count.format, integer: true });
  if (result.kinds.chat) {
    charts.push({ id: 'messages-per-conversation', title: t('monitoring.chart.messagesPerConversation'), kind: 'line', series: one('messages_per_conversation', t('monitoring.chart.messagesPerConversation'), days.map((d) => d.messages_per_conversation)), format: decimal.format });
  }
  if (result.kinds.workflow) {
    charts.push({ id: 'runs-per-end-user', title: t('monitoring.chart.runsPerEndUser'), kind: 'line', series: one('runs_per_end_user', t('monitoring.chart.runsPerEndUser'), days.map((d) => d.runs_per_end_user)), format: decimal.format });
  }
  charts.push({ id: 'tokens', title: t('monitoring.chart.tokens'), kind: 'bar', series: one('tokens', t('monitoring.chart.tokens'), days.map((d) => d.tokens)), format: count.format, integer: true });
  if (result.kinds.chat) {
    const currencies = [...new Set(days.flatMap((d) => d.cost.map((c) => c.currency)))].sort();
    for (const currency of currencies.length > 0 ? currencies : ['USD']) {
      const money = new Intl.NumberFormat(locale, { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: 7 });
      charts.push({
        id: `cost-${currency.toLowerCase()}`,
        title: t('monitoring.chart.cost', { currency }),
        kind: 'line',
        series: one('cost', t('monitoring.chart.cost', { currency }), days.map((d) => Number(d.cost.find((c) => c.currency === currency)?.total_price ?? 0))),
        format: (v) => (v === 0 ? money.format(0) : money.format(v)),
      });
    }
  }
  charts.push({
    id: 'latency',
    title: t('monitoring.chart.latency'),
    kind: 'line',
    series: [
      { key: 'latency_avg_ms', label: t('monitoring.chart.latencyAvg'), values: days.map((d) => d.latency_avg_ms) },
      { key: 'latency_p95_ms', label: t('monitoring.chart.latencyP95'), values: days.map((d) => d.latency_p95_ms) },
    ],
    format: ms,
  });
  charts.push({ id: 'error-rate', title: t('monitoring.chart.errorRate'), kind: 'line', series: one('error_rate', t('monitoring.chart.errorRate'), days.map((d) => d.error_rate)), format: percent.format });
  if (result.kinds.chat) {
    charts.push({ id: 'satisfaction', title: t('monitoring.chart.satisfaction'), kind: 'line', series: one('satisfaction', t('monitoring.chart.satisfaction'), days.map((d) => d.satisfaction)), format: decimal.format });
  }

  return (
    <div class="charts-grid">
      {charts.map((c) => (
        <TimeSeriesChart key={c.id} id={`chart-${c.id}`} title={c.title} dates={dates} series={c.series} kind={c.kind} integer={c.integer} format={c.format} labels={labels} />
      ))}
    </div>
  );
}
