/** Elements that never have content (no end tag). */
const VOID = new Set(['area', 'base', 'basefont', 'bgsound', 'br', 'col', 'embed', 'frame', 'hr', 'img', 'input', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
/** Elements whose content is text up to their end tag. */
const RAW = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript', 'plaintext']);
/** Elements a start tag of the same kind closes (`<li>a<li>b`, `<p>a<p>b`). */
const SIBLINGS = new Set(['p', 'li', 'dd', 'dt', 'option', 'optgroup', 'tr', 'td', 'th', 'rb', 'rt', 'rp', 'rtc', 'tbody', 'thead', 'tfoot']);
/** The HTML parser's "special" elements: a stray end tag of another element does not close them. */
const SPECIAL = new Set([
  'address', 'applet', 'area', 'article', 'aside', 'base', 'basefont', 'bgsound', 'blockquote', 'body', 'br', 'button', 'caption', 'center', 'col', 'colgroup', 'dd', 'details', 'dir', 'div', 'dl', 'dt', 'embed', 'fieldset', 'figcaption', 'figure', 'footer', 'form', 'frame', 'frameset', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'head', 'header', 'hgroup', 'hr', 'html', 'iframe', 'img', 'input', 'keygen', 'li', 'link', 'listing', 'main', 'marquee', 'menu', 'meta', 'nav', 'noembed', 'noframes', 'noscript', 'object', 'ol', 'p', 'param', 'plaintext', 'pre', 'script', 'search', 'section', 'select', 'source', 'style', 'summary', 'table', 'tbody', 'td', 'template', 'textarea', 'tfoot', 'th', 'thead', 'title', 'tr', 'track', 'ul', 'wbr', 'xmp',
]);
/** Where the search for an open element of a special end tag stops. */
const SCOPE = new Set(['applet', 'caption', 'html', 'table', 'td', 'th', 'marquee', 'object', 'template']);

const NAME = /[a-zA-Z][^\s/>]*/y;

/**
 * Whether the elements of `html` nest more than `max` deep, found in one linear pass that follows
 * the HTML parser's main rules (void elements, raw-text elements, a stray end tag is ignored, a
 * `<p>`/`<li>`/`<td>` closes an open one of its kind) closely enough to see the nesting that makes
 * a DOM parser slow (parse5 is quadratic in depth: 100,000 nested `<div>` take minutes) and the DOM
 * walk overflow its stack. Its stack never holds more than `max + 1` names, so each end tag's
 * search is bounded too.
 */
export function nestsDeeperThan(html: string, max: number): boolean {
  const stack: string[] = [];
  let i = 0;
  const n = html.length;
  while (i < n) {
    const lt = html.indexOf('<', i);
    if (lt < 0) break;
    const c = html.charCodeAt(lt + 1);
    if (c === 0x21 /* ! */) {
      const end = html.startsWith('<!--', lt) ? html.indexOf('-->', lt + 4) : html.indexOf('>', lt + 2);
      if (end < 0) break;
      i = end + 1;
      continue;
    }
    const closing = c === 0x2f; /* / */
    NAME.lastIndex = lt + (closing ? 2 : 1);
    const m = NAME.exec(html);
    if (!m) {
      i = lt + 1;
      continue;
    }
    const name = m[0].toLowerCase();
    const gt = tagEnd(html, NAME.lastIndex);
    if (gt < 0) break;
    i = gt + 1;
    if (closing) {
      closeTag(stack, name);
      continue;
    }
    if (RAW.has(name)) {
      const close = new RegExp(`</${name}`, 'ig');
      close.lastIndex = i;
      const found = close.exec(html);
      if (!found) break;
      i = found.index;
      continue;
    }
    if (VOID.has(name) || html.charCodeAt(gt - 1) === 0x2f) continue;
    if (SIBLINGS.has(name)) {
      const at = stack.lastIndexOf(name, stack.length - 1);
      if (at >= 0 && at >= stack.length - 4) stack.length = at;
    }
    stack.push(name);
    if (stack.length > max) return true;
  }
  return false;
}

/** The `>` ending a tag whose attributes start at `from` (a quoted value, after `=`, may hold `>`). */
function tagEnd(html: string, from: number): number {
  let q = 0;
  let afterEquals = false;
  for (let j = from; j < html.length; j++) {
    const ch = html.charCodeAt(j);
    if (q !== 0) {
      if (ch === q) q = 0;
    } else if ((ch === 0x22 || ch === 0x27) && afterEquals) {
      q = ch;
    } else if (ch === 0x3e) {
      return j;
    }
    if (ch === 0x3d) afterEquals = true;
    else if (ch !== 0x20 && ch !== 0x09 && ch !== 0x0a && ch !== 0x0c && ch !== 0x0d) afterEquals = false;
  }
  return -1;
}

function closeTag(stack: string[], name: string): void {
  for (let k = stack.length - 1; k >= 0; k--) {
    const open = stack[k]!;
    if (open === name) {
      stack.length = k;
      return;
    }
    if (SPECIAL.has(name) ? SCOPE.has(open) : SPECIAL.has(open)) return;
  }
}
