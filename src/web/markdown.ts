import MarkdownIt from 'markdown-it';

/**
 * Markdown → HTML for text that comes from the DSL or a run (form content, email bodies).
 * markdown-it with raw HTML disabled is the sanitiser: every `<`, `>` and `&` in the source is
 * escaped, and its link validator refuses `javascript:`, `vbscript:`, `file:` and non-image `data:`
 * URLs. Links open with `rel="noopener noreferrer"`. Rendering is linear in the input.
 */
const md = new MarkdownIt({ html: false, linkify: true, breaks: true });
const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx]!.attrSet('rel', 'noopener noreferrer');
  return defaultLinkOpen(tokens, idx, options, env, self);
};

export function renderMarkdown(source: string): string {
  return md.render(source);
}

/**
 * The same Markdown for an email: an image whose source is not a `data:` URL becomes a link to it
 * (its alt text, or the URL, as the label), so opening the mail fetches nothing from another host
 * (a mail client's image fetch would tell that host who read the mail, and when).
 */
const mailMd = new MarkdownIt({ html: false, linkify: true, breaks: true });
mailMd.renderer.rules.link_open = md.renderer.rules.link_open;
const defaultImage = mailMd.renderer.rules.image ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
mailMd.renderer.rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  const src = String(token.attrGet('src') ?? '');
  if (/^data:image\//i.test(src)) return defaultImage(tokens, idx, options, env, self);
  const label = self.renderInlineAsText(token.children ?? [], options, env) || src;
  return `<a href="${escapeHtml(src)}" rel="noopener noreferrer">${escapeHtml(label)}</a>`;
};

export function renderMailMarkdown(source: string): string {
  return mailMd.render(source);
}

/** Escapes text for HTML content and quoted attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
