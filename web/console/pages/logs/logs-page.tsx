import type { ComponentType } from 'preact';
import { useState } from 'preact/hooks';
import { consoleApi } from '../../lib/console-api.js';
import { useFormat, useT, type T } from '../../lib/i18n.js';
import { useLoad } from '../../lib/hooks.js';
import { navigate, useLocation } from '../../lib/router.js';
import { PageHeader } from '../../components/page-header.js';
import { DataTable, Pagination } from '../../components/data-table.js';
import { FiltersBar, SearchBox, TimeRangePicker, type TimeRange } from '../../components/filters-bar.js';
import { Dialog } from '../../components/dialog.js';
import { EmptyState, ErrorBanner, Loading, StatusBadge, toneOf } from '../../components/states.js';
import type { PageProps } from '../../routes.js';
import type { AppItem } from '../apps/apps-list.js';

/** A list answer of the logs API. */
interface LogPage<T> {
  data: T[];
  page: number;
  limit: number;
  total: number;
  total_capped: boolean;
  has_more: boolean;
  search?: { messages: number; older_than: number | null };
}

interface FeedbackSummary {
  like: number;
  dislike: number;
}

interface ConversationRow {
  id: string;
  name: string;
  end_user: { id: string; session_id: string | null };
  message_count: number;
  first_query: string | null;
  feedback: FeedbackSummary;
  total_tokens: number;
  average_latency: number;
  created_at: number;
  updated_at: number;
}

interface LogFeedback {
  rating: 'like' | 'dislike';
  content: string | null;
}

/** One message of a log (the conversation drawer, a completion app's list). */
export interface LogMessage {
  id: string;
  conversation_id: string | null;
  end_user: { id: string; session_id: string | null };
  query: string;
  answer: string;
  inputs: Record<string, unknown>;
  status: string;
  error: string | null;
  total_tokens: number;
  latency: number;
  workflow_run_id: string | null;
  annotation_id: string | null;
  feedback: { user: LogFeedback | null; admin: LogFeedback | null };
  retriever_resources: { id: string; document_name?: string; content?: string; score?: number }[];
  created_at: number;
}

interface RunRow {
  id: string;
  status: string;
  error: string | null;
  elapsed_time: number;
  total_tokens: number;
  total_steps: number;
  end_user: { id: string; session_id: string };
  created_at: number;
}

/**
 * The Logs page's hook for other features (docs: console-contract.md, "Logs page hooks"): each
 * answer in the conversation drawer renders every registered action with the app and the message
 * (the annotations feature adds "Improve this answer").
 */
export interface AnswerActionProps {
  appId: string;
  message: LogMessage;
}
const ANSWER_ACTIONS: ComponentType<AnswerActionProps>[] = [];
export function addAnswerAction(action: ComponentType<AnswerActionProps>): void {
  if (!ANSWER_ACTIONS.includes(action)) ANSWER_ACTIONS.push(action);
}

const CHAT_MODES = new Set(['chat', 'agent-chat', 'advanced-chat']);

/** The query string of a list: the page's filters as the API takes them. */
function listQuery(search: URLSearchParams, extra: string[]): string {
  const q = new URLSearchParams();
  for (const k of ['page', 'start', 'end', 'keyword', ...extra]) {
    const v = search.get(k);
    if (v) q.set(k, v);
  }
  q.set('limit', '20');
  return q.toString();
}

function useFilters(base: string) {
  const { search } = useLocation();
  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams(search);
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    if (!('page' in changes)) next.delete('page');
    const qs = next.toString();
    navigate(qs ? `${base}?${qs}` : base);
  };
  return { search, set, page: Math.max(1, Number(search.get('page')) || 1) };
}

function totalLabel(t: T, p: { total: number; total_capped: boolean }): string {
  return p.total_capped ? t('logs.capped', { total: p.total }) : t('console.total', { total: p.total });
}

