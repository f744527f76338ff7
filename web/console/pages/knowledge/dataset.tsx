import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, roleAtLeast, type Page } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad, usePoll, useSession } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { FiltersBar, SearchBox } from '../../components/filters-bar.js';
import { DataTable, Pagination } from '../../components/data-table.js';
import { EmptyState, ErrorBanner, Loading, StatusBadge, toneOf } from '../../components/states.js';
import { toast } from '../../components/toast.js';
import type { PageProps } from '../../routes.js';
import type { DatasetItem } from './datasets.js';

interface DocumentItem {
  id: string;
  name: string;
  indexing_status: string;
  display_status: string;
  error: string | null;
  word_count: number;
  hit_count: number;
  indexing: { indexing_status: string; completed_segments: number; total_segments: number; error: string | null } | null;
}

interface HitRecord {
  segment: { id: string; content: string; position: number; document: { name: string } };
  score: number;
  child_chunks: { id: string; content: string; score: number }[];
}

const LIMIT = 20;
const RUNNING = new Set(['waiting', 'parsing', 'cleaning', 'splitting', 'indexing']);
const errText = (err: unknown) => (err instanceof ConsoleApiError ? err.message : String(err));

/** The documents: status and progress, updated live (polled each second while one is indexing). */
function Documents({ ds, canEdit }: { ds: DatasetItem; canEdit: boolean }) {
  const t = useT();
  const f = useFormat();
  const [keyword, setKeyword] = useState('');
  const [page, setPage] = useState(1);
  const [docs, setDocs] = useState<Page<DocumentItem> | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [tick, setTick] = useState(0);
  const base = `/datasets/${encodeURIComponent(ds.id)}`;
  usePoll(
    async () => {
      try {
        const d = await consoleApi.get<Page<DocumentItem>>(`${base}/documents?page=${page}&limit=${LIMIT}&keyword=${encodeURIComponent(keyword)}`);
        setDocs(d);
        setError(null);
        return d.data.some((x) => RUNNING.has(x.indexing_status));
      } catch (err) {
        setError(err as Error);
        return false;
      }
    },
    1000,
    [page, keyword, tick],
  );
  const upload = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const input = form.elements.namedItem('file') as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    const fd = new FormData();
    fd.append('data', JSON.stringify({ indexing_technique: ds.indexing_technique ?? 'economy', process_rule: { mode: 'automatic' } }));
    fd.append('file', file);
    try {
      await consoleApi.upload(`${base}/documents`, fd);
      toast(t('doc.uploaded', { name: file.name }));
      input.value = '';
      setTick((n) => n + 1);
    } catch (err) {
      toast(errText(err), 'error');
    }
  };
  const types = (ds.supported_extensions ?? []).map((x) => `.${x}`).join(', ');
  return (
    <section aria-labelledby="docs-title">
      <h2 id="docs-title" class="section-title">
        {t('doc.title')}
      </h2>
      {canEdit && (
        <form class="card import-form" onSubmit={upload}>
          <label for="doc-file">{t('doc.uploadFile', { types: (ds.supported_extensions ?? []).join(', ') })}</label>
          <input id="doc-file" name="file" type="file" accept={types} required />
          <button type="submit" class="btn primary">
            {t('doc.upload')}
          </button>
        </form>
      )}
      <FiltersBar label={t('doc.search')}>
        <SearchBox
          value={keyword}
          label={t('doc.search')}
          onSearch={(v) => {
            setPage(1);
            setKeyword(v);
          }}
        />
      </FiltersBar>
      {error && <ErrorBanner error={error} onRetry={() => setTick((n) => n + 1)} />}
      {!docs && !error && <Loading />}
      {docs && (
        <>
          <DataTable
            caption={t('doc.table')}
            rows={docs.data}
            rowKey={(d) => d.id}
            empty={<EmptyState>{t('doc.empty')}</EmptyState>}
            columns={[
              {
                header: t('doc.name'),
                cell: (d) => (
                  <a class="strong-link" href={`/console/knowledge/${encodeURIComponent(ds.id)}/documents/${encodeURIComponent(d.id)}`}>
                    {d.name}
                  </a>
                ),
              },
              {
                header: t('doc.status'),
                cell: (d) => (
                  <span data-status={d.indexing_status}>
                    <StatusBadge tone={toneOf(d.display_status === 'available' ? 'completed' : d.display_status)}>{t(`status.${d.display_status}`)}</StatusBadge>
                    {d.error && <span class="form-error"> {d.error}</span>}
                  </span>
                ),
              },
              {
                header: t('doc.progress'),
                cell: (d) =>
                  d.indexing && d.indexing.total_segments > 0 ? (
                    <span class="progress-line">
                      <progress max={d.indexing.total_segments} value={d.indexing.completed_segments} aria-label={t('doc.segmentsDone', { done: d.indexing.completed_segments, total: d.indexing.total_segments })} />
                      {t('doc.segmentsDone', { done: d.indexing.completed_segments, total: d.indexing.total_segments })}
                    </span>
                  ) : (
                    '—'
                  ),
              },
              { header: t('doc.words'), cell: (d) => f.number(d.word_count), numeric: true },
              { header: t('doc.hits'), cell: (d) => f.number(d.hit_count), numeric: true },
            ]}
          />
          <Pagination page={page} limit={LIMIT} total={docs.total} onPage={setPage} label={t('doc.pages')} />
        </>
      )}
    </section>
  );
}

