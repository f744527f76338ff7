import { consoleApi } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { ErrorBanner, Loading, StatusBadge } from '../../components/states.js';
import type { PageProps } from '../../routes.js';
import type { AppItem } from './apps-list.js';

/** One app: what it is (the app's sections are in the navigation beside it). */
export function AppOverviewPage({ params }: PageProps) {
  const t = useT();
  const f = useFormat();
  const app = useLoad(() => consoleApi.get<AppItem>(`/apps/${encodeURIComponent(params.appId!)}`), [params.appId]);
  if (app.error) return <ErrorBanner error={app.error} onRetry={app.reload} />;
  if (!app.data) return <Loading />;
  const a = app.data;
  return (
    <>
      <PageHeader title={a.name} subtitle={a.description || undefined} back={{ href: '/console/apps', label: t('nav.apps') }} />
      <dl class="facts">
        <dt>{t('apps.mode')}</dt>
        <dd>
          <StatusBadge>{t(`mode.${a.mode}`)}</StatusBadge>
        </dd>
        <dt>{t('apps.version')}</dt>
        <dd>{a.version}</dd>
        <dt>{t('apps.updated')}</dt>
        <dd>{f.dateTime(a.updated_at)}</dd>
        <dt>ID</dt>
        <dd>
          <code>{a.id}</code>
        </dd>
      </dl>
    </>
  );
}
