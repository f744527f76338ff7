import { useMemo, useState } from 'preact/hooks';
import type { HumanInputFormView, WebApi } from '../lib/api.js';
import type { Translate } from '../lib/i18n.js';
import { renderMarkdown } from '../lib/markdown.js';
import type { InputVariable, SiteSettings, UploadedFile, UserInputFormItem } from '../lib/types.js';
import { Icon } from './icons.js';

/** Model or DSL text as Markdown (lib/markdown.ts: raw HTML escaped, unsafe links refused). */
export function Markdown({ text, class: cls }: { text: string; class?: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class={`markdown ${cls ?? ''}`} dangerouslySetInnerHTML={{ __html: html }} />;
}

/** The app's icon: an image URL, or an emoji on its background colour, or the title's first letter. */
export function AppIcon({ site, size = 36 }: { site: SiteSettings; size?: number }) {
  const style = { width: `${size}px`, height: `${size}px`, fontSize: `${Math.round(size * 0.55)}px`, background: site.icon_background || '#e0eaff' };
  if (site.icon_type === 'image' && site.icon_url) return <img class="app-icon" src={site.icon_url} alt="" style={style} />;
  const glyph = site.icon && site.icon_type !== 'image' && [...site.icon].length <= 2 ? site.icon : (site.title || '?').slice(0, 1).toUpperCase();
  return (
    <span class="app-icon" style={style} aria-hidden="true">
      {glyph}
    </span>
  );
}

/** One start-form field: its kind (`text-input`, `paragraph`, …) and its settings. */
export interface FieldSpec {
  kind: string;
  v: InputVariable;
}

export function fieldsOf(items: readonly UserInputFormItem[] | undefined): FieldSpec[] {
  const out: FieldSpec[] = [];
  for (const item of items ?? []) {
    const kind = Object.keys(item)[0];
    if (!kind) continue;
    const v = item[kind]!;
    if (v && typeof v.variable === 'string' && !v.hide) out.push({ kind, v });
  }
  return out;
}

/** A file as the API takes it in `inputs` or `files`, from an upload. */
export interface FileRef {
  type: string;
  transfer_method: 'local_file';
  upload_file_id: string;
  name: string;
}

export function fileTypeOf(file: { type?: string; name?: string; mime_type?: string }): string {
  const mime = file.mime_type ?? file.type ?? '';
  if (mime.startsWith('image/')) return 'image';
  if (mime.startsWith('audio/')) return 'audio';
  if (mime.startsWith('video/')) return 'video';
  return 'document';
}

export function fileRef(up: UploadedFile, local: File): FileRef {
  return { type: fileTypeOf({ mime_type: up.mime_type || local.type }), transfer_method: 'local_file', upload_file_id: up.id, name: up.name || local.name };
}

const ACCEPT: Record<string, string> = { image: 'image/*', audio: 'audio/*', video: 'video/*', document: '.txt,.md,.markdown,.pdf,.html,.xlsx,.xls,.docx,.csv,.eml,.msg,.pptx,.xml,.epub,.ppt,.htm' };
export function acceptOf(types: readonly string[] | undefined, extensions: readonly string[] | undefined): string | undefined {
  if (!types || types.length === 0 || types.includes('custom')) return extensions && extensions.length > 0 ? extensions.join(',') : undefined;
  return types.map((t) => ACCEPT[t] ?? '').filter(Boolean).join(',') || undefined;
}

export type InputValues = Record<string, unknown>;

/** Checks required fields; returns the first problem's text, or null. */
export function missingField(fields: readonly FieldSpec[], values: InputValues, t: Translate): string | null {
  for (const { kind, v } of fields) {
    if (!v.required) continue;
    const value = values[v.variable];
    const empty = value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
    if (kind === 'checkbox') continue;
    if (empty) return t('required', { label: v.label || v.variable });
  }
  return null;
}

/** The values sent to the API: numbers as numbers, files without their display names. */
export function apiInputs(fields: readonly FieldSpec[], values: InputValues): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) out[k] = v;
  for (const { kind, v } of fields) {
    const value = values[v.variable];
    if (value === undefined || value === '') continue;
    if (kind === 'number') out[v.variable] = Number(value);
    else if (kind === 'file' && value && typeof value === 'object') out[v.variable] = stripName(value as FileRef);
    else if (kind === 'file-list' && Array.isArray(value)) out[v.variable] = (value as FileRef[]).map(stripName);
  }
  return out;
}
function stripName(f: FileRef): Omit<FileRef, 'name'> {
  const { name: _name, ...rest } = f;
  return rest;
}

