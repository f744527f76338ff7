import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, roleAtLeast, type Page } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad, usePoll, useSession } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { FiltersBar, SearchBox } from '../../components/filters-bar.js';
import { DataTable, Pagination } from '../../components/data-table.js';
import { ConfirmDialog, Dialog, FormFooter } from '../../components/dialog.js';
import { EmptyState, ErrorBanner, Loading, StatusBadge, toneOf } from '../../components/states.js';
import { toast } from '../../components/toast.js';
import type { PageProps } from '../../routes.js';
import type { AnnotationItem } from './improve-answer.js';

interface ReplySetting {
  enabled: boolean;
  score_threshold: number | null;
  embedding_model: { embedding_provider_name: string; embedding_model_name: string } | null;
  job: { job_id: string; action: string; job_status: string; error_msg: string } | null;
  progress: { embedded: number; total: number };
  embedding_models: { embedding_provider_name: string; embedding_model_name: string }[];
}

interface Hit {
  id: string;
  question: string;
  score: number;
  source: string;
  created_at: number;
}

const LIMIT = 20;
const errText = (err: unknown) => (err instanceof ConsoleApiError ? err.message : String(err));

/** The reply settings card: on/off, threshold, model, the newest job and its progress (polled while it runs). */
function ReplySettings({ appId, canEdit, onChange }: { appId: string; canEdit: boolean; onChange: () => void }) {
  const t = useT();
  const [s, setS] = useState<ReplySetting | null>(null);
  const [form, setForm] = useState<{ enabled: boolean; threshold: string; model: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const base = `/apps/${encodeURIComponent(appId)}`;
  usePoll(
    async () => {
      const next = await consoleApi.get<ReplySetting>(`${base}/annotation-setting`);
      setS(next);
      setForm((f) => f ?? { enabled: next.enabled, threshold: String(next.score_threshold ?? 0.9), model: next.embedding_model?.embedding_model_name ?? next.embedding_models[0]?.embedding_model_name ?? '' });
      const running = next.job && (next.job.job_status === 'waiting' || next.job.job_status === 'processing');
      return running || (next.enabled && next.progress.embedded < next.progress.total) ? true : false;
    },
    1000,
    [appId, s?.job?.job_id, s?.progress.total],
  );
  if (!s || !form) return <Loading />;
  const apply = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const model = s.embedding_models.find((m) => m.embedding_model_name === form.model) ?? { embedding_provider_name: s.embedding_model?.embedding_provider_name ?? 'dovetail', embedding_model_name: form.model };
    try {
      await consoleApi.post(`${base}/annotation-reply/${form.enabled ? 'enable' : 'disable'}`, { score_threshold: Number(form.threshold), ...model });
      setS({ ...s, job: { job_id: 'pending', action: form.enabled ? 'enable' : 'disable', job_status: 'waiting', error_msg: '' } });
      onChange();
    } catch (err) {
      setError(errText(err));
    }
  };
  const job = s.job;
  return (
    <section class="card" aria-labelledby="reply-title">
      <div class="card-head">
        <h2 id="reply-title">{t('reply.title')}</h2>
        <StatusBadge tone={s.enabled ? 'success' : 'neutral'}>{s.enabled ? t('reply.on') : t('reply.off')}</StatusBadge>
      </div>
      <form class="reply-form" onSubmit={apply}>
        <label class="check">
          <input type="checkbox" checked={form.enabled} disabled={!canEdit} onChange={(e) => setForm({ ...form, enabled: (e.target as HTMLInputElement).checked })} />
          {t('reply.enabled')}
        </label>
        <div class="field">
          <label for="reply-threshold">{t('reply.threshold')}</label>
          <input id="reply-threshold" type="number" min="0" max="1" step="0.01" value={form.threshold} disabled={!canEdit} onInput={(e) => setForm({ ...form, threshold: (e.target as HTMLInputElement).value })} />
        </div>
        <div class="field">
          <label for="reply-model">{t('reply.model')}</label>
          <select id="reply-model" value={form.model} disabled={!canEdit} onChange={(e) => setForm({ ...form, model: (e.target as HTMLSelectElement).value })}>
            {[...new Set([...s.embedding_models.map((m) => m.embedding_model_name), ...(s.embedding_model ? [s.embedding_model.embedding_model_name] : [])])].map((m) => (
              <option value={m}>{m}</option>
            ))}
          </select>
        </div>
        {canEdit && (
          <button type="submit" class="btn primary">
            {t('reply.apply')}
          </button>
        )}
      </form>
      {error && (
        <p class="form-error" role="alert">
          {error}
        </p>
      )}
      <div class="reply-status" role="status" aria-live="polite">
        {job && (
          <span>
            {t('reply.job', { action: t(`job.${job.action}`) })} <StatusBadge tone={toneOf(job.job_status === 'processing' ? 'running' : job.job_status)}>{t(`job.${job.job_status}`)}</StatusBadge>
          </span>
        )}
        {s.enabled && (
          <span class="progress-line">
            <progress max={Math.max(1, s.progress.total)} value={s.progress.embedded} aria-label={t('reply.progress', s.progress)} />
            {t('reply.progress', s.progress)}
          </span>
        )}
        {job?.job_status === 'error' && <span class="form-error">{t('reply.error', { message: job.error_msg })}</span>}
      </div>
    </section>
  );
}

