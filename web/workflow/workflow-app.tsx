import { useMemo, useRef, useState } from 'preact/hooks';
import type { HumanInputFormView, StreamHandle } from '../lib/api.js';
import type { Translate } from '../lib/i18n.js';
import type { SseEvent } from '../lib/sse.js';
import type { Boot } from '../shared/boot.js';
import { apiInputs, fieldsOf, foldStep, HumanInputForm, pauseSteps, InputsForm, Markdown, missingField, statusWord, StepList, type InputValues, type Step } from '../shared/components.js';
import { Icon } from '../shared/icons.js';
import { copyText, RunnerLayout } from '../shared/runner.js';

export interface Run {
  runId: string | null;
  taskId: string | null;
  status: 'running' | 'succeeded' | 'failed' | 'stopped' | 'paused' | 'partial-succeeded';
  steps: Step[];
  text: string;
  outputs: Record<string, unknown> | null;
  error: string;
  humanInput: (HumanInputFormView & { form_token: string }) | null;
}

/** Folds one event of `POST /api/workflows/run` (or of the resumed run's event stream) into the run. */
export function foldRun(run: Run, e: SseEvent): Run {
  const r: Run = { ...run };
  if (typeof e.workflow_run_id === 'string') r.runId = e.workflow_run_id;
  if (typeof e.task_id === 'string') r.taskId = e.task_id;
  const d = (e.data ?? {}) as Record<string, unknown>;
  switch (e.event) {
    case 'node_started':
    case 'node_finished':
      r.steps = foldStep(r.steps, e);
      break;
    case 'text_chunk':
      r.text += typeof d.text === 'string' ? d.text : '';
      break;
    case 'text_replace':
      r.text = typeof d.text === 'string' ? d.text : r.text;
      break;
    case 'human_input_required': {
      const form = d as unknown as HumanInputFormView & { form_token?: string | null; actions?: HumanInputFormView['user_actions'] };
      if (form.form_token) r.humanInput = { ...form, user_actions: form.user_actions ?? form.actions ?? [], form_token: form.form_token };
      r.status = 'paused';
      break;
    }
    case 'human_input_form_filled':
      r.status = 'running';
      r.humanInput = null;
      break;
    case 'workflow_paused':
      r.status = 'paused';
      r.steps = pauseSteps(r.steps);
      break;
    case 'workflow_finished':
      r.status = (typeof d.status === 'string' ? d.status : 'succeeded') as Run['status'];
      // a finished run waits for nothing: a step left paused (its node_finished came before this
      // page reopened the stream) was answered and ended with the run
      if (r.status === 'succeeded') r.steps = r.steps.map((s) => (s.status === 'paused' || s.status === 'running' ? { ...s, status: 'succeeded' } : s));
      r.outputs = d.outputs && typeof d.outputs === 'object' ? (d.outputs as Record<string, unknown>) : {};
      r.error = typeof d.error === 'string' ? d.error : '';
      break;
    case 'error':
      r.status = 'failed';
      r.error = typeof e.message === 'string' ? e.message : 'error';
      break;
  }
  return r;
}

