import path from 'node:path';
import * as cheerio from 'cheerio';
import { ParseError } from '../../errors.js';
import { htmlText } from './html.js';
import { Counter, TextBudget, type ParseLimits } from './limits.js';
import { ZipArchive } from './zip-entries.js';

/**
 * EPUB text: the chapters of the package's spine in reading order (`META-INF/container.xml` →
 * the OPF file → `spine`/`itemref` → `manifest` items), each as HTML text, separated by blank lines.
 * Every spine item is read (and counted) again, even one the spine names before: a spine that
 * repeats a chapter costs what that many chapters cost, within the same limits.
 */
export function parseEpub(bytes: Buffer, limits: ParseLimits): string {
  const zip = ZipArchive.open(bytes, 'EPUB', limits);
  const container = zip.text('META-INF/container.xml');
  if (!container) throw new ParseError('The EPUB file could not be read: META-INF/container.xml is missing');
  const opfPath = cheerio.load(container, { xml: true })('rootfile').attr('full-path');
  const opf = opfPath ? zip.text(opfPath) : undefined;
  if (!opfPath || !opf) throw new ParseError('The EPUB file could not be read: its package (OPF) file is missing');
  const $ = cheerio.load(opf, { xml: true });
  const hrefs = new Map<string, string>();
  $('manifest > item').each((_, el) => {
    const id = $(el).attr('id');
    const href = $(el).attr('href');
    if (id && href) hrefs.set(id, href);
  });
  const base = path.posix.dirname(opfPath);
  const spine = $('spine > itemref').map((_, el) => $(el).attr('idref') ?? '').get();
  new Counter(limits, 'maxSections', 'The EPUB file has more than N items in its spine').add(spine.length);
  const budget = new TextBudget(limits, 'EPUB');
  const chapters: string[] = [];
  for (const ref of spine) {
    const href = hrefs.get(ref);
    if (!href) continue;
    const html = zip.text(path.posix.normalize(path.posix.join(base, decodeURIComponent(href))));
    if (html === undefined) continue;
    const text = htmlText(html, limits);
    if (text !== '') chapters.push(budget.take(text));
  }
  return chapters.join('\n\n');
}
