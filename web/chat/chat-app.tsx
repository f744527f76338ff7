import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { StreamHandle } from '../lib/api.js';
import type { SseEvent } from '../lib/sse.js';
import type { Conversation } from '../lib/types.js';
import type { Boot } from '../shared/boot.js';
import { acceptOf, apiInputs, AppIcon, fieldsOf, fileRef, InputsForm, Markdown, missingField, SiteFooter, type FileRef, type InputValues } from '../shared/components.js';
import { Icon } from '../shared/icons.js';
import { Answer, Question } from './answer.js';
import { ConversationList, type ConversationActions } from './conversation-list.js';
import { foldEvent, newTurn, turnOf, type Turn } from './turn.js';

/** The chat page (`/chat/{code}`) and, with `embedded`, the chatbot in an iframe (`/chatbot/{code}`). */
export function ChatApp({ b, embedded }: { b: Boot; embedded: boolean }) {
  const { api, t, params } = b;
  const site = b.site.site;
  const fields = useMemo(() => fieldsOf(params.user_input_form), [params]);
  const [pinned, setPinned] = useState<Conversation[]>([]);
  const [others, setOthers] = useState<Conversation[]>([]);
  const [currentId, setCurrentId] = useState<string | null>(b.url.system.conversation_id ?? null);
  const [turns, setTurns] = useState<Turn[]>([]);
  const [inputs, setInputs] = useState<InputValues>(() => ({ ...defaults(fields), ...b.url.inputs }));
  const [draft, setDraft] = useState('');
  const [files, setFiles] = useState<FileRef[]>([]);
  const [uploading, setUploading] = useState(false);
  const [notice, setNotice] = useState('');
  const [suggestions, setSuggestions] = useState<string[]>([]);
  const [drawer, setDrawer] = useState(false);
  const [toggled, setToggled] = useState(false);
  const stream = useRef<StreamHandle | null>(null);
  /** Turns the person stopped: their stream's end does not make them `done`. */
  const stopped = useRef(new Set<string>());
  const composer = useRef<HTMLTextAreaElement>(null);
  const threadEnd = useRef<HTMLDivElement>(null);
  const busy = turns.some((x) => x.status === 'streaming');

  const upload = params.file_upload;
  const uploadOn = !!(upload?.enabled || upload?.image?.enabled);
  const uploadLimit = upload?.number_limits || upload?.image?.number_limits || 3;
  const accept = upload?.enabled ? acceptOf(upload.allowed_file_types, upload.allowed_file_extensions) : 'image/*';

  async function loadConversations() {
    const [p, o] = await Promise.all([api.conversations(true), api.conversations(false)]);
    setPinned(p.data);
    setOthers(o.data);
  }

  useEffect(() => {
    void loadConversations().catch((err: Error) => setNotice(t('error', { message: err.message })));
    if (currentId) void open(currentId);
    if (embedded && window.parent !== window) {
      const onMessage = (e: MessageEvent) => {
        const d = e.data as { type?: string; payload?: { isToggledByButton?: boolean } } | null;
        if (e.source === window.parent && d?.type === 'dify-chatbot-config') setToggled(!!d.payload?.isToggledByButton);
      };
      window.addEventListener('message', onMessage);
      window.parent.postMessage({ type: 'dify-chatbot-iframe-ready' }, '*');
      return () => window.removeEventListener('message', onMessage);
    }
    return undefined;
  }, []);

  useEffect(() => {
    threadEnd.current?.scrollIntoView({ block: 'end' });
  }, [turns, suggestions]);

  async function open(id: string) {
    stream.current?.abort();
    setDrawer(false);
    setSuggestions([]);
    setCurrentId(id);
    setTurns([]);
    try {
      const list = await api.messages(id);
      setTurns(list.data.map(turnOf));
    } catch (err) {
      setNotice(t('error', { message: (err as Error).message }));
    }
  }

  function newChat() {
    stream.current?.abort();
    setDrawer(false);
    setCurrentId(null);
    setTurns([]);
    setSuggestions([]);
    setInputs({ ...defaults(fields), ...b.url.inputs });
    composer.current?.focus();
  }

  const actions: ConversationActions = {
    open: (id) => void open(id),
    newChat,
    rename: async (id, name) => {
      await api.rename(id, name);
      await loadConversations();
    },
    pin: async (id, yes) => {
      await api.pin(id, yes);
      await loadConversations();
    },
    remove: async (id) => {
      await api.deleteConversation(id);
      if (id === currentId) newChat();
      await loadConversations();
    },
  };

  function update(key: string, f: (turn: Turn) => Turn) {
    setTurns((list) => list.map((x) => (x.key === key ? f(x) : x)));
  }

  function send(query: string, sendFiles: FileRef[] = files) {
    const q = query.trim();
    if (!q || busy) return;
    if (!currentId) {
      const missing = missingField(fields, inputs, t);
      if (missing) {
        setNotice(missing);
        return;
      }
    }
    setNotice('');
    setSuggestions([]);
    const turn = newTurn(q, sendFiles.map((f) => ({ name: f.name, type: f.type })));
    setTurns((list) => [...list, turn]);
    setDraft('');
    setFiles([]);
    const wasNew = !currentId;
    let last = turn;
    const body = { inputs: apiInputs(fields, inputs), query: q, files: sendFiles.map(({ name: _n, ...f }) => f), response_mode: 'streaming', conversation_id: currentId ?? '' };
    const h = api.stream('/chat-messages', { body }, (e: SseEvent) => {
      last = foldEvent(last, e);
      const snapshot = last;
      update(turn.key, () => snapshot);
    });
    stream.current = h;
    void h.done
      .catch((err: Error) => {
        last = { ...last, status: 'error', error: err.message };
        update(turn.key, () => last);
      })
      .then(() => afterStream(turn.key, () => last, wasNew));
  }

  async function afterStream(key: string, final: () => Turn, wasNew: boolean) {
    let f = final();
    if (stopped.current.has(key)) f = { ...f, status: 'stopped' };
    else if (f.status === 'streaming') {
      f = { ...f, status: 'done' };
      update(key, () => f);
    }
    if (wasNew && f.conversationId) {
      setCurrentId(f.conversationId);
      await api.autoName(f.conversationId).catch(() => undefined);
      await loadConversations().catch(() => undefined);
    }
    if (f.status === 'done' && f.id && params.suggested_questions_after_answer?.enabled) {
      const s = await api.suggested(f.id).catch(() => ({ data: [] as string[] }));
      setSuggestions(s.data ?? []);
    }
  }

  /** Stops the answer where it is: the stream is closed first (nothing that arrives after the click changes the answer), then the generation is stopped. */
  async function stop() {
    const streaming = turns.find((x) => x.status === 'streaming');
    if (!streaming) return;
    stopped.current.add(streaming.key);
    stream.current?.abort();
    update(streaming.key, (x) => ({ ...x, status: 'stopped' }));
    composer.current?.focus();
    if (streaming.taskId) await api.post(`/chat-messages/${streaming.taskId}/stop`).catch(() => undefined);
  }

  function regenerate(turn: Turn) {
    setTurns((list) => list.filter((x) => x.key !== turn.key));
    send(turn.query, []);
  }

  /**
   * Before a Human Input form's answer is sent: the run's stream is reopened (continuing past later
   * pauses) and the answer waits until it is open, so every event of the resumed run continues the
   * same answer — a run that finished before a stream reopened after the answer would send its end only.
   */
  async function listen(turn: Turn) {
    if (!turn.runId) return;
    stream.current?.abort();
    update(turn.key, (x) => ({ ...x, status: 'streaming' }));
    let last: Turn = { ...turn, status: 'streaming' };
    const h = api.stream(`/workflow/${turn.runId}/events?continue_on_pause=true`, { method: 'GET' }, (e) => {
      last = foldEvent(last, e);
      const snapshot = last;
      update(turn.key, () => snapshot);
    });
    stream.current = h;
    void h.done.catch((err: Error) => update(turn.key, (x) => ({ ...x, status: 'error', error: err.message }))).then(() => afterStream(turn.key, () => last, false));
    await h.opened;
  }

  async function attach(list: FileList | null) {
    if (!list) return;
    setUploading(true);
    try {
      const added: FileRef[] = [];
      for (const f of Array.from(list).slice(0, Math.max(0, uploadLimit - files.length))) added.push(fileRef(await api.upload(f), f));
      setFiles((cur) => [...cur, ...added]);
    } catch (err) {
      setNotice(t('error', { message: (err as Error).message }));
    } finally {
      setUploading(false);
    }
  }

  const empty = turns.length === 0;
  const showForm = !currentId && fields.length > 0;
  const side = (
    <ConversationList pinned={pinned} others={others} currentId={currentId} t={t} actions={actions} busy={busy} />
  );

  return (
    <div class={`app chat ${embedded ? 'embedded' : ''} ${drawer ? 'drawer-open' : ''}`}>
      <a class="skip" href="#composer">
        {t('skipToChat')}
      </a>
      <header class="topbar">
        <button type="button" class="icon-btn menu-btn" aria-label={t('toggleSidebar')} aria-expanded={drawer} aria-controls="sidebar" onClick={() => setDrawer(!drawer)}>
          <Icon name="menu" />
        </button>
        <AppIcon site={site} size={32} />
        <h1 class="title">{site.title}</h1>
        <button type="button" class="icon-btn" aria-label={t('newChat')} title={t('newChat')} onClick={newChat} disabled={busy}>
          <Icon name="plus" />
        </button>
        {toggled && (
          <button type="button" class="icon-btn" aria-label={t('expand')} title={t('expand')} onClick={() => window.parent.postMessage({ type: 'dify-chatbot-expand-change' }, '*')}>
            <Icon name="expand" />
          </button>
        )}
      </header>
      <aside id="sidebar" class="sidebar" aria-label={t('conversations')}>
        <div class="sidebar-head">
          <AppIcon site={site} size={36} />
          <div>
            <p class="sidebar-title">{site.title}</p>
            {site.description && <p class="hint sidebar-desc">{site.description}</p>}
          </div>
          <button type="button" class="icon-btn close-drawer" aria-label={t('closeMenu')} onClick={() => setDrawer(false)}>
            <Icon name="close" />
          </button>
        </div>
        {side}
        <p class="powered hint">{t('poweredBy')}</p>
      </aside>
      {drawer && <div class="scrim" onClick={() => setDrawer(false)} />}
      <main class="chat-main">
        <div class="thread" aria-label={t('conversations')}>
          <div class="thread-inner">
            {showForm && (
              <section class="card start-form" aria-labelledby="start-form-title">
                <h2 id="start-form-title">{t('startForm')}</h2>
                <InputsForm id="start" fields={fields} values={inputs} onChange={setInputs} api={api} t={t} disabled={busy} />
              </section>
            )}
            {(empty || params.opening_statement) && (
              <div class="intro">
                {params.opening_statement ? (
                  <div class="msg answer done">
                    {site.use_icon_as_answer_icon ? <AppIcon site={site} size={32} /> : <span class="avatar bot" aria-hidden="true" />}
                    <div class="bubble">
                      <Markdown text={fill(params.opening_statement, inputs)} />
                    </div>
                  </div>
                ) : (
                  <div class="welcome">
                    <AppIcon site={site} size={56} />
                    <h2>{site.title}</h2>
                    {site.description && <p class="hint">{site.description}</p>}
                  </div>
                )}
                {empty && !currentId && (params.suggested_questions ?? []).length > 0 && (
                  <div class="suggested" role="group" aria-label={t('tryAsking')}>
                    {(params.suggested_questions ?? []).map((q) => (
                      <button type="button" class="chip-btn" key={q} onClick={() => send(q)} disabled={busy}>
                        {q}
                      </button>
                    ))}
                  </div>
                )}
              </div>
            )}
            {turns.map((turn, i) => (
              <div class="turn" key={turn.key}>
                <Question turn={turn} t={t} userName={b.url.user.name} />
                <Answer
                  turn={turn}
                  site={site}
                  t={t}
                  api={api}
                  isLast={i === turns.length - 1}
                  busy={busy}
                  showSteps={!!site.show_workflow_steps}
                  showCitations={params.retriever_resource?.enabled !== false}
                  onRegenerate={() => regenerate(turn)}
                  onFeedback={async (rating, content) => {
                    if (!turn.id) return;
                    await api.feedback(turn.id, rating, content);
                    update(turn.key, (x) => ({ ...x, feedback: rating }));
                  }}
                  beforeHumanInputSubmit={() => listen(turn)}
                />
              </div>
            ))}
            {suggestions.length > 0 && !busy && (
              <div class="suggested after" role="group" aria-label={t('suggestions')}>
                {suggestions.map((q) => (
                  <button type="button" class="chip-btn" key={q} onClick={() => send(q)}>
                    {q}
                  </button>
                ))}
              </div>
            )}
            <div ref={threadEnd} />
          </div>
        </div>
        <form
          class="composer"
          onSubmit={(e) => {
            e.preventDefault();
            send(draft);
          }}
        >
          {notice && (
            <p class="error" role="alert">
              {notice}
            </p>
          )}
          {files.length > 0 && (
            <ul class="file-chips">
              {files.map((f) => (
                <li class="chip" key={f.upload_file_id}>
                  <Icon name="doc" size={16} /> <span class="chip-name">{f.name}</span>
                  <button type="button" class="icon-btn small" aria-label={t('removeFile', { name: f.name })} onClick={() => setFiles(files.filter((x) => x !== f))}>
                    <Icon name="close" size={14} />
                  </button>
                </li>
              ))}
            </ul>
          )}
          <div class="composer-row">
            {uploadOn && (
              <label class="icon-btn attach" title={t('attach')}>
                <Icon name="clip" />
                <span class="sr-only">{t('attach')}</span>
                <input type="file" class="visually-hidden-file" multiple={uploadLimit > 1} accept={accept} disabled={uploading || files.length >= uploadLimit} onChange={(e) => {
                    const input = e.currentTarget;
                    void attach(input.files).then(() => (input.value = ''));
                  }} />
              </label>
            )}
            <label class="sr-only" for="composer">
              {t('composerLabel')}
            </label>
            <textarea
              id="composer"
              ref={composer}
              rows={1}
              placeholder={t('placeholder')}
              value={draft}
              onInput={(e) => setDraft(e.currentTarget.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                  e.preventDefault();
                  send(draft);
                }
              }}
            />
            {busy ? (
              <button type="button" class="icon-btn send stop" aria-label={t('stop')} title={t('stop')} onClick={() => void stop()}>
                <Icon name="stop" />
              </button>
            ) : (
              <button type="submit" class="icon-btn send" aria-label={t('send')} title={t('send')} disabled={!draft.trim() || uploading}>
                <Icon name="send" />
              </button>
            )}
          </div>
          {uploading && <p class="hint">{t('uploading')}</p>}
          <SiteFooter site={site} t={t} />
        </form>
      </main>
    </div>
  );
}

function defaults(fields: ReturnType<typeof fieldsOf>): InputValues {
  const out: InputValues = {};
  for (const { kind, v } of fields) if (v.default !== undefined && v.default !== null && v.default !== '' && kind !== 'file' && kind !== 'file-list') out[v.variable] = v.default;
  return out;
}

/** The opening statement with `{{name}}` filled from the start form (as Dify does). */
function fill(text: string, inputs: InputValues): string {
  return text.replace(/\{\{([A-Za-z0-9_]+)\}\}/g, (m, name: string) => (typeof inputs[name] === 'string' && inputs[name] ? String(inputs[name]) : m));
}
