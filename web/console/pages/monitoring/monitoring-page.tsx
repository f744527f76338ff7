import { useContext, useState } from 'preact/hooks';
import { consoleApi } from '../../lib/console-api.js';
import { LangContext, useT } from '../../lib/i18n.js';
import { useLoad } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { EmptyState, ErrorBanner, Loading } from '../../components/states.js';
import { MonitoringCharts, type StatsDay, type StatsResult } from '../../components/charts/monitoring-charts.js';
import type { PageProps } from '../../routes.js';

/** What `GET /console/api/…/statistics` answers. */
interface StatsAnswer {
  readonly kinds: StatsResult['kinds'];
  readonly data: readonly StatsDay[];
  readonly app: { id: string; name: string; mode: string } | null;
  readonly apps?: number;
  readonly timezone: string;
}

type Preset = '7' | '30' | '90' | 'custom';
const PRESETS: readonly Preset[] = ['7', '30', '90', 'custom'];
const DAY = 86_400_000;

/** The browser's time zone (the days are cut in it), UTC when it cannot say. */
function browserZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/** Today's date in the zone, `YYYY-MM-DD`. */
function today(zone: string): string {
  return new Date().toLocaleDateString('en-CA', { timeZone: zone });
}

/** A `YYYY-MM-DD` moved by whole days. */
function addDays(date: string, days: number): string {
  const [y, m, d] = date.split('-').map(Number);
  return new Date(Date.UTC(y!, m! - 1, d!) + days * DAY).toISOString().slice(0, 10);
}

/** The monitoring charts of every app of the workspace (`/console/monitoring`). */
export function MonitoringOverallPage() {
  return <MonitoringView />;
}

/** The monitoring charts of one app (`/console/apps/:appId/monitoring`). */
export function MonitoringAppPage({ params }: PageProps) {
  return <MonitoringView appId={params.appId} />;
}

/**
 * A range picker (the last 7, 30 or 90 days, or two dates) over the charts of the figures per day,
 * the days cut in the browser's time zone.
 */
function MonitoringView({ appId }: { appId?: string }) {
  const t = useT();
  const { lang } = useContext(LangContext);
  const zone = browserZone();
  const last = today(zone);
  const [preset, setPreset] = useState<Preset>('7');
  const [custom, setCustom] = useState({ from: addDays(last, -13), to: last });
  const [applied, setApplied] = useState({ from: addDays(last, -6), to: last });
  const choose = (p: Preset) => {
    setPreset(p);
    if (p !== 'custom') setApplied({ from: addDays(last, 1 - Number(p)), to: last });
  };
  const query = `start=${applied.from}&end=${addDays(applied.to, 1)}&timezone=${encodeURIComponent(zone)}`;
  const path = appId ? `/apps/${encodeURIComponent(appId)}/statistics?${query}` : `/statistics?${query}`;
  const stats = useLoad(() => consoleApi.get<StatsAnswer>(path), [path]);
  const title = appId ? (stats.data?.app ? t('monitoring.appTitle', { name: stats.data.app.name }) : t('monitoring.title')) : t('monitoring.overallTitle');

  return (
    <>
      <PageHeader title={title} back={appId ? { href: `/console/apps/${encodeURIComponent(appId)}`, label: t('nav.overview') } : undefined} subtitle={t('monitoring.timezone', { timezone: zone })} />
      <div class="monitoring-range">
        <div class="segmented" role="group" aria-label={t('monitoring.range')}>
          {PRESETS.map((p) => (
            <button key={p} type="button" class={`btn small${preset === p ? ' selected' : ''}`} aria-pressed={preset === p} onClick={() => choose(p)}>
              {t(p === 'custom' ? 'monitoring.custom' : `monitoring.last${p}`)}
            </button>
          ))}
        </div>
        {preset === 'custom' && (
          <form
            class="monitoring-custom"
            onSubmit={(e) => {
              e.preventDefault();
              if (custom.from && custom.to && custom.from <= custom.to) setApplied(custom);
            }}
          >
            <label>
              {t('monitoring.from')} <input type="date" name="from" value={custom.from} max={custom.to} required onChange={(e) => setCustom({ ...custom, from: (e.target as HTMLInputElement).value })} />
            </label>
            <label>
              {t('monitoring.to')} <input type="date" name="to" value={custom.to} min={custom.from} required onChange={(e) => setCustom({ ...custom, to: (e.target as HTMLInputElement).value })} />
            </label>
            <button type="submit" class="btn small primary">
              {t('monitoring.apply')}
            </button>
          </form>
        )}
      </div>
      {stats.error && <ErrorBanner error={stats.error} onRetry={stats.reload} />}
      {!stats.error && !stats.data && <Loading />}
      {stats.data && !appId && stats.data.apps === 0 && <EmptyState>{t('monitoring.noApps')}</EmptyState>}
      {stats.data && (appId || stats.data.apps !== 0) && (
        <div aria-busy={stats.loading} data-range={`${stats.data.data[0]?.date ?? ''}/${stats.data.data.at(-1)?.date ?? ''}`}>
          <MonitoringCharts result={{ kinds: stats.data.kinds, days: stats.data.data }} t={t} locale={lang} />
        </div>
      )}
    </>
  );
}
