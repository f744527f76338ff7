import Papa from 'papaparse';
import { useMemo, useRef, useState } from 'preact/hooks';
import type { SavedMessage, StreamHandle } from '../lib/api.js';
import type { SseEvent } from '../lib/sse.js';
import type { Boot } from '../shared/boot.js';
import { apiInputs, fieldsOf, FileField, acceptOf, InputsForm, Markdown, missingField, type FileRef, type InputValues } from '../shared/components.js';
import { Icon } from '../shared/icons.js';
import { copyText, download, RunnerLayout, toCsv } from '../shared/runner.js';

interface Result {
  key: string;
  id: string | null;
  taskId: string | null;
  text: string;
  status: 'streaming' | 'done' | 'error' | 'stopped';
  error: string;
  saved: boolean;
  feedback: 'like' | 'dislike' | null;
  from: string | null;
}

interface BatchRow {
  inputs: Record<string, string>;
  status: 'waiting' | 'running' | 'done' | 'error';
  text: string;
}

/** How many batch rows run at once (Dify's text generator runs a few in parallel too). */
const BATCH_PARALLEL = 2;
let seq = 0;

/** Folds one event of `POST /api/completion-messages` into a result. */
export function foldCompletion(r: Result, e: SseEvent): Result {
  const next = { ...r };
  if (typeof e.task_id === 'string') next.taskId = e.task_id;
  const id = typeof e.message_id === 'string' ? e.message_id : typeof e.id === 'string' ? e.id : null;
  if (id && (e.event === 'message' || e.event === 'message_end')) next.id = id;
  if (e.event === 'message') next.text += typeof e.answer === 'string' ? e.answer : '';
  else if (e.event === 'message_replace') next.text = typeof e.answer === 'string' ? e.answer : next.text;
  else if (e.event === 'message_end') next.status = 'done';
  else if (e.event === 'error') {
    next.status = 'error';
    next.error = typeof e.message === 'string' ? e.message : 'error';
  }
  return next;
}