/** The app's log: conversations (chat-type apps), messages (completion apps) or runs (workflow apps). */
export function LogsPage({ params }: PageProps) {
  const t = useT();
  const appId = params.appId!;
  const app = useLoad(() => consoleApi.get<AppItem>(`/apps/${encodeURIComponent(appId)}`), [appId]);
  if (app.error) return <ErrorBanner error={app.error} onRetry={app.reload} />;
  if (!app.data) return <Loading />;
  const a = app.data;
  return (
    <>
      <PageHeader title={t('logs.title')} subtitle={a.name} back={{ href: `/console/apps/${a.id}`, label: a.name }} />
      {a.mode === 'workflow' ? <RunsLog app={a} /> : CHAT_MODES.has(a.mode) ? <ConversationsLog app={a} /> : <MessagesLog app={a} />}
    </>
  );
}

function CommonFilters({ search, set, withFeedback, statusChoices }: { search: URLSearchParams; set: (c: Record<string, string>) => void; withFeedback?: boolean; statusChoices?: readonly string[] }) {
  const t = useT();
  const range: TimeRange = { from: search.get('start') ?? '', to: search.get('end') ?? '' };
  return (
    <FiltersBar label={t('logs.filters')}>
      <TimeRangePicker value={range} onChange={(r) => set({ start: r.from, end: r.to })} />
      {withFeedback && (
        <label class="filter-select">
          {t('logs.feedback')}{' '}
          <select value={search.get('feedback') ?? ''} onChange={(e) => set({ feedback: (e.target as HTMLSelectElement).value })}>
            <option value="">{t('logs.feedback.all')}</option>
            <option value="like">{t('logs.feedback.like')}</option>
            <option value="dislike">{t('logs.feedback.dislike')}</option>
            <option value="none">{t('logs.feedback.none')}</option>
          </select>
        </label>
      )}
      {statusChoices && (
        <label class="filter-select">
          {t('logs.status')}{' '}
          <select value={search.get('status') ?? ''} onChange={(e) => set({ status: (e.target as HTMLSelectElement).value })}>
            <option value="">{t('logs.status.all')}</option>
            {statusChoices.map((s) => (
              <option value={s}>{t(`logs.st.${s}`)}</option>
            ))}
          </select>
        </label>
      )}
      <SearchBox value={search.get('keyword') ?? ''} label={t('logs.search')} onSearch={(k) => set({ keyword: k })} />
    </FiltersBar>
  );
}

function FeedbackCell({ f }: { f: FeedbackSummary }) {
  const t = useT();
  if (f.like === 0 && f.dislike === 0) return <span class="muted">—</span>;
  return (
    <span class="feedback-cell">
      {f.like > 0 && <StatusBadge tone="success">{t('logs.likes', { n: f.like })}</StatusBadge>} {f.dislike > 0 && <StatusBadge tone="danger">{t('logs.dislikes', { n: f.dislike })}</StatusBadge>}
    </span>
  );
}

function SearchNote({ p }: { p: LogPage<unknown> }) {
  const t = useT();
  if (!p.search || p.search.older_than === null) return null;
  return <p class="note" role="note">{t('logs.searched', { n: p.search.messages })}</p>;
}

