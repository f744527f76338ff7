import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, roleAtLeast } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad, useSession } from '../../lib/hooks.js';
import { navigate } from '../../lib/router.js';
import { PageHeader } from '../../components/page-header.js';
import { ErrorBanner, Loading, StatusBadge } from '../../components/states.js';
import { ConfirmDialog } from '../../components/dialog.js';
import { toast } from '../../components/toast.js';
import type { PageProps } from '../../routes.js';
import type { AppItem } from './apps-list.js';
import { ImportDialog } from './import-dialog.js';
import { WarningList, type ImportWarning } from './warnings.js';

export interface AppDetail extends AppItem {
  site: { code: string; enabled: boolean; url: string };
}

interface Check {
  warnings: ImportWarning[];
  providers: { provider: string; configured: boolean; problem: string | null; setting: string | null }[];
}

/** One app: what it is, the model providers it needs (configured or not), what it still lacks; update, export, delete. */
export function AppOverviewPage({ params }: PageProps) {
  const t = useT();
  const f = useFormat();
  const session = useSession();
  const appId = params.appId!;
  const app = useLoad(() => consoleApi.get<AppDetail>(`/apps/${encodeURIComponent(appId)}`), [appId]);
  const check = useLoad(() => consoleApi.get<Check>(`/apps/${encodeURIComponent(appId)}/check`), [appId]);
  const [updating, setUpdating] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const editor = roleAtLeast(session.account.role, 'editor');

  if (app.error) return <ErrorBanner error={app.error} onRetry={app.reload} />;
  if (!app.data) return <Loading />;
  const a = app.data;
  const remove = async () => {
    setDeleting(false);
    try {
      await consoleApi.delete(`/apps/${encodeURIComponent(a.id)}`);
      toast(t('app.deleted', { name: a.name }));
      navigate('/console/apps');
    } catch (err) {
      toast(err instanceof ConsoleApiError ? err.message : String(err), 'error');
    }
  };
  return (
    <>
      <PageHeader
        title={a.name}
        subtitle={a.description || undefined}
        back={{ href: '/console/apps', label: t('nav.apps') }}
        actions={
          editor && (
            <>
              <button type="button" class="btn" onClick={() => setUpdating(true)}>
                {t('app.update')}
              </button>
              <a class="btn" href={`/console/api/apps/${encodeURIComponent(a.id)}/export`} download>
                {t('app.export')}
              </a>
              <button type="button" class="btn danger-outline" onClick={() => setDeleting(true)}>
                {t('app.delete')}
              </button>
            </>
          )
        }
      />
      <section class="card" aria-labelledby="about-h">
        <h2 id="about-h">{t('app.about')}</h2>
        <dl class="facts">
          <dt>{t('apps.mode')}</dt>
          <dd>
            <StatusBadge>{t(`mode.${a.mode}`)}</StatusBadge>
          </dd>
          <dt>{t('apps.version')}</dt>
          <dd>{a.version}</dd>
          <dt>{t('apps.updated')}</dt>
          <dd>{f.dateTime(a.updated_at)}</dd>
          <dt>{t('app.webApp')}</dt>
          <dd>
            <a href={a.site.url} target="_blank" rel="noopener noreferrer">
              {a.site.url}
            </a>{' '}
            <StatusBadge tone={a.site.enabled ? 'success' : 'warn'}>{a.site.enabled ? t('site.enabled') : t('site.disabled')}</StatusBadge>
          </dd>
          <dt>ID</dt>
          <dd>
            <code>{a.id}</code>
          </dd>
        </dl>
      </section>
      <section class="card" aria-labelledby="providers-h">
        <h2 id="providers-h">{t('app.providers')}</h2>
        {check.error && <ErrorBanner error={check.error} onRetry={check.reload} />}
        {!check.data && !check.error && <Loading />}
        {check.data && (
          <>
            {check.data.providers.length === 0 ? (
              <p class="hint">{t('app.noProviders')}</p>
            ) : (
              <ul class="provider-list">
                {check.data.providers.map((p) => (
                  <li>
                    <code>{p.provider}</code>{' '}
                    <StatusBadge tone={p.configured ? 'success' : 'danger'}>{p.configured ? t('app.configured') : t('app.notConfigured')}</StatusBadge>
                    {p.setting && <span class="hint"> {t('app.setSetting', { setting: p.setting })}</span>}
                  </li>
                ))}
              </ul>
            )}
            <h3 class="sub-h">{t('app.lacks')}</h3>
            <WarningList warnings={check.data.warnings} />
          </>
        )}
      </section>
      <ImportDialog
        open={updating}
        appId={a.id}
        onClose={() => setUpdating(false)}
        onDone={() => {
          app.reload();
          check.reload();
        }}
      />
      <ConfirmDialog
        open={deleting}
        title={t('app.deleteTitle')}
        message={t('app.deleteConfirm', { name: a.name })}
        confirmLabel={t('app.delete')}
        danger
        onConfirm={() => void remove()}
        onClose={() => setDeleting(false)}
      />
    </>
  );
}