/** The text generator (`/completion/{code}`): the input form, a streamed answer, more like this, copy, save, feedback, a batch run from a CSV file, and the saved answers. */
export function CompletionApp({ b }: { b: Boot }) {
  const { api, t, params } = b;
  const fields = useMemo(() => fieldsOf(params.user_input_form), [params]);
  const [tab, setTab] = useState<'once' | 'batch' | 'saved'>('once');
  const [saved, setSaved] = useState<SavedMessage[] | null>(null);
  const [inputs, setInputs] = useState<InputValues>(() => ({ ...b.url.inputs }));
  const [files, setFiles] = useState<FileRef[]>([]);
  const [results, setResults] = useState<Result[]>([]);
  const [notice, setNotice] = useState('');
  const [rows, setRows] = useState<BatchRow[]>([]);
  const [batchRunning, setBatchRunning] = useState(false);
  const current = useRef<StreamHandle | null>(null);
  const busy = results.some((r) => r.status === 'streaming');
  const upload = params.file_upload;
  const uploadOn = !!(upload?.enabled || upload?.image?.enabled);

  function patch(key: string, f: (r: Result) => Result) {
    setResults((list) => list.map((r) => (r.key === key ? f(r) : r)));
  }

  function generate(e: Event) {
    e.preventDefault();
    const missing = missingField(fields, inputs, t);
    if (missing) return setNotice(missing);
    setNotice('');
    const r: Result = { key: `r${++seq}`, id: null, taskId: null, text: '', status: 'streaming', error: '', saved: false, feedback: null, from: null };
    setResults((list) => [r, ...list]);
    let last = r;
    const h = api.stream('/completion-messages', { body: { inputs: apiInputs(fields, inputs), files: files.map(({ name: _n, ...f }) => f), response_mode: 'streaming' } }, (ev) => {
      last = foldCompletion(last, ev);
      const snap = last;
      patch(r.key, () => snap);
    });
    current.current = h;
    void h.done.then(
      () => patch(r.key, (x) => (x.status === 'streaming' ? { ...x, status: 'done' } : x)),
      (err: Error) => patch(r.key, (x) => ({ ...x, status: 'error', error: err.message })),
    );
  }

  /** Stops the answer where it is: the stream is closed first (nothing that arrives after the click changes the answer), then the generation is stopped. */
  async function stop() {
    const r = results.find((x) => x.status === 'streaming');
    if (!r) return;
    current.current?.abort();
    patch(r.key, (x) => ({ ...x, status: 'stopped' }));
    if (r.taskId) await api.post(`/completion-messages/${r.taskId}/stop`).catch(() => undefined);
  }

  async function moreLikeThis(r: Result) {
    if (!r.id) return;
    const key = `r${++seq}`;
    setResults((list) => {
      const i = list.findIndex((x) => x.key === r.key);
      const next = list.slice();
      next.splice(i + 1, 0, { key, id: null, taskId: null, text: '', status: 'streaming', error: '', saved: false, feedback: null, from: r.key });
      return next;
    });
    try {
      const more = await api.moreLikeThis(r.id);
      patch(key, (x) => ({ ...x, id: more.id, text: more.answer, status: 'done' }));
    } catch (err) {
      patch(key, (x) => ({ ...x, status: 'error', error: (err as Error).message }));
    }
  }

  async function readCsv(list: FileList | null) {
    const file = list?.[0];
    if (!file) return;
    const parsed = Papa.parse<string[]>(await file.text(), { skipEmptyLines: true });
    const [head, ...body] = parsed.data;
    if (!head) return setRows([]);
    const names = head.map((h) => fields.find((f) => f.v.label === h.trim() || f.v.variable === h.trim())?.v.variable ?? h.trim());
    setRows(body.map((cells) => ({ inputs: Object.fromEntries(names.map((n, i) => [n, cells[i] ?? ''])), status: 'waiting', text: '' })));
  }

  async function runBatch() {
    setBatchRunning(true);
    const list = rows.map((r) => ({ ...r, status: 'waiting' as const, text: '' }));
    setRows(list);
    let next = 0;
    const update = (i: number, row: Partial<BatchRow>) => setRows((cur) => cur.map((r, j) => (j === i ? { ...r, ...row } : r)));
    async function worker() {
      for (let i = next++; i < list.length; i = next++) {
        update(i, { status: 'running' });
        let text = '';
        let failed = '';
        const h = api.stream('/completion-messages', { body: { inputs: apiInputs(fields, list[i]!.inputs), response_mode: 'streaming' } }, (ev) => {
          if (ev.event === 'message') text += typeof ev.answer === 'string' ? ev.answer : '';
          else if (ev.event === 'message_replace') text = String(ev.answer ?? '');
          else if (ev.event === 'error') failed = String(ev.message ?? 'error');
          update(i, { text });
        });
        await h.done.catch((err: Error) => (failed = err.message));
        update(i, failed ? { status: 'error', text: failed } : { status: 'done', text });
      }
    }
    await Promise.all(Array.from({ length: Math.min(BATCH_PARALLEL, list.length) }, worker));
    setBatchRunning(false);
  }

  async function openSaved() {
    setTab('saved');
    setSaved(null);
    try {
      setSaved((await api.savedMessages()).data);
    } catch (err) {
      setNotice(t('error', { message: (err as Error).message }));
      setSaved([]);
    }
  }

  async function unsave(id: string) {
    await api.unsaveMessage(id);
    setSaved((list) => (list ?? []).filter((m) => m.id !== id));
    setResults((list) => list.map((r) => (r.id === id ? { ...r, saved: false } : r)));
  }

  const doneRows = rows.filter((r) => r.status === 'done' || r.status === 'error').length;
  const form = (
    <>
      <div class="tabs" role="tablist">
        <button type="button" role="tab" aria-selected={tab === 'once'} onClick={() => setTab('once')}>
          {t('single')}
        </button>
        <button type="button" role="tab" aria-selected={tab === 'batch'} onClick={() => setTab('batch')}>
          {t('batch')}
        </button>
        <button type="button" role="tab" aria-selected={tab === 'saved'} onClick={() => void openSaved()}>
          {t('savedItems')}
        </button>
      </div>
      {tab === 'saved' ? (
        <p class="hint" aria-live="polite">{saved ? t('savedCount', { n: saved.length }) : '…'}</p>
      ) : tab === 'once' ? (
        <form onSubmit={generate}>
          <InputsForm id="in" fields={fields} values={inputs} onChange={setInputs} api={api} t={t} disabled={busy} />
          {uploadOn && (
            <div class="field">
              <label class="field-label" for="files">
                {t('attach')}
              </label>
              <FileField id="files" api={api} t={t} multiple limit={upload?.number_limits || upload?.image?.number_limits || 3} accept={upload?.enabled ? acceptOf(upload.allowed_file_types, upload.allowed_file_extensions) : 'image/*'} value={files} onChange={setFiles} />
            </div>
          )}
          {notice && (
            <p class="error" role="alert">
              {notice}
            </p>
          )}
          <div class="actions">
            <button type="button" class="btn" onClick={() => setInputs({})} disabled={busy}>
              {t('clear')}
            </button>
            {busy ? (
              <button type="button" class="btn" onClick={() => void stop()}>
                <Icon name="stop" size={16} /> {t('stop')}
              </button>
            ) : (
              <button type="submit" class="btn primary">
                <Icon name="send" size={16} /> {t('generate')}
              </button>
            )}
          </div>
        </form>
      ) : (
        <div>
          <p class="hint">{t('batchHint')}</p>
          <div class="field">
            <label class="field-label" for="csv">
              CSV
            </label>
            <input id="csv" type="file" accept=".csv,text/csv" onChange={(e) => void readCsv(e.currentTarget.files)} />
          </div>
          {rows.length > 0 && <p class="hint">{t('batchRows', { n: rows.length })}</p>}
          <div class="actions">
            <button type="button" class="btn primary" disabled={rows.length === 0 || batchRunning} onClick={() => void runBatch()}>
              {t('batch')}
            </button>
          </div>
        </div>
      )}
    </>
  );

  const output =
    tab === 'saved' ? (
      saved === null ? (
        <div class="card placeholder" aria-busy="true">
          <p>…</p>
        </div>
      ) : saved.length === 0 ? (
        <div class="card placeholder">
          <p>{t('noSaved')}</p>
        </div>
      ) : (
        saved.map((m) => <SavedCard key={m.id} m={m} b={b} onRemove={() => void unsave(m.id)} />)
      )
    ) : tab === 'batch' && rows.length > 0 ? (
      <div class="card">
        <div class="result-head">
          <span>{t('batchDone', { done: doneRows, total: rows.length })}</span>
          {doneRows === rows.length && (
            <button type="button" class="btn" onClick={() => download('results.csv', toCsv([[...Object.keys(rows[0]!.inputs), t('output')], ...rows.map((r) => [...Object.values(r.inputs), r.text])]), 'text/csv')}>
              {t('downloadCsv')}
            </button>
          )}
        </div>
        <div class="table-wrap">
          <table class="batch-table">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">{t('output')}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r, i) => (
                <tr key={i}>
                  <td>{i + 1}</td>
                  <td>{r.status === 'waiting' ? '…' : r.status === 'error' ? <span class="error">{r.text}</span> : <Markdown text={r.text} />}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
    ) : results.length === 0 ? (
      <div class="card placeholder">
        <p>{t('output')}</p>
      </div>
    ) : (
      results.map((r) => <ResultCard key={r.key} r={r} b={b} onMore={() => void moreLikeThis(r)} onPatch={(f) => patch(r.key, f)} />)
    );

  return <RunnerLayout b={b} form={form} results={output} />;
}

