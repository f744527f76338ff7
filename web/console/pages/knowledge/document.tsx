import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, roleAtLeast, type Page } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad, useSession } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { FiltersBar, SearchBox } from '../../components/filters-bar.js';
import { Pagination } from '../../components/data-table.js';
import { Dialog, FormFooter } from '../../components/dialog.js';
import { EmptyState, ErrorBanner, Loading, StatusBadge } from '../../components/states.js';
import { toast } from '../../components/toast.js';
import type { PageProps } from '../../routes.js';

interface Child {
  id: string;
  content: string;
  position: number;
}

interface Segment {
  id: string;
  position: number;
  content: string;
  answer: string | null;
  word_count: number;
  hit_count: number;
  enabled: boolean;
  child_chunks: Child[];
}

type Segments = Page<Segment> & { document: { name: string }; doc_form: string };

const LIMIT = 20;
const errText = (err: unknown) => (err instanceof ConsoleApiError ? err.message : String(err));

/** Edits one chunk's text (a segment, or a child chunk of a parent-child document). */
function EditChunk({ title, content, answer, onSave, onClose }: { title: string; content: string; answer?: string | null; onSave: (content: string, answer?: string) => Promise<void>; onClose: () => void }) {
  const t = useT();
  const [text, setText] = useState(content);
  const [ans, setAns] = useState(answer ?? '');
  const [error, setError] = useState<string | null>(null);
  return (
    <Dialog title={title} open onClose={onClose}>
      <form
        class="stack"
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            await onSave(text, answer === null || answer === undefined ? undefined : ans);
          } catch (err) {
            setError(errText(err));
          }
        }}
      >
        <label for="chunk-content">{t('seg.content')}</label>
        <textarea id="chunk-content" rows={8} required value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
        {answer !== null && answer !== undefined && (
          <>
            <label for="chunk-answer">{t('seg.answer')}</label>
            <textarea id="chunk-answer" rows={4} value={ans} onInput={(e) => setAns((e.target as HTMLTextAreaElement).value)} />
          </>
        )}
        <FormFooter error={error} submitLabel={t('seg.save')} onCancel={onClose} />
      </form>
    </Dialog>
  );
}

/** `/knowledge/:datasetId/documents/:documentId`: the document's chunks to read, search, edit, disable and enable. */
export function DocumentPage({ params }: PageProps) {
  const t = useT();
  const f = useFormat();
  const session = useSession();
  const canEdit = roleAtLeast(session.account.role, 'editor');
  const base = `/datasets/${encodeURIComponent(params.datasetId!)}/documents/${encodeURIComponent(params.documentId!)}/segments`;
  const [keyword, setKeyword] = useState('');
  const [state, setState] = useState<'all' | 'true' | 'false'>('all');
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<{ seg: Segment; child?: Child } | null>(null);
  const list = useLoad(() => consoleApi.get<Segments>(`${base}?page=${page}&limit=${LIMIT}&keyword=${encodeURIComponent(keyword)}&enabled=${state}`), [base, page, keyword, state]);
  const toggle = async (s: Segment) => {
    try {
      await consoleApi.patch(`${base}/${s.id}`, { enabled: !s.enabled });
      toast(t('seg.saved'));
      list.reload();
    } catch (err) {
      toast(errText(err), 'error');
    }
  };
  const back = `/console/knowledge/${encodeURIComponent(params.datasetId!)}`;
  return (
    <>
      <PageHeader title={list.data?.document.name ?? t('seg.title')} subtitle={list.data ? `${t('seg.title')}: ${f.number(list.data.total)}` : undefined} back={{ href: back, label: t('doc.title') }} />
      <FiltersBar label={t('seg.search')}>
        <SearchBox
          value={keyword}
          label={t('seg.search')}
          onSearch={(v) => {
            setPage(1);
            setKeyword(v);
          }}
        />
        <label class="inline-field">
          {t('seg.filter')}
          <select
            value={state}
            onChange={(e) => {
              setPage(1);
              setState((e.target as HTMLSelectElement).value as 'all' | 'true' | 'false');
            }}
          >
            <option value="all">{t('seg.all')}</option>
            <option value="true">{t('seg.enabledOnly')}</option>
            <option value="false">{t('seg.disabledOnly')}</option>
          </select>
        </label>
      </FiltersBar>
      {list.error && <ErrorBanner error={list.error} onRetry={list.reload} />}
      {!list.data && !list.error && <Loading />}
      {list.data && list.data.data.length === 0 && <EmptyState>{t('seg.empty')}</EmptyState>}
      {list.data && list.data.data.length > 0 && (
        <ol class="chunk-list" aria-label={t('seg.table')}>
          {list.data.data.map((s) => (
            <li class={`chunk ${s.enabled ? '' : 'chunk-off'}`} key={s.id}>
              <div class="chunk-head">
                <span class="chunk-pos">#{s.position}</span>
                <StatusBadge tone={s.enabled ? 'success' : 'warn'}>{s.enabled ? t('seg.enabled') : t('seg.disabled')}</StatusBadge>
                <span class="hint">
                  {f.number(s.word_count)} · {t('doc.hits')} {f.number(s.hit_count)}
                </span>
                {canEdit && (
                  <span class="row-actions">
                    <button type="button" class="btn small" aria-label={`${t('seg.edit')} #${s.position}`} onClick={() => setEditing({ seg: s })}>
                      {t('seg.edit')}
                    </button>
                    <button type="button" class="btn small" aria-label={`${s.enabled ? t('seg.disable') : t('seg.enable')} #${s.position}`} onClick={() => void toggle(s)}>
                      {s.enabled ? t('seg.disable') : t('seg.enable')}
                    </button>
                  </span>
                )}
              </div>
              <p class="chunk-text">{s.content}</p>
              {s.answer && <p class="chunk-text chunk-answer">{s.answer}</p>}
              {s.child_chunks.length > 0 && (
                <details class="children">
                  <summary>
                    {t('seg.children')} ({s.child_chunks.length})
                  </summary>
                  <ol>
                    {s.child_chunks.map((c) => (
                      <li key={c.id}>
                        <span class="chunk-text">{c.content}</span>
                        {canEdit && (
                          <button type="button" class="btn small" aria-label={`${t('seg.edit')} #${s.position}.${c.position}`} onClick={() => setEditing({ seg: s, child: c })}>
                            {t('seg.edit')}
                          </button>
                        )}
                      </li>
                    ))}
                  </ol>
                </details>
              )}
            </li>
          ))}
        </ol>
      )}
      {list.data && <Pagination page={page} limit={LIMIT} total={list.data.total} onPage={setPage} label={t('seg.pages')} />}
      {editing && (
        <EditChunk
          title={editing.child ? `${t('seg.edit')} #${editing.seg.position}.${editing.child.position}` : `${t('seg.edit')} #${editing.seg.position}`}
          content={editing.child ? editing.child.content : editing.seg.content}
          answer={editing.child ? undefined : editing.seg.answer}
          onClose={() => setEditing(null)}
          onSave={async (content, answer) => {
            if (editing.child) await consoleApi.patch(`${base}/${editing.seg.id}/child_chunks/${editing.child.id}`, { content });
            else await consoleApi.patch(`${base}/${editing.seg.id}`, { content, ...(answer !== undefined ? { answer } : {}) });
            toast(t('seg.saved'));
            setEditing(null);
            list.reload();
          }}
        />
      )}
    </>
  );
}
