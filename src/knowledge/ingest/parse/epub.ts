import path from 'node:path';
import * as cheerio from 'cheerio';
import { ParseError } from '../../errors.js';
import { parseHtml } from './html.js';
import { entryText, openZip } from './zip-entries.js';

/**
 * EPUB text: the chapters of the package's spine in reading order (`META-INF/container.xml` →
 * the OPF file → `spine`/`itemref` → `manifest` items), each as HTML text, separated by blank lines.
 */
export async function parseEpub(bytes: Buffer): Promise<string> {
  const zip = await openZip(bytes, 'EPUB');
  const container = await entryText(zip, 'META-INF/container.xml');
  if (!container) throw new ParseError('The EPUB file could not be read: META-INF/container.xml is missing');
  const opfPath = cheerio.load(container, { xml: true })('rootfile').attr('full-path');
  const opf = opfPath ? await entryText(zip, opfPath) : undefined;
  if (!opfPath || !opf) throw new ParseError('The EPUB file could not be read: its package (OPF) file is missing');
  const $ = cheerio.load(opf, { xml: true });
  const hrefs = new Map<string, string>();
  $('manifest > item').each((_, el) => {
    const id = $(el).attr('id');
    const href = $(el).attr('href');
    if (id && href) hrefs.set(id, href);
  });
  const base = path.posix.dirname(opfPath);
  const chapters: string[] = [];
  for (const ref of $('spine > itemref').map((_, el) => $(el).attr('idref') ?? '').get()) {
    const href = hrefs.get(ref);
    if (!href) continue;
    const html = await entryText(zip, path.posix.normalize(path.posix.join(base, decodeURIComponent(href))));
    if (html === undefined) continue;
    const text = parseHtml(Buffer.from(html));
    if (text !== '') chapters.push(text);
  }
  return chapters.join('\n\n');
}