/** The annotation editor (add or edit): question and answer. */
function EditDialog({ appId, item, open, onClose, onSaved }: { appId: string; item: AnnotationItem | null; open: boolean; onClose: () => void; onSaved: () => void }) {
  const t = useT();
  const [q, setQ] = useState(item?.question ?? '');
  const [a, setA] = useState(item?.answer ?? '');
  const [error, setError] = useState<string | null>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const base = `/apps/${encodeURIComponent(appId)}/annotations`;
      if (item) await consoleApi.put(`${base}/${item.id}`, { question: q, answer: a });
      else await consoleApi.post(base, { question: q, answer: a });
      toast(t('ann.saved'));
      onSaved();
    } catch (err) {
      setError(errText(err));
    }
  };
  return (
    <Dialog title={item ? t('ann.edit') : t('ann.add')} open={open} onClose={onClose}>
      <form class="stack" onSubmit={save}>
        <label for="ann-q">{t('ann.question')}</label>
        <textarea id="ann-q" rows={2} required value={q} onInput={(e) => setQ((e.target as HTMLTextAreaElement).value)} />
        <label for="ann-a">{t('ann.answer')}</label>
        <textarea id="ann-a" rows={5} required value={a} onInput={(e) => setA((e.target as HTMLTextAreaElement).value)} />
        <FormFooter error={error} submitLabel={t('ann.save')} onCancel={onClose} />
      </form>
    </Dialog>
  );
}

/** The replies an annotation gave. */
function HistoryDialog({ appId, item, onClose }: { appId: string; item: AnnotationItem; onClose: () => void }) {
  const t = useT();
  const f = useFormat();
  const [page, setPage] = useState(1);
  const h = useLoad(() => consoleApi.get<Page<Hit>>(`/apps/${encodeURIComponent(appId)}/annotations/${item.id}/hit-histories?page=${page}&limit=10`), [item.id, page]);
  return (
    <Dialog title={`${t('ann.history')}: ${item.question}`} open onClose={onClose}>
      {h.error && <ErrorBanner error={h.error} onRetry={h.reload} />}
      {!h.data && !h.error && <Loading />}
      {h.data && (
        <>
          <DataTable
            caption={t('ann.historyTable')}
            rows={h.data.data}
            rowKey={(r) => r.id}
            empty={<EmptyState>{t('ann.historyEmpty')}</EmptyState>}
            columns={[
              { header: t('ann.query'), cell: (r) => r.question },
              { header: t('ann.score'), cell: (r) => f.number(r.score, 3), numeric: true },
              { header: t('ann.source'), cell: (r) => r.source },
              { header: t('ann.time'), cell: (r) => f.dateTime(r.created_at) },
            ]}
          />
          <Pagination page={page} limit={10} total={h.data.total} onPage={setPage} label={t('ann.history')} />
        </>
      )}
    </Dialog>
  );
}