/** The start form: every input type of Dify's `user_input_form`, files uploaded as they are chosen. */
export function InputsForm(props: { id: string; fields: readonly FieldSpec[]; values: InputValues; onChange: (values: InputValues) => void; api: WebApi; t: Translate; disabled?: boolean }) {
  const { fields, values, onChange, t, api, disabled } = props;
  const set = (name: string, value: unknown) => onChange({ ...values, [name]: value });
  return (
    <div class="inputs-form">
      {fields.map(({ kind, v }) => {
        const id = `${props.id}-${v.variable}`;
        const label = (
          <label for={id} class="field-label">
            {v.label || v.variable}
            {!v.required && <span class="optional"> ({t('optional')})</span>}
          </label>
        );
        const value = values[v.variable];
        if (kind === 'paragraph')
          return (
            <div class="field" key={v.variable}>
              {label}
              <textarea id={id} rows={3} maxLength={v.max_length || undefined} required={!!v.required} disabled={disabled} value={String(value ?? '')} onInput={(e) => set(v.variable, e.currentTarget.value)} />
            </div>
          );
        if (kind === 'select')
          return (
            <div class="field" key={v.variable}>
              {label}
              <select id={id} required={!!v.required} disabled={disabled} value={String(value ?? '')} onChange={(e) => set(v.variable, e.currentTarget.value)}>
                <option value="">—</option>
                {(v.options ?? []).map((o) => (
                  <option value={o} key={o}>
                    {o}
                  </option>
                ))}
              </select>
            </div>
          );
        if (kind === 'number')
          return (
            <div class="field" key={v.variable}>
              {label}
              <input id={id} type="number" required={!!v.required} disabled={disabled} value={value === undefined ? '' : String(value)} onInput={(e) => set(v.variable, e.currentTarget.value)} />
            </div>
          );
        if (kind === 'checkbox')
          return (
            <div class="field field-check" key={v.variable}>
              <input id={id} type="checkbox" disabled={disabled} checked={value === true} onChange={(e) => set(v.variable, e.currentTarget.checked)} />
              {label}
            </div>
          );
        if (kind === 'file' || kind === 'file-list')
          return (
            <div class="field" key={v.variable}>
              {label}
              <FileField id={id} api={api} t={t} multiple={kind === 'file-list'} limit={kind === 'file-list' ? v.max_length || v.number_limits || 10 : 1} accept={acceptOf(v.allowed_file_types, v.allowed_file_extensions)} disabled={disabled} value={kind === 'file' ? (value ? [value as FileRef] : []) : ((value as FileRef[] | undefined) ?? [])} onChange={(files) => set(v.variable, kind === 'file' ? files[0] : files)} />
            </div>
          );
        const json = kind === 'json_object';
        return (
          <div class="field" key={v.variable}>
            {label}
            {json ? (
              <textarea id={id} rows={4} class="mono" required={!!v.required} disabled={disabled} value={typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value)} onInput={(e) => set(v.variable, e.currentTarget.value)} />
            ) : (
              <input id={id} type="text" maxLength={v.max_length || undefined} required={!!v.required} disabled={disabled} value={String(value ?? '')} onInput={(e) => set(v.variable, e.currentTarget.value)} />
            )}
          </div>
        );
      })}
    </div>
  );
}

