import * as cheerio from 'cheerio';
import { Counter, TextBudget, type ParseLimits } from './limits.js';
import { ZipArchive } from './zip-entries.js';

/** `ppt/slides/slide12.xml` → 12. */
const slideNumber = (name: string) => Number(/slide(\d+)\.xml$/.exec(name)?.[1] ?? 0);

/**
 * PowerPoint (`.pptx`) text: slides in order, each paragraph (`a:p`) a line of its runs (`a:t`),
 * slides separated by a blank line.
 */
export function parsePptx(bytes: Buffer, limits: ParseLimits): string {
  const zip = ZipArchive.open(bytes, 'PPTX', limits);
  const names = zip.names().filter((n) => /^ppt\/slides\/slide\d+\.xml$/.test(n)).sort((a, b) => slideNumber(a) - slideNumber(b));
  new Counter(limits, 'maxSections', 'The PPTX file has more than N slides').add(names.length);
  const budget = new TextBudget(limits, 'PPTX');
  const slides: string[] = [];
  for (const n of names) {
    const $ = cheerio.load(zip.text(n) ?? '', { xml: true });
    const lines: string[] = [];
    $('a\\:p').each((_, p) => {
      const line = $(p).find('a\\:t').map((__, t) => $(t).text()).get().join('');
      if (line.trim() !== '') lines.push(budget.take(line));
    });
    if (lines.length > 0) slides.push(lines.join('\n'));
  }
  return slides.join('\n\n');
}
