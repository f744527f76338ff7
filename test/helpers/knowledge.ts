import http from 'node:http';
import type { AddressInfo } from 'node:net';
import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import iconv from 'iconv-lite';

/** A one-page PDF with the given line of text (built by hand, valid xref). */
export function makePdf(text: string): Buffer {
  const stream = `BT /F1 18 Tf 72 700 Td (${text.replace(/[()\\]/g, (c) => `\\${c}`)}) Tj ET`;
  const objs = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objs.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** A minimal DOCX (WordprocessingML in a zip) with one paragraph per line. */
export async function makeDocx(lines: string[]): Promise<Buffer> {
  const zip = new JSZip();
  zip.file(
    '[Content_Types].xml',
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
  );
  zip.file(
    '_rels/.rels',
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
  );
  const body = lines.map((l) => `<w:p><w:r><w:t>${l}</w:t></w:r></w:p>`).join('');
  zip.file(
    'word/document.xml',
    `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`,
  );
  return zip.generateAsync({ type: 'nodebuffer' });
}

export async function makeXlsx(rows: (string | number)[][]): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Sheet1');
  for (const r of rows) ws.addRow(r);
  return Buffer.from(await wb.xlsx.writeBuffer());
}

/** One fixture per supported type; each holds a word no other fixture has. */
export async function fixtures(): Promise<{ name: string; bytes: Buffer; mime: string; word: string }[]> {
  return [
    { name: 'notes.txt', mime: 'text/plain', word: 'zanzibar', bytes: iconv.encode('Café notes from zanzibar: naïve façade résumé, déjà vu.\nSecond line.', 'windows-1252') },
    { name: 'guide.md', mime: 'text/markdown', word: 'quokka', bytes: Buffer.from('# Guide\n\nThe quokka is a small marsupial.\n\n## More\n\nText.') },
    { name: 'page.html', mime: 'text/html', word: 'axolotl', bytes: Buffer.from('<html><head><title>x</title><style>p{}</style><script>var hidden="scriptword"</script></head><body><h1>Pets</h1><p>The axolotl lives in lakes.</p></body></html>') },
    { name: 'paper.pdf', mime: 'application/pdf', word: 'narwhal', bytes: makePdf('The narwhal has a long tusk') },
    { name: 'report.docx', mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', word: 'pangolin', bytes: await makeDocx(['The pangolin has scales.', 'Second paragraph.']) },
    { name: 'table.csv', mime: 'text/csv', word: 'okapi', bytes: Buffer.from('animal,habitat\nokapi,forest\nlion,savanna\n') },
    { name: 'sheet.xlsx', mime: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', word: 'capybara', bytes: await makeXlsx([['animal', 'size'], ['capybara', 'large'], ['mouse', 'small']]) },
    { name: 'data.json', mime: 'application/json', word: 'wombat', bytes: Buffer.from(JSON.stringify([{ animal: 'wombat', home: 'burrow' }, { animal: 'koala', home: 'tree' }])) },
  ];
}

/**
 * An OpenAI-compatible `/v1/embeddings` server the test controls: answers at once, holds requests
 * of two or more texts (indexing batches) until `release()`, or fails with a status.
 */
export interface EmbeddingsServer {
  readonly baseUrl: string;
  mode: 'answer' | 'hold' | 'fail';
  readonly held: number;
  /** Texts embedded so far (answered requests only). */
  readonly texts: number;
  /** Resolves once a request is being held. */
  waitHeld(): Promise<void>;
  release(): void;
  close(): Promise<void>;
}

function vector(text: string, dims: number): number[] {
  const v = new Array(dims).fill(0) as number[];
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 0;
    for (const ch of w) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    v[h % dims]! += 1;
  }
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
}

/**
 * `dims`: size of the vectors it answers with; `embed`: how a text becomes one (word hashing unless
 * given, e.g. a bench's dense vectors that it also computes in process for a bulk load).
 */
export async function startEmbeddings(dims = 16, embed: (text: string, dims: number) => ArrayLike<number> = vector): Promise<EmbeddingsServer> {
  const pending: (() => void)[] = [];
  let texts = 0;
  let waiters: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as { input: string[]; model: string };
      const answer = () => {
        if (res.destroyed) return;
        texts += body.input.length;
        const data = body.input.map((t, index) => ({ object: 'embedding', index, embedding: Array.from(embed(t, dims)) }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }));
      };
      if (state.mode === 'fail') {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'embedding upstream is down' } }));
      } else if (state.mode === 'hold' && body.input.length >= 2) {
        // Indexing batches are held; single-text query embeddings pass, so retrieval keeps working.
        pending.push(answer);
        for (const w of waiters.splice(0)) w();
      } else answer();
    });
  });
  // Idle connections stay open well past the client's reuse: a caller in the same process that holds
  // the event loop for seconds (a bench's bulk load) would otherwise reuse a socket as it closes.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const state: EmbeddingsServer = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    mode: 'answer',
    get held() {
      return pending.length;
    },
    get texts() {
      return texts;
    },
    waitHeld: () => (pending.length > 0 ? Promise.resolve() : new Promise<void>((r) => waiters.push(r))),
    release() {
      state.mode = 'answer';
      for (const a of pending.splice(0)) a();
    },
    async close() {
      waiters = [];
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  return state;
}
