import MarkdownIt from 'markdown-it';

/**
 * Markdown → HTML for model output in the pages, with the server's rules (src/web/markdown.ts):
 * raw HTML is off, so every `<`, `>` and `&` of the model's text is escaped (`<img onerror>` is
 * text), and markdown-it's link validator refuses `javascript:`, `vbscript:`, `file:` and
 * non-image `data:` URLs (`[x](javascript:…)` stays text). Links open in a new tab with
 * `rel="noopener noreferrer"`. The page's CSP (no inline script) is the second wall.
 */
const md = new MarkdownIt({ html: false, linkify: true, breaks: true });
const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx]!.attrSet('rel', 'noopener noreferrer');
  tokens[idx]!.attrSet('target', '_blank');
  return defaultLinkOpen(tokens, idx, options, env, self);
};
// Tables and code scroll inside their own box, so a wide one never widens a phone's page; the box
// takes the keyboard focus, so it scrolls with the arrow keys too.
md.renderer.rules.table_open = () => '<div class="table-wrap" tabindex="0"><table>\n';
const defaultFence = md.renderer.rules.fence!;
md.renderer.rules.fence = (tokens, idx, options, env, self) => defaultFence(tokens, idx, options, env, self).replace(/^<pre>/, '<pre tabindex="0">');
const defaultCodeBlock = md.renderer.rules.code_block!;
md.renderer.rules.code_block = (tokens, idx, options, env, self) => defaultCodeBlock(tokens, idx, options, env, self).replace(/^<pre>/, '<pre tabindex="0">');
md.renderer.rules.table_close = () => '</table></div>\n';

// A column's alignment as a class, not a style attribute (the pages' CSP allows no inline style).
md.core.ruler.push('align_class', (state) => {
  for (const token of state.tokens) {
    if (token.type !== 'th_open' && token.type !== 'td_open') continue;
    const align = /text-align:(left|center|right)/.exec(String(token.attrGet('style') ?? ''))?.[1];
    if (!token.attrs) continue;
    token.attrs = token.attrs.filter(([name]) => name !== 'style');
    if (align) token.attrSet('class', `align-${align}`);
  }
});

export function renderMarkdown(source: string): string {
  return md.render(source);
}
