import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, roleAtLeast, type Page } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad, useSession } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { FiltersBar, SearchBox } from '../../components/filters-bar.js';
import { DataTable, Pagination } from '../../components/data-table.js';
import { ConfirmDialog } from '../../components/dialog.js';
import { CodeView } from '../../components/code-view.js';
import { EmptyState, ErrorBanner, Loading, StatusBadge } from '../../components/states.js';
import { toast } from '../../components/toast.js';

export interface DatasetItem {
  id: string;
  name: string;
  description: string | null;
  indexing_technique: string | null;
  document_count: number;
  word_count: number;
  supported_extensions?: string[];
}

interface KeyItem {
  id: string;
  token: string;
  created_at: number;
  last_used_at: number | null;
}

const LIMIT = 20;

/** The workspace's knowledge keys: create (shown once), masked list, revoke (admins). */
function DatasetKeys() {
  const t = useT();
  const f = useFormat();
  const keys = useLoad(() => consoleApi.get<Page<KeyItem>>('/dataset-keys'), []);
  const [made, setMade] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<KeyItem | null>(null);
  const create = async () => {
    try {
      const r = await consoleApi.post<{ id: string; token: string }>('/dataset-keys');
      setMade(r.token);
      keys.reload();
    } catch (err) {
      toast(err instanceof ConsoleApiError ? err.message : String(err), 'error');
    }
  };
  const revoke = async () => {
    if (!revoking) return;
    await consoleApi.delete(`/dataset-keys/${revoking.id}`);
    setRevoking(null);
    toast(t('kb.keyRevoked'));
    keys.reload();
  };
  return (
    <section class="card" aria-labelledby="keys-title">
      <div class="card-head">
        <h2 id="keys-title">{t('kb.keys')}</h2>
        <button type="button" class="btn" onClick={() => void create()}>
          {t('kb.keyCreate')}
        </button>
      </div>
      <p class="hint">{t('kb.keysHint')}</p>
      {made && (
        <div class="key-once" role="status">
          <p>{t('kb.keyShown')}</p>
          <CodeView code={made} label={t('kb.keyToken')} />
        </div>
      )}
      {keys.error && <ErrorBanner error={keys.error} onRetry={keys.reload} />}
      {keys.data && (
        <DataTable
          caption={t('kb.keysTable')}
          rows={keys.data.data}
          rowKey={(k) => k.id}
          empty={<EmptyState>{t('kb.keysEmpty')}</EmptyState>}
          columns={[
            { header: t('kb.keyToken'), cell: (k) => <code>{k.token}</code> },
            { header: t('kb.keyCreated'), cell: (k) => f.dateTime(k.created_at) },
            { header: t('kb.keyUsed'), cell: (k) => (k.last_used_at === null ? t('kb.keyNever') : f.dateTime(k.last_used_at)) },
            {
              header: '',
              cell: (k) => (
                <button type="button" class="btn small" aria-label={`${t('kb.keyRevoke')} ${k.token}`} onClick={() => setRevoking(k)}>
                  {t('kb.keyRevoke')}
                </button>
              ),
            },
          ]}
        />
      )}
      <ConfirmDialog
        title={t('kb.keyRevoke')}
        message={revoking ? t('kb.keyConfirm', { token: revoking.token }) : ''}
        confirmLabel={t('kb.keyRevoke')}
        danger
        open={revoking !== null}
        onConfirm={() => void revoke()}
        onClose={() => setRevoking(null)}
      />
    </section>
  );
}

/** `/knowledge`: the workspace's datasets, and its knowledge keys for admins. */
export function DatasetsPage() {
  const t = useT();
  const f = useFormat();
  const session = useSession();
  const [keyword, setKeyword] = useState('');
  const [page, setPage] = useState(1);
  const list = useLoad(() => consoleApi.get<Page<DatasetItem>>(`/datasets?page=${page}&limit=${LIMIT}&keyword=${encodeURIComponent(keyword)}`), [page, keyword]);
  return (
    <>
      <PageHeader title={t('kb.title')} subtitle={t('kb.subtitle')} />
      <FiltersBar label={t('kb.search')}>
        <SearchBox
          value={keyword}
          label={t('kb.search')}
          onSearch={(v) => {
            setPage(1);
            setKeyword(v);
          }}
        />
      </FiltersBar>
      {list.error && <ErrorBanner error={list.error} onRetry={list.reload} />}
      {!list.data && !list.error && <Loading />}
      {list.data && (
        <>
          <DataTable
            caption={t('kb.table')}
            rows={list.data.data}
            rowKey={(d) => d.id}
            empty={<EmptyState>{t('kb.empty')}</EmptyState>}
            columns={[
              {
                header: t('kb.name'),
                cell: (d) => (
                  <a class="strong-link" href={`/console/knowledge/${encodeURIComponent(d.id)}`}>
                    {d.name}
                  </a>
                ),
              },
              { header: t('kb.documents'), cell: (d) => f.number(d.document_count), numeric: true },
              { header: t('kb.words'), cell: (d) => f.number(d.word_count), numeric: true },
              { header: t('kb.technique'), cell: (d) => <StatusBadge>{d.indexing_technique ?? '—'}</StatusBadge> },
            ]}
          />
          <Pagination page={page} limit={LIMIT} total={list.data.total} onPage={setPage} label={t('kb.title')} />
        </>
      )}
      {roleAtLeast(session.account.role, 'admin') && <DatasetKeys />}
    </>
  );
}
