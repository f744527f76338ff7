import { useState } from 'preact/hooks';
import { useT } from '../lib/i18n.js';
import { toast } from './toast.js';

/** Copies text to the clipboard, then says so. */
export async function copyText(text: string, done: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // no clipboard permission (an insecure origin): select-and-copy through a hidden field
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
  toast(done);
}

/** A block of code or text (a snippet, a key, an export) with a copy button. */
export function CodeView({ code, label, wrap }: { code: string; label: string; wrap?: boolean }) {
  const t = useT();
  return (
    <figure class="code-view">
      <figcaption>
        <span>{label}</span>
        <button type="button" class="btn small" onClick={() => void copyText(code, t('console.copied'))} aria-label={`${t('console.copy')}: ${label}`}>
          {t('console.copy')}
        </button>
      </figcaption>
      <pre class={wrap ? 'wrap' : undefined} tabIndex={0}>
        <code>{code}</code>
      </pre>
    </figure>
  );
}

/** A value of any shape as indented JSON (node inputs, outputs, process data), folded when long. */
export function JsonView({ value, label }: { value: unknown; label: string }) {
  const t = useT();
  const text = JSON.stringify(value, null, 2) ?? 'null';
  const long = text.length > 2000;
  const [open, setOpen] = useState(!long);
  return (
    <div class="json-view">
      <CodeView code={open ? text : text.slice(0, 2000) + '\n…'} label={label} wrap />
      {long && (
        <button type="button" class="btn small" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? t('console.showLess') : t('console.showAll', { n: text.length })}
        </button>
      )}
    </div>
  );
}
