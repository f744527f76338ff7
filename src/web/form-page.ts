import type { FormInput } from '../forms/form-definition.js';
import type { WebFormView } from '../forms/form-service.js';
import { CATEGORY_EXTENSIONS } from '../files/file-types.js';
import { escapeHtml as e, renderMarkdown } from './markdown.js';

/** Field names on the page: `input.<output_variable_name>`; the pressed button sends `action`. */
export const FIELD_PREFIX = 'input.';

const OUTPUT_REF = /\{\{#\$output\.([A-Za-z_][A-Za-z0-9_]{0,29})#\}\}/g;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${e(title)}</title>
<link rel="stylesheet" href="/form/-/form.css">
</head>
<body>
<main>
${body}
</main>
<script src="/form/-/form.js" defer></script>
</body>
</html>
`;
}

function labelOf(input: FormInput): string {
  return typeof input.label === 'string' && input.label.trim() !== '' ? input.label : input.output_variable_name;
}

function acceptOf(input: FormInput): string | undefined {
  const types = input.allowed_file_types ?? [];
  if (types.length === 0) return undefined;
  const out: string[] = [];
  for (const t of types) {
    if (t === 'custom') out.push(...(input.allowed_file_extensions ?? []).map((x) => `.${String(x).replace(/^\./, '')}`));
    else if (t in CATEGORY_EXTENSIONS) out.push(...CATEGORY_EXTENSIONS[t as keyof typeof CATEGORY_EXTENSIONS].map((x) => `.${x}`));
  }
  return out.length > 0 ? out.join(',') : undefined;
}

function field(input: FormInput, index: number, value: string, error: string | undefined): string {
  const id = `f${index}`;
  const name = e(FIELD_PREFIX + input.output_variable_name);
  const label = e(labelOf(input));
  const errId = `${id}-error`;
  const describedBy = `aria-describedby="${id}-hint ${errId}"`;
  const errorHtml = `<p class="error" id="${errId}" aria-live="polite">${error ? e(error) : ''}</p>`;
  const invalid = error ? ' aria-invalid="true"' : '';
  switch (input.type as string) {
    case 'paragraph':
      return `<div class="field"><label for="${id}">${label}</label><textarea id="${id}" name="${name}" data-field ${describedBy}${invalid}>${e(value)}</textarea><p class="hint" id="${id}-hint">Optional.</p>${errorHtml}</div>`;
    case 'select': {
      const options = (input.options ?? []).map((o) => `<option value="${e(o)}"${o === value ? ' selected' : ''}>${e(o)}</option>`).join('');
      return `<div class="field"><label for="${id}">${label}</label><select id="${id}" name="${name}" required data-field ${describedBy}${invalid}><option value="">Choose…</option>${options}</select><p class="hint" id="${id}-hint">Required.</p>${errorHtml}</div>`;
    }
    case 'number':
      return `<div class="field"><label for="${id}">${label}</label><input type="number" step="any" inputmode="decimal" id="${id}" name="${name}" value="${e(value)}" required data-field ${describedBy}${invalid}><p class="hint" id="${id}-hint">A number. Required.</p>${errorHtml}</div>`;
    case 'file':
    case 'file-list': {
      // a file list may be empty, as the Service API accepts `[]`; a single file is required
      const many = input.type === 'file-list';
      const limit = many ? Number(input.number_limits ?? 0) : 1;
      const accept = acceptOf(input);
      const hint = many ? (limit > 0 ? `Up to ${limit} files. Optional.` : 'Any number of files. Optional.') : 'One file. Required.';
      return `<div class="field"><label for="${id}">${label}</label><input type="file" id="${id}" name="${name}"${many ? ' multiple' : ' required'}${accept ? ` accept="${e(accept)}"` : ''} data-max-files="${limit}" data-field ${describedBy}${invalid}><p class="hint" id="${id}-hint">${hint}${accept ? ` Allowed: ${e(accept.replace(/,/g, ', '))}.` : ''}</p><p class="hint" id="${id}-files" aria-live="polite"></p>${errorHtml}</div>`;
    }
    default:
      // `text-input` (older DSL) and any other text-like field: one line.
      return `<div class="field"><label for="${id}">${label}</label><input type="text" id="${id}" name="${name}" value="${e(value)}" data-field ${describedBy}${invalid}><p class="hint" id="${id}-hint">Optional.</p>${errorHtml}</div>`;
  }
}

/**
 * The form content as HTML with the fields placed in it, as Dify's form shows it: the content is
 * cut at each `{{#$output.x#}}`, every piece rendered as Markdown (raw HTML escaped) and the field
 * of input `x` put where its placeholder was. A field is placed once (a later placeholder of the
 * same input, or one naming no input, shows the name in brackets); `fieldHtml` gives the field of
 * an input name. Answers the HTML and the names placed.
 */
export function contentWithFields(formContent: string, inputs: readonly FormInput[], fieldHtml: (name: string) => string | undefined): { html: string; placed: Set<string> } {
  const byName = new Map(inputs.map((i) => [i.output_variable_name, labelOf(i)]));
  const placed = new Set<string>();
  const parts: string[] = [];
  let text = '';
  let last = 0;
  for (const m of formContent.matchAll(OUTPUT_REF)) {
    const name = m[1]!;
    text += formContent.slice(last, m.index);
    last = m.index + m[0].length;
    const html = placed.has(name) ? undefined : fieldHtml(name);
    if (html === undefined) {
      text += `[${byName.get(name) ?? name}]`;
      continue;
    }
    if (text.trim() !== '') parts.push(renderMarkdown(text));
    text = '';
    parts.push(html);
    placed.add(name);
  }
  text += formContent.slice(last);
  if (text.trim() !== '') parts.push(renderMarkdown(text));
  return { html: parts.join('\n'), placed };
}

export interface FormPageState {
  /** Values to show (the submitted ones after a rejected post, else the defaults). */
  readonly values?: Readonly<Record<string, string>>;
  /** A rejection message (the API's text), shown above the form and next to the named field. */
  readonly error?: string;
}

/** The open form: content, one field per input, one button per action, the expiry time. */
export function formPage(token: string, form: WebFormView, state: FormPageState = {}): string {
  const values = state.values ?? form.resolved_default_values;
  const fieldError = (name: string) => (state.error && new RegExp(`(^|[\\s:,])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\[|\\s|:|,|$)`).test(state.error) ? state.error : undefined);
  const inputs = form.inputs as readonly FormInput[];
  const fieldOf = (input: FormInput, i: number) => field(input, i, values[input.output_variable_name] ?? '', fieldError(input.output_variable_name));
  const index = new Map(inputs.map((input, i) => [input.output_variable_name, i] as const));
  const content = contentWithFields(form.form_content, inputs, (name) => {
    const i = index.get(name);
    return i === undefined ? undefined : fieldOf(inputs[i]!, i);
  });
  // inputs the content does not place come after it (Dify shows only placed ones; a form must stay answerable)
  const fields = inputs
    .map((input, i) => (content.placed.has(input.output_variable_name) ? '' : fieldOf(input, i)))
    .filter((f) => f !== '')
    .join('\n');
  const buttons = form.user_actions
    .map((a) => `<button type="submit" name="action" value="${e(a.id)}" class="${e(['primary', 'default', 'accent', 'ghost'].includes(a.button_style) ? a.button_style : 'default')}">${e(a.title)}</button>`)
    .join('');
  const expires = new Date(form.expiration_time * 1000);
  const body = `<div class="card">
<h1>${e(form.nodeTitle || 'Your input is needed')}</h1>
${state.error ? `<div class="errors" role="alert">${e(state.error)}</div>` : ''}
<form method="post" action="/form/${e(encodeURIComponent(token))}" enctype="multipart/form-data" data-human-input>
<div class="content">${content.html}</div>
${fields}
<div class="actions">${buttons}</div>
</form>
<p class="expiry">This form expires at <time datetime="${expires.toISOString()}">${e(expires.toUTCString())}</time>.</p>
</div>`;
  return layout(form.nodeTitle || 'Form', body);
}

export const MESSAGE_PAGES = {
  done: { title: 'Thank you', text: 'Your response was recorded. The workflow continues; you can close this page.' },
  submitted: { title: 'Already answered', text: 'This form has already been submitted. Each form takes one answer.' },
  expired: { title: 'Form expired', text: 'This form has expired and can no longer be answered.' },
  not_found: { title: 'Form not found', text: 'There is no form at this address. Check that the link is complete.' },
  rate_limited: { title: 'Too many requests', text: 'Too many requests came from your address. Wait a minute and try again.' },
} as const;

export type MessagePage = keyof typeof MESSAGE_PAGES;

/** A result or status page (no form). */
export function messagePage(kind: MessagePage): string {
  const m = MESSAGE_PAGES[kind];
  return layout(m.title, `<div class="card" data-page="${kind}"><h1>${e(m.title)}</h1><p>${e(m.text)}</p></div>`);
}
