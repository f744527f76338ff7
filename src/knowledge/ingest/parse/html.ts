import * as cheerio from 'cheerio';
import { DEFAULT_PARSE_LIMITS } from './limits.js';
import { decodeText } from './decode.js';
import { nestsDeeperThan } from './html-depth.js';
import { overLimit, type ParseLimits } from './limits.js';

const BLOCK = 'p,div,section,article,header,footer,li,tr,h1,h2,h3,h4,h5,h6,pre,blockquote,table,ul,ol,br';

/** HTML to text: scripts and styles dropped, block elements become line breaks, headings keep `#`. */
export function parseHtml(bytes: Buffer, limits: ParseLimits = DEFAULT_PARSE_LIMITS): string {
  return htmlText(decodeText(bytes), limits);
}

/**
 * The text of an HTML string (see `parseHtml`). Elements nested deeper than
 * `PARSE_MAX_HTML_DEPTH` are refused before the DOM parser sees them (its cost grows with the
 * square of the depth).
 */
export function htmlText(html: string, limits: ParseLimits = DEFAULT_PARSE_LIMITS): string {
  if (nestsDeeperThan(html, limits.maxHtmlDepth)) throw overLimit(limits, 'maxHtmlDepth', `The HTML has elements nested more than ${limits.maxHtmlDepth} levels deep`);
  const $ = cheerio.load(html);
  $('script,style,noscript,template,head').remove();
  $('h1,h2,h3,h4,h5,h6').each((_, el) => {
    const level = Number(el.tagName.slice(1));
    $(el).prepend(`${'#'.repeat(level)} `);
  });
  $(BLOCK).each((_, el) => {
    $(el).append('\n');
  });
  return $.root().text().replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
}
