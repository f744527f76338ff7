import { consoleApi, type Page } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad } from '../../lib/hooks.js';
import { navigate, useLocation } from '../../lib/router.js';
import { PageHeader } from '../../components/page-header.js';
import { DataTable, Pagination } from '../../components/data-table.js';
import { FiltersBar, SearchBox } from '../../components/filters-bar.js';
import { EmptyState, ErrorBanner, Loading, StatusBadge } from '../../components/states.js';

export interface AppItem {
  id: string;
  name: string;
  mode: string;
  description: string;
  icon: string;
  version: number;
  enable_api: boolean;
  created_at: number;
  updated_at: number;
}

/** The workspace's apps, newest first, searchable by name. */
export function AppsListPage() {
  const t = useT();
  const f = useFormat();
  const { search } = useLocation();
  const keyword = search.get('keyword') ?? '';
  const page = Math.max(1, Number(search.get('page')) || 1);
  const apps = useLoad(() => consoleApi.get<Page<AppItem>>(`/apps?page=${page}&limit=30${keyword ? `&keyword=${encodeURIComponent(keyword)}` : ''}`), [keyword, page]);
  const go = (k: string, p: number) => navigate(`/console/apps?${new URLSearchParams({ ...(k ? { keyword: k } : {}), ...(p > 1 ? { page: String(p) } : {}) }).toString()}`.replace(/\?$/, ''));
  return (
    <>
      <PageHeader title={t('apps.title')} />
      <FiltersBar label={t('apps.search')}>
        <SearchBox value={keyword} label={t('apps.search')} onSearch={(k) => go(k, 1)} />
      </FiltersBar>
      {apps.error && <ErrorBanner error={apps.error} onRetry={apps.reload} />}
      {apps.loading && !apps.data && <Loading />}
      {apps.data && (
        <>
          <DataTable
            caption={t('apps.title')}
            rows={apps.data.data}
            rowKey={(a) => a.id}
            empty={<EmptyState>{keyword ? t('apps.noMatch', { keyword }) : t('apps.none')}</EmptyState>}
            columns={[
              {
                header: t('apps.name'),
                cell: (a) => (
                  <a class="strong-link" href={`/console/apps/${a.id}`}>
                    <span class="app-glyph" aria-hidden="true">
                      {a.icon && [...a.icon].length <= 2 ? a.icon : a.name.slice(0, 1).toUpperCase()}
                    </span>
                    {a.name}
                  </a>
                ),
              },
              { header: t('apps.mode'), cell: (a) => <StatusBadge>{t(`mode.${a.mode}`)}</StatusBadge> },
              { header: t('apps.version'), cell: (a) => a.version, numeric: true },
              { header: t('apps.updated'), cell: (a) => f.dateTime(a.updated_at) },
            ]}
          />
          <Pagination label={t('apps.title')} page={apps.data.page} limit={apps.data.limit} total={apps.data.total} onPage={(p) => go(keyword, p)} />
        </>
      )}
    </>
  );
}
