import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, type Page } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { DataTable } from '../../components/data-table.js';
import { EmptyState, ErrorBanner, Loading } from '../../components/states.js';
import { CodeView } from '../../components/code-view.js';
import { ConfirmDialog, Dialog } from '../../components/dialog.js';
import { toast } from '../../components/toast.js';
import type { PageProps } from '../../routes.js';

interface Key {
  id: string;
  token: string;
  created_at: number;
  last_used_at: number | null;
}

/** The app's API keys (admins and the owner): create (the whole key shown this once), the list masked, revoke. */
export function AppKeysPage({ params }: PageProps) {
  const t = useT();
  const f = useFormat();
  const appId = params.appId!;
  const keys = useLoad(() => consoleApi.get<Page<Key>>(`/apps/${encodeURIComponent(appId)}/keys`), [appId]);
  const [created, setCreated] = useState<Key | null>(null);
  const [revoking, setRevoking] = useState<Key | null>(null);
  const create = async () => {
    try {
      setCreated(await consoleApi.post<Key>(`/apps/${encodeURIComponent(appId)}/keys`));
      keys.reload();
    } catch (err) {
      toast(err instanceof ConsoleApiError ? err.message : String(err), 'error');
    }
  };
  const revoke = async (k: Key) => {
    setRevoking(null);
    try {
      await consoleApi.delete(`/apps/${encodeURIComponent(appId)}/keys/${encodeURIComponent(k.id)}`);
      toast(t('keys.revoked'));
      keys.reload();
    } catch (err) {
      toast(err instanceof ConsoleApiError ? err.message : String(err), 'error');
    }
  };
  return (
    <>
      <PageHeader
        title={t('keys.title')}
        subtitle={t('keys.subtitle')}
        actions={
          <button type="button" class="btn primary" onClick={() => void create()}>
            {t('keys.create')}
          </button>
        }
      />
      {keys.error && <ErrorBanner error={keys.error} onRetry={keys.reload} />}
      {!keys.data && !keys.error && <Loading />}
      {keys.data && (
        <DataTable
          caption={t('keys.title')}
          rows={keys.data.data}
          rowKey={(k) => k.id}
          empty={<EmptyState>{t('keys.none')}</EmptyState>}
          columns={[
            { header: t('keys.key'), cell: (k) => <code>{k.token}</code> },
            { header: t('keys.created'), cell: (k) => f.dateTime(k.created_at) },
            { header: t('keys.lastUsed'), cell: (k) => (k.last_used_at === null ? t('keys.never') : f.dateTime(k.last_used_at)) },
            {
              header: t('keys.actions'),
              cell: (k) => (
                <button type="button" class="btn small danger-outline" onClick={() => setRevoking(k)} aria-label={t('keys.revokeNamed', { key: k.token })}>
                  {t('keys.revoke')}
                </button>
              ),
            },
          ]}
        />
      )}
      <Dialog title={t('keys.createdTitle')} open={created !== null} onClose={() => setCreated(null)}>
        {created && (
          <>
            <p>{t('keys.once')}</p>
            <CodeView code={created.token} label={t('keys.newKey')} wrap />
          </>
        )}
      </Dialog>
      <ConfirmDialog
        open={revoking !== null}
        title={t('keys.revokeTitle')}
        message={t('keys.revokeConfirm', { key: revoking?.token ?? '' })}
        confirmLabel={t('keys.revoke')}
        danger
        onConfirm={() => revoking && void revoke(revoking)}
        onClose={() => setRevoking(null)}
      />
    </>
  );
}