/** The workflow page (`/workflow/{code}`): the start form with every input type, the run with live node progress, outputs, and Human Input pauses answered in place. */
export function WorkflowApp({ b }: { b: Boot }) {
  const { api, t, params } = b;
  const fields = useMemo(() => fieldsOf(params.user_input_form), [params]);
  const [inputs, setInputs] = useState<InputValues>(() => ({ ...b.url.inputs }));
  const [run, setRun] = useState<Run | null>(null);
  const [notice, setNotice] = useState('');
  const handle = useRef<StreamHandle | null>(null);
  const running = run?.status === 'running';

  function follow(start: Run, path: string, init: { method?: string; body?: unknown }): StreamHandle {
    let last = start;
    setRun(last);
    const h = api.stream(path, init, (e) => {
      last = foldRun(last, e);
      setRun(last);
    });
    handle.current = h;
    void h.done.then(
      () => {
        if (last.status === 'running') setRun({ ...last, status: 'failed', error: last.error || 'stream ended' });
      },
      (err: Error) => setRun({ ...last, status: 'failed', error: err.message }),
    );
    return h;
  }

  function start(e: Event) {
    e.preventDefault();
    const missing = missingField(fields, inputs, t);
    if (missing) return setNotice(missing);
    setNotice('');
    follow({ runId: null, taskId: null, status: 'running', steps: [], text: '', outputs: null, error: '', humanInput: null }, '/workflows/run', { body: { inputs: apiInputs(fields, inputs), response_mode: 'streaming' } });
  }

  async function stop() {
    if (run?.taskId) await api.post(`/workflows/tasks/${run.taskId}/stop`).catch(() => undefined);
  }

  /**
   * Before a Human Input form's answer is sent: the run's stream is reopened (continuing past later
   * pauses) and the answer waits until it is open, so the steps after the pause reach the page — a
   * run that finished before a stream reopened after the answer would send its end only.
   */
  async function listen() {
    if (!run?.runId) return;
    handle.current?.abort();
    await follow({ ...run, status: 'running' }, `/workflow/${run.runId}/events?continue_on_pause=true`, { method: 'GET' }).opened;
  }

  const form = (
    <form onSubmit={start}>
      <InputsForm id="in" fields={fields} values={inputs} onChange={setInputs} api={api} t={t} disabled={running} />
      {notice && (
        <p class="error" role="alert">
          {notice}
        </p>
      )}
      <div class="actions">
        <button type="button" class="btn" onClick={() => setInputs({})} disabled={running}>
          {t('clear')}
        </button>
        {running ? (
          <button type="button" class="btn" onClick={() => void stop()}>
            <Icon name="stop" size={16} /> {t('stop')}
          </button>
        ) : (
          <button type="submit" class="btn primary">
            <Icon name="send" size={16} /> {t('run')}
          </button>
        )}
      </div>
    </form>
  );

  const results = !run ? (
    <div class="card placeholder">
      <p>{t('output')}</p>
    </div>
  ) : (
    <article class="card result" aria-busy={running}>
      <p class="result-head">
        <span class={`dot ${run.status}`} aria-hidden="true" /> {statusWord(run.status === 'partial-succeeded' ? 'succeeded' : run.status, t)}
      </p>
      <StepList steps={run.steps} t={t} open />
      {run.humanInput && <HumanInputForm key={run.humanInput.form_token} form={run.humanInput} api={api} t={t} beforeSubmit={listen} />}
      {run.status === 'failed' && (
        <p class="error" role="alert">
          {t('error', { message: run.error })}
        </p>
      )}
      {run.outputs ? <Outputs outputs={run.outputs} t={t} /> : run.text ? <Markdown text={run.text} /> : null}
    </article>
  );
  return <RunnerLayout b={b} form={form} results={results} />;
}

interface FileOutput {
  url?: string;
  remote_url?: string;
  filename?: string;
  type?: string;
}
function isFile(v: unknown): v is FileOutput {
  return !!v && typeof v === 'object' && ((v as { dify_model_identity?: string }).dify_model_identity === '__dify__file__' || ('url' in v && 'filename' in v));
}

/** A run's outputs: text as Markdown, files as download links, anything else as JSON. */
function Outputs({ outputs, t }: { outputs: Record<string, unknown>; t: Translate }) {
  const [copied, setCopied] = useState(false);
  const entries = Object.entries(outputs);
  const single = entries.length === 1 && typeof entries[0]![1] === 'string' ? (entries[0]![1] as string) : null;
  return (
    <div>
      <dl class="outputs">
        {entries.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>
              {typeof v === 'string' ? (
                <Markdown text={v} />
              ) : isFile(v) || (Array.isArray(v) && v.length > 0 && v.every(isFile)) ? (
                <ul class="file-chips">
                  {(Array.isArray(v) ? v : [v]).map((f: FileOutput, i) => (
                    <li class="chip" key={i}>
                      <Icon name="doc" size={16} />
                      <a href={f.url || f.remote_url} download={f.filename} rel="noopener noreferrer">
                        {t('download')} {f.filename}
                      </a>
                    </li>
                  ))}
                </ul>
              ) : (
                <pre>{JSON.stringify(v, null, 2)}</pre>
              )}
            </dd>
          </div>
        ))}
      </dl>
      <div class="msg-actions">
        <button type="button" class="icon-btn" aria-label={copied ? t('copied') : t('copy')} title={t('copy')} onClick={() => void copyText(single ?? JSON.stringify(outputs, null, 2)).then(setCopied)}>
          <Icon name={copied ? 'check' : 'copy'} size={18} />
        </button>
      </div>
    </div>
  );
}
