import * as cheerio from 'cheerio';
import { decodeText } from './decode.js';

const BLOCK = 'p,div,section,article,header,footer,li,tr,h1,h2,h3,h4,h5,h6,pre,blockquote,table,ul,ol,br';

/** HTML to text: scripts and styles dropped, block elements become line breaks, headings keep `#`. */
export function parseHtml(bytes: Buffer): string {
  const $ = cheerio.load(decodeText(bytes));
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