function ConversationsLog({ app }: { app: AppItem }) {
  const t = useT();
  const f = useFormat();
  const base = `/console/apps/${app.id}/logs`;
  const { search, set, page } = useFilters(base);
  const open = search.get('conversation');
  const list = useLoad(() => consoleApi.get<LogPage<ConversationRow>>(`/apps/${app.id}/conversations?${listQuery(search, ['feedback'])}`), [search.toString()]);
  return (
    <>
      <CommonFilters search={search} set={set} withFeedback />
      {list.error && <ErrorBanner error={list.error} onRetry={list.reload} />}
      {list.loading && !list.data && <Loading />}
      {list.data && (
        <>
          <SearchNote p={list.data} />
          <p class="muted">{totalLabel(t, list.data)}</p>
          <DataTable
            caption={t('logs.conversations')}
            rows={list.data.data}
            rowKey={(c) => c.id}
            empty={<EmptyState>{t('logs.none')}</EmptyState>}
            columns={[
              {
                header: t('logs.firstQuery'),
                cell: (c) => (
                  <a class="strong-link" href={`${base}?${new URLSearchParams({ ...Object.fromEntries(search), conversation: c.id }).toString()}`} aria-label={t('logs.open', { name: c.first_query ?? c.name })}>
                    {c.first_query ?? c.name}
                  </a>
                ),
              },
              { header: t('logs.endUser'), cell: (c) => c.end_user.session_id ?? c.end_user.id },
              { header: t('logs.messageCount'), cell: (c) => c.message_count, numeric: true },
              { header: t('logs.feedback'), cell: (c) => <FeedbackCell f={c.feedback} /> },
              { header: t('logs.tokens'), cell: (c) => c.total_tokens, numeric: true },
              { header: t('logs.latency'), cell: (c) => t('logs.seconds', { n: c.average_latency.toFixed(2) }), numeric: true },
              { header: t('logs.updated'), cell: (c) => f.dateTime(c.updated_at) },
            ]}
          />
          <Pagination page={page} limit={20} total={list.data.total} label={t('logs.conversations')} onPage={(p) => set({ page: String(p) })} />
        </>
      )}
      {open && <ConversationDrawer app={app} conversationId={open} onClose={() => set({ conversation: '', page: search.get('page') ?? '' })} />}
    </>
  );
}

function FeedbackLine({ label, f }: { label: string; f: LogFeedback | null }) {
  const t = useT();
  if (!f) return null;
  return (
    <p class="feedback-line">
      {label}: <StatusBadge tone={toneOf(f.rating)}>{t(`logs.feedback.${f.rating}`)}</StatusBadge>
      {f.content && <q>{f.content}</q>}
    </p>
  );
}

/** One exchange: the question, the answer with its figures, feedback, the run that answered it and the actions slot. */
export function MessageCard({ app, m }: { app: AppItem; m: LogMessage }) {
  const t = useT();
  const f = useFormat();
  return (
    <article class="log-message" aria-label={`${t('logs.question')}: ${m.query.slice(0, 80)}`}>
      <h3 class="log-q">{m.query || t('logs.question')}</h3>
      <div class="log-a">
        <span class="sr-only">{t('logs.answer')}: </span>
        {m.answer}
      </div>
      {m.error && (
        <p class="log-error">
          {t('logs.error')}: {m.error}
        </p>
      )}
      <p class="log-meta">
        <StatusBadge tone={toneOf(m.status)}>{t(`logs.st.${m.status}`)}</StatusBadge> {f.dateTime(m.created_at)} · {t('logs.tokens')} {m.total_tokens} · {t('logs.latency')} {t('logs.seconds', { n: m.latency.toFixed(2) })}
      </p>
      <FeedbackLine label={t('logs.userFeedback')} f={m.feedback.user} />
      <FeedbackLine label={t('logs.adminFeedback')} f={m.feedback.admin} />
      {m.retriever_resources.length > 0 && (
        <details>
          <summary>
            {t('logs.citations')} ({m.retriever_resources.length})
          </summary>
          <ul>
            {m.retriever_resources.map((r) => (
              <li key={r.id}>
                {r.document_name ?? r.id}
                {r.score !== undefined && ` (${r.score.toFixed(2)})`}
              </li>
            ))}
          </ul>
        </details>
      )}
      <div class="log-actions">
        {m.workflow_run_id && (
          <a class="btn small" href={`/console/apps/${app.id}/runs/${m.workflow_run_id}`}>
            {t('logs.viewTrace')}
          </a>
        )}
        {ANSWER_ACTIONS.map((A) => (
          <A appId={app.id} message={m} />
        ))}
      </div>
    </article>
  );
}

