import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAiChatApp } from '../helpers/apps.js';
import type { App } from '../../src/apps/app-service.js';
import { newId } from '../../src/infra/ids.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * The annotation services the console uses, on the real server (SQLite, and PostgreSQL when
 * TEST_DATABASE_URL is set): "improve this answer" from a message made through the Service API,
 * hit history, the reply status with its job and embedding progress, CSV import and export.
 */

const chatApp = openAiChatApp;

let fake: FakeOpenAI;
let s: TestServer;
let key: string;
let app: App;
let other: App;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({
    env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, EMBEDDINGS_BASE_URL: fake.baseUrl, ANNOTATION_IMPORT_MAX_RECORDS: '4', ANNOTATION_IMPORT_FILE_SIZE_LIMIT: '1' },
  });
  const a = await s.importApp(chatApp('Helper'));
  key = a.apiKey;
  app = (await s.runtime.apps.find(a.appId))!;
  other = (await s.runtime.apps.find((await s.importApp(chatApp('Other'))).appId))!;
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

async function chat(query: string): Promise<{ answer: string; messageId: string; conversationId: string; metadata: Record<string, unknown> }> {
  const r = await fetch(`${s.api}/chat-messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, inputs: {}, user: 'u1', response_mode: 'blocking' }),
  });
  expect(r.status).toBe(200);
  const b = await r.json();
  return { answer: b.answer, messageId: b.message_id, conversationId: b.conversation_id, metadata: b.metadata };
}

async function until<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const errorOf = async (p: Promise<unknown>) => p.then(() => undefined, (e: { code?: string; message?: string; status?: number }) => e);

describe('improve this answer', () => {
  it('makes an annotation from a message (question = its query), edits it on a second correction, and the next identical question is answered from it', async () => {
    const first = await chat('How long is the warranty?');
    expect(first.answer).toContain('echo:');
    const account = newId();

    const made = await s.runtime.annotations.createFromMessage(app, { messageId: first.messageId, answer: 'Two years.' }, account);
    expect(made).toMatchObject({ question: 'How long is the warranty?', answer: 'Two years.', hitCount: 0, messageId: first.messageId });
    // a second correction of the same message edits that annotation
    const again = await s.runtime.annotations.createFromMessage(app, { messageId: first.messageId, answer: 'Two years, parts and labour.' }, account);
    expect(again.id).toBe(made.id);
    expect(await s.runtime.annotations.ofMessage(app, first.messageId)).toMatchObject({ id: made.id, answer: 'Two years, parts and labour.' });
    expect((await s.runtime.annotations.list(app, { page: 1, limit: 10, keyword: 'warranty' })).total).toBe(1);
    const row = await s.runtime.store.db.selectFrom('app_annotations').select(['account_id', 'message_id', 'conversation_id']).where('id', '=', made.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ account_id: account, message_id: first.messageId, conversation_id: first.conversationId });

    // another app's message, and an id that is no message, are not found
    expect(await errorOf(s.runtime.annotations.createFromMessage(other, { messageId: first.messageId, answer: 'x' }, account))).toMatchObject({ code: 'not_found', status: 404 });
    expect(await errorOf(s.runtime.annotations.createFromMessage(app, { messageId: newId(), answer: 'x' }, account))).toMatchObject({ status: 404 });
    expect(await errorOf(s.runtime.annotations.createFromMessage(app, { messageId: 'not-an-id', answer: 'x' }, account))).toMatchObject({ status: 404 });
    expect(await errorOf(s.runtime.annotations.createFromMessage(app, { messageId: first.messageId, answer: '  ' }, account))).toMatchObject({ code: 'invalid_param', message: expect.stringContaining('answer') });

    // reply off: status says so, nothing embedded
    let status = await s.runtime.annotations.replyStatus(app);
    expect(status).toMatchObject({ enabled: false, job: null, embedded: 0, total: 1 });
    expect(s.runtime.annotations.embeddingModels().map((m) => m.model)).toContain('universal-sentence-encoder-lite');

    // reply on: the job's progress, then the identical question answered from the annotation
    const job = await s.runtime.annotations.startReplyJob(app, 'enable', { scoreThreshold: 0.95, provider: 'openai', model: 'text-embedding-3-small' });
    status = await until(async () => {
      const st = await s.runtime.annotations.replyStatus(app);
      return st.job?.status === 'completed' ? st : undefined;
    });
    expect(status).toMatchObject({ enabled: true, scoreThreshold: 0.95, model: 'text-embedding-3-small', job: { id: job.jobId, action: 'enable', status: 'completed', errorMsg: '' }, embedded: 1, total: 1 });

    const next = await chat('How long is the warranty?');
    expect(next.answer).toBe('Two years, parts and labour.');
    expect(next.metadata.annotation_reply).toMatchObject({ id: made.id });

    // the hit is on record: which message, the query, the score, when
    const hits = await s.runtime.annotations.hitHistories(app, made.id, { page: 1, limit: 10 });
    expect(hits.total).toBe(1);
    expect(hits.items[0]).toMatchObject({ messageId: next.messageId, question: 'How long is the warranty?', source: 'api', annotationContent: 'Two years, parts and labour.' });
    expect(hits.items[0]!.score).toBeGreaterThanOrEqual(0.95);
    expect((await s.runtime.annotations.get(app, made.id)).hitCount).toBe(1);
    expect(await errorOf(s.runtime.annotations.hitHistories(other, made.id, { page: 1, limit: 10 }))).toMatchObject({ status: 404 });

    // an edit after enabling re-embeds: progress drops, then the sync job catches up
    await s.runtime.annotations.create(app, { question: 'Do you ship abroad?', answer: 'Yes.' }, account);
    status = await until(async () => {
      const st = await s.runtime.annotations.replyStatus(app);
      return st.embedded === 2 ? st : undefined;
    });
    expect(status).toMatchObject({ enabled: true, embedded: 2, total: 2 });
  });

  it('corrections of one message made at once leave one annotation', async () => {
    const m = await chat('Is there a store in Lyon?');
    const made = await Promise.all(['A', 'B', 'C', 'D'].map((answer) => s.runtime.annotations.createFromMessage(app, { messageId: m.messageId, answer }, null)));
    expect(new Set(made.map((a) => a.id)).size).toBe(1);
    const rows = await s.runtime.store.db.selectFrom('app_annotations').select('content').where('message_id', '=', m.messageId).execute();
    expect(rows).toHaveLength(1);
    expect(['A', 'B', 'C', 'D']).toContain(rows[0]!.content);
  });
});

describe('CSV import and export', () => {
  const csv = (text: string) => Buffer.from(text, 'utf8');

  it('imports Dify-format CSV (header skipped, quotes, commas, new lines, a byte-order mark) and exports what imports back the same', async () => {
    const target = (await s.runtime.apps.find((await s.importApp(chatApp('CSV target'))).appId))!;
    const file = '\ufeffquestion,answer\r\n"Price, in euros?","12 €, VAT ""included"""\r\nMulti,"line one\nline two"\n\n=1+1,@sum\n';
    expect(await s.runtime.annotations.importCsv(target, csv(file), null)).toEqual({ imported: 3 });
    const listed = await s.runtime.annotations.list(target, { page: 1, limit: 10, keyword: '' });
    // newest first: the file's last row first
    expect(listed.items.map((a) => [a.question, a.answer])).toEqual([
      ['=1+1', '@sum'],
      ['Multi', 'line one\nline two'],
      ['Price, in euros?', '12 €, VAT "included"'],
    ]);

    const out = await s.runtime.annotations.exportCsv(target);
    expect(out.count).toBe(3);
    expect(out.csv.startsWith('\ufeffquestion,answer\r\n')).toBe(true);
    // a cell a spreadsheet would run as a formula is written with a leading quote
    expect(out.csv).toContain("'=1+1,'@sum");
    const copy = (await s.runtime.apps.find((await s.importApp(chatApp('CSV copy'))).appId))!;
    expect(await s.runtime.annotations.importCsv(copy, csv(out.csv), null)).toEqual({ imported: 3 });
    const copied = await s.runtime.annotations.list(copy, { page: 1, limit: 10, keyword: '' });
    // imported back in file order (newest first on export), so the copy lists oldest first
    expect(copied.items.map((a) => [a.question, a.answer]).reverse()).toEqual(listed.items.map((a) => [a.question, a.answer]));
  });

  it('refuses a bad file naming the row, or the limit and its setting, and writes nothing', async () => {
    const target = (await s.runtime.apps.find((await s.importApp(chatApp('CSV refusals'))).appId))!;
    const refused = async (bytes: Buffer) => {
      const e = await errorOf(s.runtime.annotations.importCsv(target, bytes, null));
      expect(e).toMatchObject({ code: 'invalid_param', status: 400 });
      return e!.message;
    };
    expect(await refused(csv('question,answer\nq1,a1\nq2,\n'))).toBe('file row 3: the answer (second column) is empty');
    expect(await refused(csv('question,answer\nq1,a1\n ,a2\n'))).toBe('file row 3: the question (first column) is empty');
    expect(await refused(csv('question,answer\nq1,a1\n"q2,a2\n'))).toContain('row 3: a quoted cell opened on line 3 is never closed');
    expect(await refused(csv('question,answer\na,1\nb,2\nc,3\nd,4\ne,5\n'))).toBe('file row 6: a file may hold at most 4 annotations (ANNOTATION_IMPORT_MAX_RECORDS)');
    expect(await refused(csv('question,answer\n'))).toBe('file: The CSV file is empty.');
    expect(await refused(Buffer.from([0x71, 0x2c, 0x61, 0x0a, 0xff, 0xfe, 0x2c, 0x61]))).toBe('file must be UTF-8 text (a CSV file)');
    expect(await refused(csv(`question,answer\n${'x'.repeat(1001)},a\n`))).toContain('file row 2: the question must be at most 1000 characters (ANNOTATION_QUESTION_MAX_CHARS)');
    expect(await refused(Buffer.alloc(1024 * 1024 + 1, 0x61))).toBe('file must be at most 1 MB (ANNOTATION_IMPORT_FILE_SIZE_LIMIT)');
    expect((await s.runtime.annotations.list(target, { page: 1, limit: 10, keyword: '' })).total).toBe(0);
  });

  it('exports at most ANNOTATION_IMPORT_MAX_RECORDS, newest first, and says how many there are', async () => {
    const target = (await s.runtime.apps.find((await s.importApp(chatApp('CSV many'))).appId))!;
    for (const q of ['q1', 'q2', 'q3', 'q4', 'q5']) await s.runtime.annotations.create(target, { question: q, answer: 'a' });
    const out = await s.runtime.annotations.exportCsv(target);
    expect(out).toMatchObject({ count: 4, total: 5 });
    expect(out.csv).toBe('\ufeffquestion,answer\r\nq5,a\r\nq4,a\r\nq3,a\r\nq2,a\r\n');
  });
});