/** `/apps/:appId/annotations`: reply settings, the list with search and hit counts, edit, delete, history, CSV import and export. */
export function AnnotationsPage({ params }: PageProps) {
  const t = useT();
  const f = useFormat();
  const session = useSession();
  const canEdit = roleAtLeast(session.account.role, 'editor');
  const appId = params.appId!;
  const base = `/apps/${encodeURIComponent(appId)}`;
  const [keyword, setKeyword] = useState('');
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<AnnotationItem | 'new' | null>(null);
  const [history, setHistory] = useState<AnnotationItem | null>(null);
  const [deleting, setDeleting] = useState<AnnotationItem | null>(null);
  const [importError, setImportError] = useState<string | null>(null);
  const list = useLoad(() => consoleApi.get<Page<AnnotationItem>>(`${base}/annotations?page=${page}&limit=${LIMIT}&keyword=${encodeURIComponent(keyword)}`), [appId, page, keyword]);

  const importCsv = async (e: Event) => {
    e.preventDefault();
    setImportError(null);
    const input = (e.target as HTMLFormElement).elements.namedItem('file') as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    const fd = new FormData();
    fd.append('file', file);
    try {
      const r = await consoleApi.upload<{ imported: number }>(`${base}/annotations/import`, fd);
      toast(t('ann.imported', { n: r.imported }));
      input.value = '';
      list.reload();
    } catch (err) {
      setImportError(errText(err));
    }
  };
  const remove = async () => {
    if (!deleting) return;
    try {
      await consoleApi.delete(`${base}/annotations/${deleting.id}`);
      toast(t('ann.deleted'));
      list.reload();
    } catch (err) {
      toast(errText(err), 'error');
    }
    setDeleting(null);
  };

  return (
    <>
      <PageHeader
        title={t('ann.title')}
        subtitle={t('ann.subtitle')}
        actions={
          <>
            <a class="btn" href={`/console/api${base}/annotations/export`} download>
              {t('ann.export')}
            </a>
            {canEdit && (
              <button type="button" class="btn primary" onClick={() => setEditing('new')}>
                {t('ann.add')}
              </button>
            )}
          </>
        }
      />
      <ReplySettings appId={appId} canEdit={canEdit} onChange={list.reload} />
      {canEdit && (
        <form class="card import-form" onSubmit={importCsv}>
          <label for="ann-import">{t('ann.importFile')}</label>
          <input id="ann-import" name="file" type="file" accept=".csv,text/csv" required />
          <button type="submit" class="btn">
            {t('ann.import')}
          </button>
          {importError && (
            <p class="form-error" role="alert">
              {importError}
            </p>
          )}
        </form>
      )}
      <FiltersBar label={t('ann.search')}>
        <SearchBox
          value={keyword}
          label={t('ann.search')}
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
            caption={t('ann.table')}
            rows={list.data.data}
            rowKey={(r) => r.id}
            empty={<EmptyState>{t('ann.empty')}</EmptyState>}
            columns={[
              { header: t('ann.question'), cell: (r) => <span class="clamp">{r.question}</span> },
              { header: t('ann.answer'), cell: (r) => <span class="clamp">{r.answer}</span> },
              { header: t('ann.hits'), cell: (r) => f.number(r.hit_count), numeric: true },
              { header: t('ann.created'), cell: (r) => f.dateTime(r.created_at) },
              {
                header: t('ann.actions'),
                cell: (r) => (
                  <div class="row-actions">
                    <button type="button" class="btn small" aria-label={`${t('ann.history')}: ${r.question}`} onClick={() => setHistory(r)}>
                      {t('ann.history')}
                    </button>
                    {canEdit && (
                      <button type="button" class="btn small" aria-label={`${t('ann.edit')}: ${r.question}`} onClick={() => setEditing(r)}>
                        {t('ann.edit')}
                      </button>
                    )}
                    {canEdit && (
                      <button type="button" class="btn small" aria-label={`${t('ann.delete')}: ${r.question}`} onClick={() => setDeleting(r)}>
                        {t('ann.delete')}
                      </button>
                    )}
                  </div>
                ),
              },
            ]}
          />
          <Pagination page={page} limit={LIMIT} total={list.data.total} onPage={setPage} label={t('ann.pages')} />
        </>
      )}
      {editing && (
        <EditDialog
          key={editing === 'new' ? 'new' : editing.id}
          appId={appId}
          item={editing === 'new' ? null : editing}
          open
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null);
            list.reload();
          }}
        />
      )}
      {history && <HistoryDialog appId={appId} item={history} onClose={() => setHistory(null)} />}
      <ConfirmDialog
        title={t('ann.delete')}
        message={deleting ? t('ann.confirmDelete', { question: deleting.question }) : ''}
        confirmLabel={t('ann.delete')}
        danger
        open={deleting !== null}
        onConfirm={() => void remove()}
        onClose={() => setDeleting(null)}
      />
    </>
  );
}