function ConversationDrawer({ app, conversationId, onClose }: { app: AppItem; conversationId: string; onClose: () => void }) {
  const t = useT();
  const [page, setPage] = useState(1);
  const c = useLoad(
    () => consoleApi.get<{ id: string; name: string; end_user: { session_id: string | null }; messages: LogPage<LogMessage> }>(`/apps/${app.id}/conversations/${encodeURIComponent(conversationId)}?page=${page}&limit=50`),
    [conversationId, page],
  );
  return (
    <Dialog title={c.data ? t('logs.conversation', { name: c.data.name }) : t('logs.conversations')} open onClose={onClose}>
      {c.error && <ErrorBanner error={c.error} onRetry={c.reload} />}
      {!c.data && !c.error && <Loading />}
      {c.data && (
        <div class="log-drawer">
          <p class="muted">
            {t('logs.endUser')}: {c.data.end_user.session_id}
          </p>
          {c.data.messages.data.map((m) => (
            <MessageCard key={m.id} app={app} m={m} />
          ))}
          <Pagination page={page} limit={50} total={c.data.messages.total} label={t('logs.messages')} onPage={setPage} />
        </div>
      )}
    </Dialog>
  );
}

function MessagesLog({ app }: { app: AppItem }) {
  const t = useT();
  const base = `/console/apps/${app.id}/logs`;
  const { search, set, page } = useFilters(base);
  const list = useLoad(() => consoleApi.get<LogPage<LogMessage>>(`/apps/${app.id}/messages?${listQuery(search, ['feedback'])}`), [search.toString()]);
  return (
    <>
      <CommonFilters search={search} set={set} withFeedback />
      {list.error && <ErrorBanner error={list.error} onRetry={list.reload} />}
      {list.loading && !list.data && <Loading />}
      {list.data && (
        <>
          <SearchNote p={list.data} />
          <p class="muted">{totalLabel(t, list.data)}</p>
          {list.data.data.length === 0 && <EmptyState>{t('logs.noMessages')}</EmptyState>}
          <div class="log-list">
            {list.data.data.map((m) => (
              <MessageCard key={m.id} app={app} m={m} />
            ))}
          </div>
          <Pagination page={page} limit={20} total={list.data.total} label={t('logs.messages')} onPage={(p) => set({ page: String(p) })} />
        </>
      )}
    </>
  );
}

const RUN_STATUSES = ['succeeded', 'failed', 'stopped', 'partial-succeeded', 'paused', 'running'] as const;

function RunsLog({ app }: { app: AppItem }) {
  const t = useT();
  const f = useFormat();
  const base = `/console/apps/${app.id}/logs`;
  const { search, set, page } = useFilters(base);
  const list = useLoad(() => consoleApi.get<LogPage<RunRow>>(`/apps/${app.id}/runs?${listQuery(search, ['status'])}`), [search.toString()]);
  return (
    <>
      <CommonFilters search={search} set={set} statusChoices={RUN_STATUSES} />
      {list.error && <ErrorBanner error={list.error} onRetry={list.reload} />}
      {list.loading && !list.data && <Loading />}
      {list.data && (
        <>
          <p class="muted">{totalLabel(t, list.data)}</p>
          <DataTable
            caption={t('logs.runs')}
            rows={list.data.data}
            rowKey={(r) => r.id}
            empty={<EmptyState>{t('logs.noRuns')}</EmptyState>}
            columns={[
              {
                header: t('logs.created'),
                cell: (r) => (
                  <a class="strong-link" href={`/console/apps/${app.id}/runs/${r.id}`}>
                    {f.dateTime(r.created_at)}
                  </a>
                ),
              },
              { header: t('logs.status'), cell: (r) => <StatusBadge tone={toneOf(r.status)}>{t(`logs.st.${r.status}`)}</StatusBadge> },
              { header: t('logs.duration'), cell: (r) => t('logs.seconds', { n: r.elapsed_time.toFixed(2) }), numeric: true },
              { header: t('logs.tokens'), cell: (r) => r.total_tokens, numeric: true },
              { header: t('logs.steps'), cell: (r) => r.total_steps, numeric: true },
              { header: t('logs.endUser'), cell: (r) => r.end_user.session_id },
            ]}
          />
          <Pagination page={page} limit={20} total={list.data.total} label={t('logs.runs')} onPage={(p) => set({ page: String(p) })} />
        </>
      )}
    </>
  );
}
