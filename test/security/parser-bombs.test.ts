/**
 * Issue 39, "A small file must not kill the server": document parsing ran in the server's main
 * process with no cap on expanded size, text, rows, pages or time. A 19 KB xlsx (one 1 MB shared
 * string used by 4,000 cells), a 300 KB docx of millions of paragraphs and a docx zip bomb each
 * ended in V8's fatal out-of-memory, again after every restart; a 2.8 KB PDF whose page tree reuses
 * one node held /health for minutes, as did nested <div>s, an EPUB whose spine repeats a big
 * chapter and a PPTX with a huge slide. Parsing now runs on a worker thread with a heap and a time
 * limit, within caps (PARSE_*): each bomb fails only its own document, with an error naming the
 * setting, while /health answers throughout and the process lives on.
 *
 * Every bomb is generated here (test/helpers/bombs.ts) and sent through the knowledge API (a
 * dataset key) to a server in a process of its own, so an out-of-memory would show as a dead
 * process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, testDialect, type TestServer } from '../helpers/server.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { watchHealth, type HealthWatch } from '../helpers/health-watch.js';
import { kbClient } from '../helpers/kb-client.js';
import { docxBomb, docxOfParagraphs, epubRepeatingChapter, nestedDivs, pdfPageTreeBomb, pptxHugeSlide, xlsxSharedStringBomb } from '../helpers/bombs.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { dataFrames, parseSse } from '../helpers/sse.js';

const MB = 1024 * 1024;

/** A child server on fresh data, with a dataset key (and an app, when `app` is given), watched by a /health prober. */
async function bombServer(env: Record<string, string>, app?: string) {
  const prep = await startServer();
  const key = await prep.datasetKey();
  const appKey = app ? (await prep.importApp(app)).apiKey : undefined;
  await prep.stop();
  const server = await spawnServer(prep, { QUEUE_POLL_MS: '50', ...env });
  const health = watchHealth(server.url);
  const kb = kbClient({ api: server.api } as TestServer, key);
  return { prep, server, health, kb, appKey };
}

/** Stops the prober and the server; /health answered every probe and the process never died (how fast: `npm run bench health-under-attack`). */
async function finish(s: { prep: TestServer; server: ServerProcess; health: HealthWatch }): Promise<void> {
  const report = await s.health.stop();
  const alive = s.server.alive();
  await s.server.close();
  await s.prep.close();
  expect(report.failures).toEqual([]);
  expect(report.probes).toBeGreaterThan(0);
  expect(alive).toBe(true);
}

/** Uploads `bytes` as a document and waits for it to settle; returns its final indexing status. */
async function index(kb: ReturnType<typeof kbClient>, ds: string, name: string, bytes: Buffer, processRule: unknown = { mode: 'automatic' }): Promise<Record<string, unknown>> {
  const c = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name, bytes }, { indexing_technique: 'economy', process_rule: processRule });
  expect(c.status, JSON.stringify(c.body)).toBe(200);
  return kb.settle(ds, c.body.batch as string, 180_000);
}

