import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError } from '../../lib/console-api.js';
import { useT } from '../../lib/i18n.js';
import { FormFooter } from '../../components/dialog.js';
import { toast } from '../../components/toast.js';

/** The web app's settings as `GET /console/api/apps/{id}/site` answers them (`dovetail app site` shows the same). */
export interface SiteSettingsView {
  title: string;
  description: string;
  icon_type: string;
  icon: string;
  icon_background: string;
  default_language: string;
  copyright: string;
  privacy_policy: string;
  custom_disclaimer: string;
  input_placeholder: string | null;
  chat_color_theme: string;
  chat_color_theme_inverted: boolean;
  show_workflow_steps: boolean;
  use_icon_as_answer_icon: boolean;
}

type TextKey = 'title' | 'description' | 'icon' | 'icon_background' | 'default_language' | 'copyright' | 'privacy_policy' | 'custom_disclaimer' | 'input_placeholder' | 'chat_color_theme';
type FlagKey = 'chat_color_theme_inverted' | 'show_workflow_steps' | 'use_icon_as_answer_icon';
type Form = Record<TextKey, string> & Record<FlagKey, boolean>;

const TEXT_KEYS: readonly TextKey[] = ['title', 'description', 'icon', 'icon_background', 'default_language', 'copyright', 'privacy_policy', 'custom_disclaimer', 'input_placeholder', 'chat_color_theme'];
const FLAG_KEYS: readonly FlagKey[] = ['chat_color_theme_inverted', 'show_workflow_steps', 'use_icon_as_answer_icon'];

const formOf = (s: SiteSettingsView): Form => ({
  title: s.title,
  description: s.description,
  icon: s.icon,
  icon_background: s.icon_background,
  default_language: s.default_language,
  copyright: s.copyright,
  privacy_policy: s.privacy_policy,
  custom_disclaimer: s.custom_disclaimer,
  input_placeholder: s.input_placeholder ?? '',
  chat_color_theme: s.chat_color_theme,
  chat_color_theme_inverted: s.chat_color_theme_inverted,
  show_workflow_steps: s.show_workflow_steps,
  use_icon_as_answer_icon: s.use_icon_as_answer_icon,
});

/** The setting an error message names first (the service's messages start with it), to mark and focus its field. */
function faultyKey(message: string): TextKey | FlagKey | null {
  const first = /^([a-z_]+)\b/.exec(message)?.[1];
  return [...TEXT_KEYS, ...FLAG_KEYS].find((k) => k === first) ?? null;
}

/**
 * The web app's settings (title, icon, description, language, footer lines, chat colours, …),
 * changed with `PATCH /console/api/apps/{id}/site` — the service `dovetail app site` uses. Only the
 * settings that changed are sent; a refused one is marked and focused, the server's message shown.
 * A viewer sees them read-only.
 */
export function SiteSettingsForm({ appId, mode, settings, languages, canEdit, onSaved }: { appId: string; mode: string; settings: SiteSettingsView; languages: readonly string[]; canEdit: boolean; onSaved: () => void }) {
  const t = useT();
  const [form, setForm] = useState<Form>(() => formOf(settings));
  const [error, setError] = useState<string | null>(null);
  const [bad, setBad] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const initial = formOf(settings);
  const workflowish = mode === 'workflow' || mode === 'advanced-chat';
  const chatty = mode !== 'workflow' && mode !== 'completion';

  const save = async (e: Event) => {
    e.preventDefault();
    const change: Record<string, string | boolean | null> = {};
    for (const k of TEXT_KEYS) if (form[k] !== initial[k]) change[k] = k === 'input_placeholder' && form[k] === '' ? null : form[k];
    for (const k of FLAG_KEYS) if (form[k] !== initial[k]) change[k] = form[k];
    setError(null);
    setBad(null);
    if (Object.keys(change).length === 0) {
      toast(t('siteForm.unchanged'));
      return;
    }
    setBusy(true);
    try {
      await consoleApi.patch(`/apps/${encodeURIComponent(appId)}/site`, change);
      toast(t('siteForm.saved'));
      onSaved();
    } catch (err) {
      const message = err instanceof ConsoleApiError ? err.message : String(err);
      setError(message);
      const key = faultyKey(message);
      setBad(key);
      if (key) document.getElementById(`site-${key}`)?.focus();
    } finally {
      setBusy(false);
    }
  };

  const text = (k: TextKey, opts: { multiline?: boolean; hint?: string; placeholder?: string; required?: boolean } = {}) => (
    <div class="field">
      <label for={`site-${k}`}>{t(`siteForm.${k}`)}</label>
      {opts.multiline ? (
        <textarea id={`site-${k}`} rows={3} value={form[k]} disabled={!canEdit} aria-invalid={bad === k} aria-describedby={opts.hint ? `site-${k}-hint` : undefined} onInput={(e) => setForm({ ...form, [k]: (e.target as HTMLTextAreaElement).value })} />
      ) : (
        <input id={`site-${k}`} type="text" value={form[k]} required={opts.required} placeholder={opts.placeholder} disabled={!canEdit} aria-invalid={bad === k} aria-describedby={opts.hint ? `site-${k}-hint` : undefined} onInput={(e) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value })} />
      )}
      {opts.hint && (
        <span id={`site-${k}-hint`} class="hint">
          {opts.hint}
        </span>
      )}
    </div>
  );
  const flag = (k: FlagKey) => (
    <label class="check">
      <input id={`site-${k}`} type="checkbox" checked={form[k]} disabled={!canEdit} aria-invalid={bad === k} onChange={(e) => setForm({ ...form, [k]: (e.target as HTMLInputElement).checked })} />
      {t(`siteForm.${k}`)}
    </label>
  );

  return (
    <form class="site-form" onSubmit={(e) => void save(e)} aria-labelledby="settings-h">
      <div class="site-form-grid">
        {text('title', { required: true })}
        <div class="field">
          <label for="site-default_language">{t('siteForm.default_language')}</label>
          <select id="site-default_language" value={form.default_language} disabled={!canEdit} aria-invalid={bad === 'default_language'} onChange={(e) => setForm({ ...form, default_language: (e.target as HTMLSelectElement).value })}>
            {languages.map((l) => (
              <option value={l}>{l}</option>
            ))}
          </select>
        </div>
        {text('description', { multiline: true })}
        <div class="site-icon-row">
          {text('icon', { hint: t('siteForm.iconHint') })}
          {text('icon_background', { placeholder: '#FFEAD5', hint: t('siteForm.colorHint') })}
          <span class="site-icon-preview" aria-hidden="true" style={{ background: /^#[0-9a-fA-F]{3,8}$/.test(form.icon_background) ? form.icon_background : undefined }}>
            {form.icon}
          </span>
        </div>
        {chatty && text('chat_color_theme', { placeholder: '#1C64F2', hint: t('siteForm.chatColorHint') })}
        {chatty && text('input_placeholder')}
        {text('copyright')}
        {text('privacy_policy', { placeholder: 'https://', hint: t('siteForm.privacyHint') })}
        {text('custom_disclaimer', { multiline: true })}
      </div>
      <fieldset class="site-flags">
        <legend>{t('siteForm.display')}</legend>
        {chatty && flag('chat_color_theme_inverted')}
        {workflowish && flag('show_workflow_steps')}
        {flag('use_icon_as_answer_icon')}
      </fieldset>
      {canEdit ? <FormFooter error={error} submitLabel={busy ? t('siteForm.saving') : t('siteForm.save')} disabled={busy} /> : <p class="hint">{t('siteForm.readOnly')}</p>}
    </form>
  );
}
