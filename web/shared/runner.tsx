import type { ComponentChildren } from 'preact';
import type { Boot } from './boot.js';
import { AppIcon, SiteFooter } from './components.js';

/** The frame of the completion and workflow pages: the app's header, a form column and a results column. */
export function RunnerLayout({ b, form, results }: { b: Boot; form: ComponentChildren; results: ComponentChildren }) {
  const site = b.site.site;
  return (
    <div class="app runner">
      <header class="runner-head">
        <AppIcon site={site} size={40} />
        <div>
          <h1>{site.title}</h1>
          {site.description && <p class="hint">{site.description}</p>}
        </div>
      </header>
      <div class="runner-body">
        <section class="card" aria-label={b.t('startForm')}>
          {form}
        </section>
        <section class="results" aria-label={b.t('output')} aria-live="polite">
          {results}
        </section>
      </div>
      <SiteFooter site={site} t={b.t} />
    </div>
  );
}

/** Copies text to the clipboard; resolves whether it worked. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** A CSV file's text for download: every field quoted, quotes doubled (RFC 4180). */
export function toCsv(rows: readonly (readonly string[])[]): string {
  return rows.map((r) => r.map((c) => `"${c.replace(/"/g, '""')}"`).join(',')).join('\r\n') + '\r\n';
}

export function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob(['\ufeff', text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