/** A saved answer: its text, copy, and remove from saved. */
function SavedCard({ m, b, onRemove }: { m: SavedMessage; b: Boot; onRemove: () => void }) {
  const { t } = b;
  const [copied, setCopied] = useState(false);
  return (
    <article class="card result saved-item">
      <Markdown text={m.answer} />
      <div class="msg-actions">
        <button type="button" class="icon-btn" aria-label={copied ? t('copied') : t('copy')} title={t('copy')} onClick={() => void copyText(m.answer).then(setCopied)}>
          <Icon name={copied ? 'check' : 'copy'} size={18} />
        </button>
        <button type="button" class="icon-btn active" aria-label={t('unsave')} title={t('unsave')} onClick={onRemove}>
          <Icon name="bookmark" size={18} />
        </button>
      </div>
    </article>
  );
}

function ResultCard({ r, b, onMore, onPatch }: { r: Result; b: Boot; onMore: () => void; onPatch: (f: (r: Result) => Result) => void }) {
  const { t, api, params } = b;
  const [copied, setCopied] = useState(false);
  return (
    <article class={`card result ${r.status}`} aria-busy={r.status === 'streaming'}>
      {r.from && <p class="result-head">{t('moreLikeThis')}</p>}
      {r.text ? <Markdown text={r.text} /> : r.status === 'streaming' ? <span class="typing" aria-label={t('running')}><i /><i /><i /></span> : null}
      {r.status === 'error' && (
        <p class="error" role="alert">
          {t('error', { message: r.error })}
        </p>
      )}
      {r.status === 'stopped' && <p class="hint">{t('stopped')}</p>}
      {r.status === 'done' && r.id && (
        <div class="msg-actions">
          <button type="button" class="icon-btn" aria-label={copied ? t('copied') : t('copy')} title={t('copy')} onClick={() => void copyText(r.text).then(setCopied)}>
            <Icon name={copied ? 'check' : 'copy'} size={18} />
          </button>
          <button type="button" class={`icon-btn ${r.saved ? 'active' : ''}`} aria-label={r.saved ? t('saved') : t('saveAnswer')} aria-pressed={r.saved} title={t('saveAnswer')} onClick={() => void api.saveMessage(r.id!).then(() => onPatch((x) => ({ ...x, saved: true })))}>
            <Icon name="bookmark" size={18} />
          </button>
          {params.more_like_this?.enabled && (
            <button type="button" class="icon-btn" aria-label={t('moreLikeThis')} title={t('moreLikeThis')} onClick={onMore}>
              <Icon name="redo" size={18} />
            </button>
          )}
          <button type="button" class={`icon-btn ${r.feedback === 'like' ? 'active' : ''}`} aria-label={t('like')} aria-pressed={r.feedback === 'like'} onClick={() => void api.feedback(r.id!, r.feedback === 'like' ? null : 'like').then(() => onPatch((x) => ({ ...x, feedback: x.feedback === 'like' ? null : 'like' })))}>
            <Icon name="up" size={18} />
          </button>
          <button type="button" class={`icon-btn ${r.feedback === 'dislike' ? 'active' : ''}`} aria-label={t('dislike')} aria-pressed={r.feedback === 'dislike'} onClick={() => void api.feedback(r.id!, r.feedback === 'dislike' ? null : 'dislike').then(() => onPatch((x) => ({ ...x, feedback: x.feedback === 'dislike' ? null : 'dislike' })))}>
            <Icon name="down" size={18} />
          </button>
        </div>
      )}
    </article>
  );
}
