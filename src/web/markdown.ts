import { createRequire } from 'node:module';
import type MarkdownIt from 'markdown-it';

const require = createRequire(import.meta.url);
type MarkdownItInstance = ReturnType<typeof MarkdownIt>;

/** The two renderers below, made on the first render. */
interface Renderers {
  readonly page: MarkdownItInstance;
  readonly mail: MarkdownItInstance;
}

let renderers: Renderers | undefined;

/**
 * markdown-it is loaded with the first Markdown rendered (a form page, a form email), not at start
 * (docs/speed.md, "Start-up"). Rendering is synchronous, so it is `require`d: the package's
 * one-file CommonJS build.
 */
function loadRenderers(): Renderers {
  if (renderers) return renderers;
  const MarkdownItClass = require('markdown-it') as typeof MarkdownIt;
  /*
   * Markdown → HTML for text that comes from the DSL or a run (form content, email bodies).
   * markdown-it with raw HTML disabled is the sanitiser: every `<`, `>` and `&` in the source is
   * escaped, and its link validator refuses `javascript:`, `vbscript:`, `file:` and non-image `data:`
   * URLs. Links open with `rel="noopener noreferrer"`. Rendering is linear in the input.
   */
  const md = new MarkdownItClass({ html: false, linkify: true, breaks: true });
  const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    tokens[idx]!.attrSet('rel', 'noopener noreferrer');
    return defaultLinkOpen(tokens, idx, options, env, self);
  };
  /*
   * The same Markdown for an email: an image whose source is not a `data:` URL becomes a link to it
   * (its alt text, or the URL, as the label), so opening the mail fetches nothing from another host
   * (a mail client's image fetch would tell that host who read the mail, and when).
   */
  const mailMd = new MarkdownItClass({ html: false, linkify: true, breaks: true });
  mailMd.renderer.rules.link_open = md.renderer.rules.link_open;
  const defaultImage = mailMd.renderer.rules.image ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  mailMd.renderer.rules.image = (tokens, idx, options, env, self) => {
    const token = tokens[idx]!;
    const src = String(token.attrGet('src') ?? '');
    if (/^data:image\//i.test(src)) return defaultImage(tokens, idx, options, env, self);
    const label = self.renderInlineAsText(token.children ?? [], options, env) || src;
    return `<a href="${escapeHtml(src)}" rel="noopener noreferrer">${escapeHtml(label)}</a>`;
  };
  renderers = { page: md, mail: mailMd };
  return renderers;
}

/** Markdown → HTML for text that comes from the DSL or a run (form content); raw HTML escaped, unsafe links refused. */
export function renderMarkdown(source: string): string {
  return loadRenderers().page.render(source);
}

/** The same Markdown for an email, with images from other hosts turned into links. */
export function renderMailMarkdown(source: string): string {
  return loadRenderers().mail.render(source);
}

/** Escapes text for HTML content and quoted attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
