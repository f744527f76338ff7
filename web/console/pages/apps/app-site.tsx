import { consoleApi, ConsoleApiError, roleAtLeast } from '../../lib/console-api.js';
import { useT } from '../../lib/i18n.js';
import { useLoad, useSession } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { ErrorBanner, Loading, StatusBadge } from '../../components/states.js';
import { CodeView } from '../../components/code-view.js';
import { toast } from '../../components/toast.js';
import type { PageProps } from '../../routes.js';
import { SiteSettingsForm, type SiteSettingsView } from './site-settings-form.js';

interface SiteView {
  code: string;
  enabled: boolean;
  url: string;
  title: string;
  embed: { iframe: string; script: string | null };
  settings: SiteSettingsView;
  mode: string;
  languages: string[];
}

/** The app's web app: its link, on or off, a new code (the old link stops working), its settings, the embed snippets to copy. */
export function AppSitePage({ params }: PageProps) {
  const t = useT();
  const session = useSession();
  const appId = params.appId!;
  const site = useLoad(() => consoleApi.get<SiteView>(`/apps/${encodeURIComponent(appId)}/site`), [appId]);
  const editor = roleAtLeast(session.account.role, 'editor');
  const change = async (body: { enabled?: boolean; reset_code?: boolean }, done: string) => {
    try {
      await consoleApi.patch(`/apps/${encodeURIComponent(appId)}/site`, body);
      toast(done);
      site.reload();
    } catch (err) {
      toast(err instanceof ConsoleApiError ? err.message : String(err), 'error');
    }
  };
  if (site.error) return <ErrorBanner error={site.error} onRetry={site.reload} />;
  if (!site.data) return <Loading />;
  const s = site.data;
  return (
    <>
      <PageHeader title={t('site.title')} subtitle={t('site.subtitle')} />
      <section class="card" aria-labelledby="link-h">
        <h2 id="link-h">{t('site.link')}</h2>
        <p class="site-line">
          <a href={s.url} target="_blank" rel="noopener noreferrer">
            {s.url}
          </a>{' '}
          <StatusBadge tone={s.enabled ? 'success' : 'warn'}>{s.enabled ? t('site.enabled') : t('site.disabled')}</StatusBadge>
        </p>
        {editor && (
          <div class="row-actions">
            <button type="button" class="btn" onClick={() => void change({ enabled: !s.enabled }, s.enabled ? t('site.turnedOff') : t('site.turnedOn'))}>
              {s.enabled ? t('site.disable') : t('site.enable')}
            </button>
            <button type="button" class="btn" onClick={() => void change({ reset_code: true }, t('site.codeReset'))}>
              {t('site.resetCode')}
            </button>
          </div>
        )}
      </section>
      <section class="card" aria-labelledby="settings-h">
        <h2 id="settings-h">{t('siteForm.heading')}</h2>
        <SiteSettingsForm key={JSON.stringify(s.settings)} appId={appId} mode={s.mode} settings={s.settings} languages={s.languages} canEdit={editor} onSaved={site.reload} />
      </section>
      <section class="card" aria-labelledby="embed-h">
        <h2 id="embed-h">{t('site.embed')}</h2>
        {s.embed.script && <CodeView code={s.embed.script} label={t('site.bubble')} />}
        <CodeView code={s.embed.iframe} label={t('site.iframe')} />
      </section>
    </>
  );
}