// Parsing is the same code on either storage: the bombs run on SQLite only.
describe.skipIf(testDialect() === 'postgres')('parser bombs against the default limits', () => {
  let s: Awaited<ReturnType<typeof bombServer>>;
  let ds: string;

  beforeAll(async () => {
    s = await bombServer({});
    ds = await s.kb.dataset('bombs');
  }, 120_000);
  afterAll(async () => finish(s), 120_000);

  const cases: [string, string, () => Buffer, RegExp][] = [
    // 11 KB: 4,000 cells that all show one 1 MB string (4 GB of text if built)
    ['an xlsx whose one 1 MB shared string is used by 4,000 cells', 'shared.xlsx', () => xlsxSharedStringBomb(MB, 40, 100), /^shared\.xlsx: The XLSX file has more text than the limit of 20000000 characters \(PARSE_MAX_TEXT_CHARS=20000000\)\.$/],
    // 200 KB that inflate to 200 MB
    ['a docx zip bomb', 'bomb.docx', () => docxBomb(200 * MB), /^bomb\.docx: The DOCX file's entry word\/document\.xml would inflate to 209715200 bytes, more than the limit \(PARSE_MAX_UNCOMPRESSED_BYTES=104857600\)\.$/],
    ['a docx zip bomb whose headers say it holds 1,000 bytes', 'liar.docx', () => docxBomb(200 * MB, 1000), /^liar\.docx: The DOCX file's entry word\/document\.xml inflates to more than the 1000 bytes it declares; inflating stopped there \(PARSE_MAX_UNCOMPRESSED_BYTES=104857600\)\.$/],
    // 2 KB: a page tree that names one node twice at each of 20 levels
    ['a PDF whose page tree reuses one node (2^20 pages)', 'pages.pdf', () => pdfPageTreeBomb(20), /^pages\.pdf: The PDF has 1048576 pages, more than the limit \(PARSE_MAX_PAGES=10000\)\.$/],
    // 500 KB of <div>: minutes in the DOM parser, whose cost grows with the square of the depth
    ['100,000 nested <div>s', 'deep.html', () => nestedDivs(100_000), /^deep\.html: The HTML has elements nested more than 1000 levels deep \(PARSE_MAX_HTML_DEPTH=1000\)\.$/],
  ];
  for (const [label, name, make, error] of cases) {
    it(`${label}: the document ends in error naming the setting`, async () => {
      const bytes = make();
      expect(bytes.length).toBeLessThan(600 * 1024);
      const st = await index(s.kb, ds, name, bytes);
      expect(st.indexing_status).toBe('error');
      expect(String(st.error)).toMatch(error);
    }, 200_000);
  }

  it('a normal document still indexes after them (a new parse worker replaces a stopped one)', async () => {
    const st = await index(s.kb, ds, 'fine.html', Buffer.from('<html><body><h1>Title</h1><div><p>plain words</p></div></body></html>'));
    expect(st).toMatchObject({ indexing_status: 'completed', error: null });
  }, 60_000);

  it('1 MB of "a" with remove_urls_emails (quadratic e-mail pattern before) indexes, and its e-mails and URLs are removed', async () => {
    const text = `${'a'.repeat(MB)} mail me at ann@example.com or see https://example.com/x ok`;
    const rule = { mode: 'custom', rules: { pre_processing_rules: [{ id: 'remove_extra_spaces', enabled: true }, { id: 'remove_urls_emails', enabled: true }], segmentation: { separator: '\n\n', max_tokens: 1000 } } };
    const st = await index(s.kb, ds, 'aaa.txt', Buffer.from(text), rule);
    expect(st).toMatchObject({ indexing_status: 'completed', error: null });
    const doc = st.id as string;
    const segs = await s.kb.call('GET', `/datasets/${ds}/documents/${doc}/segments?limit=100&keyword=mail`);
    expect(segs.status).toBe(200);
    const last = (segs.body.data as { content: string }[]).map((x) => x.content).join('\n');
    expect(last).toContain('mail me at');
    expect(last).not.toContain('ann@example.com');
    expect(last).not.toContain('https://');
  }, 200_000);
});

describe.skipIf(testDialect() === 'postgres')('parser bombs against low limits (heap, time, text, bytes), and a document-extractor node', () => {
  const extractor = workflowDsl(
    [startNode([{ variable: 'doc', type: 'file' }]), { id: 'ex', type: 'document-extractor', title: 'Read the file', variable_selector: ['start', 'doc'], is_array_file: false }, endNode({ text: ['ex', 'text'] })],
    [['start', 'ex'], ['ex', 'end']],
  );
  let s: Awaited<ReturnType<typeof bombServer>>;
  let ds: string;

  beforeAll(async () => {
    s = await bombServer(
      {
        PARSE_MAX_HEAP_MB: '96',
        PARSE_TIMEOUT_MS: '10000',
        PARSE_MAX_UNCOMPRESSED_BYTES: String(8 * MB),
        PARSE_MAX_TEXT_CHARS: '1000000',
        // the nesting cap out of the way, so that the DOM parser's time is what stops deep HTML
        PARSE_MAX_HTML_DEPTH: '1000000',
      },
      extractor,
    );
    ds = await s.kb.dataset('bombs');
  }, 120_000);
  afterAll(async () => finish(s), 120_000);

  const cases: [string, string, () => Buffer, RegExp][] = [
    // 10 KB: a million `<w:p/>`, within the byte cap; the parse outgrows its heap
    ['a docx of a million paragraphs', 'paras.docx', () => docxOfParagraphs(1_000_000), /^Parsing paras\.docx needed more memory than the limit \(PARSE_MAX_HEAP_MB=96\) and was stopped\.$/],
    ['100,000 nested <div>s with no nesting cap', 'deep.html', () => nestedDivs(100_000), /^Parsing deep\.html took longer than the limit \(PARSE_TIMEOUT_MS=10000\) and was stopped\.$/],
    // 2 KB: the spine names one 500,000-character chapter 50 times
    ['an EPUB whose spine repeats one big chapter', 'spine.epub', () => epubRepeatingChapter(500_000, 50), /^spine\.epub: The EPUB file has more text than the limit of 1000000 characters \(PARSE_MAX_TEXT_CHARS=1000000\)\.$/],
    // 60 KB: a 20 MB slide
    ['a PPTX with a huge slide', 'slide.pptx', () => pptxHugeSlide(20 * MB), /^slide\.pptx: The PPTX file's entry ppt\/slides\/slide1\.xml would inflate to \d+ bytes, more than the limit \(PARSE_MAX_UNCOMPRESSED_BYTES=8388608\)\.$/],
  ];
  for (const [label, name, make, error] of cases) {
    it(`${label}: the document ends in error naming the setting`, async () => {
      const st = await index(s.kb, ds, name, make());
      expect(st.indexing_status).toBe('error');
      expect(String(st.error)).toMatch(error);
    }, 200_000);
  }

  it('a document-extractor node given a bomb fails, naming the node, the file and the setting; the next run succeeds', async () => {
    const upload = async (name: string, bytes: Buffer) => {
      const fd = new FormData();
      fd.append('user', 'u1');
      fd.append('file', new Blob([new Uint8Array(bytes)]), name);
      const r = await fetch(`${s.server.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${s.appKey}` }, body: fd });
      expect(r.status).toBe(201);
      return ((await r.json()) as { id: string }).id;
    };
    /** The workflow's end and the extractor node's end, from the run's stream. */
    const run = async (id: string) => {
      const r = await fetch(`${s.server.api}/workflows/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.appKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: { doc: { type: 'document', transfer_method: 'local_file', upload_file_id: id } }, user: 'u1', response_mode: 'streaming' }),
      });
      expect(r.status).toBe(200);
      const events = dataFrames(parseSse(await r.text())) as { event: string; data: Record<string, unknown> }[];
      const node = events.find((e) => e.event === 'node_finished' && e.data.node_id === 'ex')!.data;
      const data = events.find((e) => e.event === 'workflow_finished')!.data as { status: string; error: string | null; outputs: Record<string, unknown> };
      return { ...data, node };
    };
    const bad = await run(await upload('shared.xlsx', xlsxSharedStringBomb(MB, 40, 100)));
    expect(bad.status).toBe('failed');
    expect(bad.error).toBe('Failed to extract text from start.doc: shared.xlsx: The XLSX file has more text than the limit of 1000000 characters (PARSE_MAX_TEXT_CHARS=1000000).');
    expect(bad.node).toMatchObject({ node_id: 'ex', title: 'Read the file', node_type: 'document-extractor', status: 'failed', error: bad.error });
    const slow = await run(await upload('deep.html', nestedDivs(100_000)));
    expect(slow.status).toBe('failed');
    expect(slow.error).toBe('Failed to extract text from start.doc: Parsing deep.html took longer than the limit (PARSE_TIMEOUT_MS=10000) and was stopped.');
    expect(slow.node).toMatchObject({ node_id: 'ex', title: 'Read the file', status: 'failed' });
    const good = await run(await upload('fine.html', Buffer.from('<p>still reads files</p>')));
    expect(good).toMatchObject({ status: 'succeeded', outputs: { text: 'still reads files' } });
  }, 200_000);
});

describe.skipIf(testDialect() === 'postgres')('a process that dies while parsing', () => {
  it('leaves a mark; the retried job ends the document in error naming the file instead of parsing it again', async () => {
    // The parse must outlive the kill: deep HTML with its nesting cap out of the way takes the DOM
    // parser minutes, and the time limit is longer still.
    const env = { QUEUE_POLL_MS: '50', QUEUE_LEASE_MS: '1000', PARSE_MAX_HTML_DEPTH: '1000000', PARSE_TIMEOUT_MS: '600000' };
    const prep = await startServer();
    const key = await prep.datasetKey();
    await prep.stop();
    let server = await spawnServer(prep, env);
    try {
      let kb = kbClient({ api: server.api } as TestServer, key);
      const ds = await kb.dataset('crash');
      const c = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'deep.html', bytes: nestedDivs(100_000) }, { indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
      expect(c.status).toBe(200);
      // 1. the process dies (as an out-of-memory would end it) while the document is being parsed
      await kb.waitStatus(ds, c.body.batch as string, 'parsing', 60_000);
      await new Promise((r) => setTimeout(r, 1000));
      server.child.kill('SIGKILL');
      await server.exit;
      // 2. the next process takes the job over once its lease expires, finds the mark and does not parse
      server = await spawnServer(prep, env);
      kb = kbClient({ api: server.api } as TestServer, key);
      const st = await kb.settle(ds, c.body.batch as string, 60_000);
      expect(st.indexing_status).toBe('error');
      expect(st.error).toBe('Parsing deep.html did not finish: the process parsing it stopped (likely out of memory), so it is not parsed again.');
      expect(server.alive()).toBe(true);
    } finally {
      await server.close();
      await prep.close();
    }
  }, 180_000);
});
