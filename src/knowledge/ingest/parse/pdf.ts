import { getDocumentProxy } from 'unpdf';
import { ParseError } from '../../errors.js';
import { overLimit, TextBudget, type ParseLimits } from './limits.js';

/**
 * PDF text, one page after another (pdf.js through unpdf), a page at a time: a document of more
 * than `PARSE_MAX_PAGES` pages (as its page tree counts them: a tree that names one node a million
 * times has a million pages) is refused before any page is read.
 */
export async function parsePdf(bytes: Buffer, limits: ParseLimits): Promise<string> {
  let pdf;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes));
  } catch (err) {
    throw new ParseError(`The PDF could not be read: ${(err as Error).message}`);
  }
  try {
    if (pdf.numPages > limits.maxPages) throw overLimit(limits, 'maxPages', `The PDF has ${pdf.numPages} pages, more than the limit`);
    const budget = new TextBudget(limits, 'PDF');
    const pages: string[] = [];
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      // as unpdf's extractText: each item's text, a line break after an item that ends a line
      const text = content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('');
      pages.push(budget.take(text.trim()));
      page.cleanup();
    }
    return pages.join('\n\n');
  } finally {
    await pdf.destroy();
  }
}
