import * as cheerio from 'cheerio';
import { openZip, entryText } from './zip-entries.js';

/** `ppt/slides/slide12.xml` → 12. */
const slideNumber = (name: string) => Number(/slide(\d+)\.xml$/.exec(name)?.[1] ?? 0);

/**
 * PowerPoint (`.pptx`) text: slides in order, each paragraph (`a:p`) a line of its runs (`a:t`),
 * slides separated by a blank line.
 */
export async function parsePptx(bytes: Buffer): Promise<string> {
  const zip = await openZip(bytes, 'PPTX');
  const names = Object.keys(zip.files).filter((n) => /^ppt\/slides\/slide\d+\.xml$/.test(n)).sort((a, b) => slideNumber(a) - slideNumber(b));
  const slides: string[] = [];
  for (const n of names) {
    const $ = cheerio.load((await entryText(zip, n)) ?? '', { xml: true });
    const lines: string[] = [];
    $('a\\:p').each((_, p) => {
      const line = $(p).find('a\\:t').map((__, t) => $(t).text()).get().join('');
      if (line.trim() !== '') lines.push(line);
    });
    if (lines.length > 0) slides.push(lines.join('\n'));
  }
  return slides.join('\n\n');
}
