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

/** Escapes text for HTML content and quoted attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
