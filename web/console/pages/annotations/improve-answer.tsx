import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, roleAtLeast } from '../../lib/console-api.js';
import { useT } from '../../lib/i18n.js';
import { Dialog, FormFooter } from '../../components/dialog.js';
import { toast } from '../../components/toast.js';
import { useLoad, useSession } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { ErrorBanner, Loading } from '../../components/states.js';
import type { PageProps } from '../../routes.js';
import { addAnswerAction, type AnswerActionProps } from '../logs/logs-page.js';

/** What the annotation API answers for a message made into an annotation. */
export interface AnnotationItem {
  id: string;
  question: string;
  answer: string;
  hit_count: number;
  created_at: number;
}

/** The form: the question and the answer given, a text box for the better answer, save. */
function ImproveForm({ appId, messageId, query, answer, initial, onSaved, onCancel }: { appId: string; messageId: string; query: string; answer: string; initial: string; onSaved: (a: AnnotationItem) => void; onCancel?: () => void }) {
  const t = useT();
  const [text, setText] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const made = await consoleApi.post<AnnotationItem>(`/apps/${encodeURIComponent(appId)}/annotations`, { message_id: messageId, answer: text });
      toast(t('improve.done'));
      onSaved(made);
    } catch (err) {
      setError(err instanceof ConsoleApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  const id = `improve-${messageId}`;
  return (
    <form class="stack" onSubmit={save}>
      <p class="hint">{t('improve.hint')}</p>
      <div class="qa-quote">
        <div class="qa-label">{t('ann.question')}</div>
        <div class="qa-text">{query}</div>
        <div class="qa-label">{t('improve.original')}</div>
        <div class="qa-text">{answer}</div>
      </div>
      <label for={id}>{t('improve.better')}</label>
      <textarea id={id} value={text} required rows={5} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
      <FormFooter error={error} submitLabel={t('ann.save')} onCancel={onCancel} disabled={busy || text.trim() === ''} />
    </form>
  );
}

/**
 * "Improve this answer" on an answer in the logs: a button that opens a dialog where the better
 * answer is written; saving makes (or edits) the message's annotation, as Dify's console does.
 * Self-contained: mount it beside an answer with the app, the message and its query and answer.
 */
export function ImproveAnswer({ appId, messageId, query, answer, onSaved }: { appId: string; messageId: string; query: string; answer: string; onSaved?: (a: AnnotationItem) => void }) {
  const t = useT();
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" class="btn small" onClick={() => setOpen(true)}>
        {t('improve.button')}
      </button>
      <Dialog title={t('improve.title')} open={open} onClose={() => setOpen(false)}>
        <ImproveForm
          appId={appId}
          messageId={messageId}
          query={query}
          answer={answer}
          initial={answer}
          onCancel={() => setOpen(false)}
          onSaved={(a) => {
            setOpen(false);
            onSaved?.(a);
          }}
        />
      </Dialog>
    </>
  );
}

/** The Logs page's answer action (its hook): "Improve this answer" beside every answer, for editors. */
function ImproveAnswerAction({ appId, message }: AnswerActionProps) {
  const session = useSession();
  if (!roleAtLeast(session.account.role, 'editor')) return null;
  return <ImproveAnswer appId={appId} messageId={message.id} query={message.query} answer={message.answer} />;
}
addAnswerAction(ImproveAnswerAction);

/** `/apps/:appId/annotations/improve/:messageId`: the same form as a page a log entry can link to. */
export function ImproveAnswerPage({ params }: PageProps) {
  const t = useT();
  const appId = params.appId!;
  const messageId = params.messageId!;
  const m = useLoad(
    () => consoleApi.get<{ message: { id: string; query: string; answer: string }; annotation: AnnotationItem | null }>(`/apps/${encodeURIComponent(appId)}/messages/${encodeURIComponent(messageId)}/annotation`),
    [appId, messageId],
  );
  const back = `/console/apps/${encodeURIComponent(appId)}/annotations`;
  return (
    <>
      <PageHeader title={t('improve.page')} back={{ href: back, label: t('ann.title') }} />
      {m.error && <ErrorBanner error={m.error} onRetry={m.reload} />}
      {!m.data && !m.error && <Loading />}
      {m.data && (
        <div class="card">
          {m.data.annotation && <p class="hint">{t('improve.already')}</p>}
          <ImproveForm appId={appId} messageId={messageId} query={m.data.message.query} answer={m.data.message.answer} initial={m.data.annotation?.answer ?? m.data.message.answer} onSaved={() => m.reload()} />
        </div>
      )}
    </>
  );
}