/** A file input that uploads what is chosen (`POST /api/files/upload`) and lists it with a remove button. */
export function FileField(props: { id: string; api: WebApi; upload?: (f: File) => Promise<UploadedFile>; t: Translate; multiple: boolean; limit: number; accept?: string; disabled?: boolean; value: FileRef[]; onChange: (files: FileRef[]) => void }) {
  const { api, t, value } = props;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  async function choose(list: FileList | null) {
    if (!list || list.length === 0) return;
    setBusy(true);
    setError('');
    try {
      const added: FileRef[] = [];
      for (const f of Array.from(list).slice(0, Math.max(0, props.limit - (props.multiple ? value.length : 0)))) added.push(fileRef(await (props.upload ?? ((x: File) => api.upload(x)))(f), f));
      props.onChange(props.multiple ? [...value, ...added] : added);
    } catch (err) {
      setError(t('error', { message: (err as Error).message }));
    } finally {
      setBusy(false);
    }
  }
  return (
    <div class="file-field">
      <input id={props.id} type="file" multiple={props.multiple} accept={props.accept} disabled={props.disabled || busy} onChange={(e) => {
          const input = e.currentTarget;
          void choose(input.files).then(() => (input.value = ''));
        }} />
      {busy && <span class="hint">{t('uploading')}</span>}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {value.length > 0 && (
        <ul class="file-chips">
          {value.map((f) => (
            <li key={f.upload_file_id} class="chip">
              <Icon name="doc" size={16} />
              <span class="chip-name">{f.name}</span>
              <button type="button" class="icon-btn small" aria-label={t('removeFile', { name: f.name })} onClick={() => props.onChange(value.filter((x) => x !== f))}>
                <Icon name="close" size={14} />
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** One step of a run (a node's `node_started` / `node_finished`). */
export interface Step {
  id: string;
  title: string;
  type: string;
  status: 'running' | 'succeeded' | 'failed' | 'stopped' | 'paused' | string;
  elapsed?: number;
}

/** Folds a node event into the step list (a later event of the same node replaces its row). */
export function foldStep(steps: readonly Step[], e: { event?: string; data?: unknown }): Step[] {
  if (e.event !== 'node_started' && e.event !== 'node_finished') return steps as Step[];
  const d = (e.data ?? {}) as { id?: string; node_id?: string; title?: string; node_type?: string; status?: string; elapsed_time?: number };
  // one row per node: a node that runs again (a resumed run replays its paused node) replaces its row
  const id = String(d.node_id ?? d.id ?? '');
  const step: Step = { id, title: d.title || d.node_type || d.node_id || '', type: d.node_type ?? '', status: e.event === 'node_started' ? 'running' : d.status || 'succeeded', elapsed: d.elapsed_time };
  const i = steps.findIndex((s) => s.id === id);
  if (i < 0) return [...steps, step];
  const next = steps.slice();
  next[i] = step;
  return next;
}

/** Steps still running when the run pauses wait for a person. */
export function pauseSteps(steps: readonly Step[]): Step[] {
  return steps.map((s) => (s.status === 'running' ? { ...s, status: 'paused' } : s));
}

export function StepList({ steps, t, open }: { steps: readonly Step[]; t: Translate; open?: boolean }) {
  if (steps.length === 0) return null;
  const failed = steps.some((s) => s.status === 'failed');
  const running = steps.some((s) => s.status === 'running');
  const paused = steps.some((s) => s.status === 'paused');
  return (
    <details class="steps" open={open}>
      <summary>
        <span class={`dot ${failed ? 'failed' : running ? 'running' : paused ? 'paused' : 'succeeded'}`} aria-hidden="true" />
        {t('workflowSteps')} · {t('stepsDone', { n: steps.length })}
      </summary>
      <ol>
        {steps.map((s) => (
          <li key={s.id} class={`step ${s.status}`}>
            <span class={`dot ${s.status}`} aria-hidden="true" />
            <span class="step-title">{s.title}</span>
            <span class="step-status">{statusWord(s.status, t)}</span>
            {s.elapsed !== undefined && s.status !== 'running' && <span class="step-time">{s.elapsed.toFixed(2)} s</span>}
          </li>
        ))}
      </ol>
    </details>
  );
}

export function statusWord(status: string, t: Translate): string {
  if (status === 'running') return t('running');
  if (status === 'failed') return t('failed');
  if (status === 'stopped') return t('stopped');
  if (status === 'paused') return t('paused');
  return t('succeeded');
}

/** The Human Input form of a paused run, answered in place (`POST /api/form/human_input/{token}`). */
export function HumanInputForm(props: {
  form: HumanInputFormView & { form_token: string };
  api: WebApi;
  t: Translate;
  /** Awaited before the answer is sent: the page reopens the run's stream here, so no event of the resumed run is missed. */
  beforeSubmit?: () => Promise<void>;
  onSubmitted?: (action: string) => void;
}) {
  const { form, api, t } = props;
  const [values, setValues] = useState<Record<string, string>>(() => ({ ...((form.resolved_default_values as Record<string, string>) ?? {}) }));
  const [files, setFiles] = useState<Record<string, FileRef[]>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [done, setDone] = useState(false);
  const content = form.form_content.replace(/\{\{#\$output\.[A-Za-z0-9_]+#\}\}/g, '');
  const fields = form.inputs.filter((i) => i.type === 'paragraph' || i.type === 'select' || i.type === 'file' || i.type === 'file-list');
  async function submit(action: string) {
    setBusy(true);
    setError('');
    try {
      const inputs: Record<string, unknown> = { ...values };
      for (const i of fields) {
        const refs = (files[i.output_variable_name] ?? []).map((f) => ({ transfer_method: f.transfer_method, upload_file_id: f.upload_file_id, type: 'custom' }));
        if (i.type === 'file-list') inputs[i.output_variable_name] = refs;
        else if (i.type === 'file' && refs.length > 0) inputs[i.output_variable_name] = refs[0];
      }
      await props.beforeSubmit?.();
      await api.submitHumanInput(form.form_token, action, inputs);
      setDone(true);
      props.onSubmitted?.(action);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="human-input" aria-label={t('humanInput')}>
      <h3>{t('humanInput')}</h3>
      <Markdown text={content} />
      {fields.map((i) => {
        const id = `hi-${form.form_token.slice(0, 8)}-${i.output_variable_name}`;
        const opts = (i as { options?: string[]; option_source?: { value?: string[] } }).options ?? (i as { option_source?: { value?: string[] } }).option_source?.value ?? [];
        return (
          <div class="field" key={i.output_variable_name}>
            <label for={id} class="field-label">
              {i.label || i.output_variable_name}
            </label>
            {i.type === 'file' || i.type === 'file-list' ? (
              <FileField id={id} api={api} upload={(f) => api.uploadForForm(form.form_token, f)} t={t} multiple={i.type === 'file-list'} limit={i.type === 'file-list' ? Number((i as { number_limits?: number }).number_limits) || 5 : 1} accept={acceptOf((i as { allowed_file_types?: string[] }).allowed_file_types, (i as { allowed_file_extensions?: string[] }).allowed_file_extensions)} disabled={busy || done} value={files[i.output_variable_name] ?? []} onChange={(list) => setFiles({ ...files, [i.output_variable_name]: list })} />
            ) : i.type === 'select' ? (
              <select id={id} disabled={busy || done} value={values[i.output_variable_name] ?? ''} onChange={(e) => setValues({ ...values, [i.output_variable_name]: e.currentTarget.value })}>
                <option value="">—</option>
                {opts.map((o) => (
                  <option key={o} value={o}>
                    {o}
                  </option>
                ))}
              </select>
            ) : (
              <textarea id={id} rows={3} disabled={busy || done} value={values[i.output_variable_name] ?? ''} onInput={(e) => setValues({ ...values, [i.output_variable_name]: e.currentTarget.value })} />
            )}
          </div>
        );
      })}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {done ? (
        <p class="hint">
          <Icon name="check" size={16} /> {t('submitted')}
        </p>
      ) : (
        <div class="actions">
          {form.user_actions.map((a) => (
            <button type="button" key={a.id} class={a.button_style === 'primary' || a.button_style === 'accent' ? 'btn primary' : 'btn'} disabled={busy} onClick={() => void submit(a.id)}>
              {a.title}
            </button>
          ))}
        </div>
      )}
      {form.expiration_time ? <p class="hint">{t('expiresAt', { time: new Date(form.expiration_time * 1000).toLocaleString() })}</p> : null}
    </section>
  );
}

/** The site's footer: copyright, privacy policy, custom disclaimer. */
export function SiteFooter({ site, t }: { site: SiteSettings; t: Translate }) {
  if (!site.copyright && !site.privacy_policy && !site.custom_disclaimer) return null;
  return (
    <footer class="site-footer">
      {site.custom_disclaimer && <p>{site.custom_disclaimer}</p>}
      <p>
        {site.copyright && <span>© {site.copyright}</span>}
        {site.copyright && site.privacy_policy && ' · '}
        {site.privacy_policy && /^https?:\/\//i.test(site.privacy_policy) && (
          <a href={site.privacy_policy} target="_blank" rel="noopener noreferrer">
            {t('privacy')}
          </a>
        )}
      </p>
    </footer>
  );
}

export function ErrorScreen({ message }: { message: string }) {
  return (
    <main class="error-screen">
      <div class="card">
        <p role="alert">{message}</p>
      </div>
    </main>
  );
}
