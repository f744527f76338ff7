/**
 * Parsing a normal DOCX (2,000 paragraphs, ~170 KB of text) inline, as the server did before
 * issue 39, beside `DocumentParser` (a worker thread with the heap and time limits, the zip
 * checked through its central directory first): the first parse (the worker starts and loads
 * mammoth), then, after five warm-up parses on each side, the median of 9, in this process.
 */
import { DEFAULT_PARSE_LIMITS } from '../src/config/defaults.js';
import { parseDocument } from '../src/knowledge/ingest/parse/index.js';
import { DocumentParser } from '../src/knowledge/ingest/parse/document-parser.js';
import { docxWith } from '../test/helpers/bombs.js';
import { fmt } from './lib.js';

const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';

function docx(paragraphs: number): Buffer {
  const ps: string[] = [];
  for (let i = 0; i < paragraphs; i++) ps.push(`<w:p><w:r><w:t>Paragraph ${i} of the report says what the numbers mean for the next quarter.</w:t></w:r></w:p>`);
  return docxWith({ name: 'word/document.xml', data: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ${W}><w:body>${ps.join('')}</w:body></w:document>` });
}

async function median(n: number, f: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[Math.floor(n / 2)]!;
}

export async function run(): Promise<void> {
  const bytes = docx(2000);
  const parser = new DocumentParser({ ...DEFAULT_PARSE_LIMITS, timeoutMs: 120_000, maxHeapMb: 512, workers: 1 });
  try {
    const t = performance.now();
    const text = await parser.parse(bytes, 'docx', { name: 'report.docx' });
    const cold = performance.now() - t;
    // the same warm-up on both sides: modules loaded, code optimized
    for (let i = 0; i < 5; i++) {
      await parseDocument(bytes, 'docx', DEFAULT_PARSE_LIMITS);
      await parser.parse(bytes, 'docx', { name: 'report.docx' });
    }
    const inline = await median(9, () => parseDocument(bytes, 'docx', DEFAULT_PARSE_LIMITS));
    const worker = await median(9, () => parser.parse(bytes, 'docx', { name: 'report.docx' }));
    console.log(`docx ${bytes.length} bytes → ${text.length} characters`);
    console.log(`inline (main thread)      ${fmt(inline, 1)} ms`);
    console.log(`worker thread, warm       ${fmt(worker, 1)} ms  (${fmt(worker / inline)}x inline; the main thread is free meanwhile)`);
    console.log(`worker thread, first      ${fmt(cold, 1)} ms  (starts the thread, loads mammoth)`);
  } finally {
    await parser.close();
  }
}