/** Dify's hit testing: a query, the chunks retrieval finds, their scores. */
function RetrievalTest({ ds }: { ds: DatasetItem }) {
  const t = useT();
  const f = useFormat();
  const [query, setQuery] = useState('');
  const [records, setRecords] = useState<HitRecord[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const r = await consoleApi.post<{ records: HitRecord[] }>(`/datasets/${encodeURIComponent(ds.id)}/hit-testing`, { query });
      setRecords(r.records);
    } catch (err) {
      setError(errText(err));
    }
  };
  return (
    <section class="card" aria-labelledby="hit-title">
      <h2 id="hit-title">{t('hit.title')}</h2>
      <p class="hint">{t('hit.hint')}</p>
      <form class="search-box wide" onSubmit={run}>
        <label class="sr-only" for="hit-query">
          {t('hit.query')}
        </label>
        <input id="hit-query" type="search" required placeholder={t('hit.query')} value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        <button type="submit" class="btn primary">
          {t('hit.run')}
        </button>
      </form>
      {error && (
        <p class="form-error" role="alert">
          {error}
        </p>
      )}
      <div aria-live="polite">
        {records && records.length === 0 && <EmptyState>{t('hit.none')}</EmptyState>}
        {records && records.length > 0 && (
          <ol class="hit-list" aria-label={t('hit.results')}>
            {records.map((r) => (
              <li class="hit">
                <div class="hit-head">
                  <StatusBadge tone="info">{t('hit.score', { score: f.number(r.score, 3) })}</StatusBadge>
                  <span class="hint">
                    {r.segment.document.name} · #{r.segment.position}
                  </span>
                </div>
                <p class="hit-text">{r.segment.content}</p>
              </li>
            ))}
          </ol>
        )}
      </div>
    </section>
  );
}

/** `/knowledge/:datasetId`: the documents with live indexing progress, upload, and the retrieval test. */
export function DatasetPage({ params }: PageProps) {
  const t = useT();
  const session = useSession();
  const ds = useLoad(() => consoleApi.get<DatasetItem>(`/datasets/${encodeURIComponent(params.datasetId!)}`), [params.datasetId]);
  if (ds.error) return <ErrorBanner error={ds.error} onRetry={ds.reload} />;
  if (!ds.data) return <Loading />;
  return (
    <>
      <PageHeader title={ds.data.name} subtitle={ds.data.description || undefined} back={{ href: '/console/knowledge', label: t('kb.title') }} />
      <RetrievalTest ds={ds.data} />
      <Documents ds={ds.data} canEdit={roleAtLeast(session.account.role, 'editor')} />
    </>
  );
}
