import type { App } from '../src/apps/app-service.js';
import { AnnotationStore } from '../src/annotations/annotation-store.js';
import { formatAnnotationCsv } from '../src/annotations/annotation-csv.js';
import { newId } from '../src/infra/ids.js';
import { benchServer, fmt, median } from './lib.js';

const ROWS = 10_000;
const HITS = 5_000;
const REPEAT = 5;
const DOCS = 100;

const app = (name: string) => `app:
  mode: chat
  name: ${name}
kind: app
version: 0.3.1
model_config:
  model:
    provider: mock
    name: mock
    mode: chat
  pre_prompt: 'Answer briefly.'
`;

async function timed(n: number, f: (i: number) => Promise<void>): Promise<number> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f(i);
    out.push(performance.now() - t);
  }
  return median(out);
}

/**
 * The console's annotation work on the real store: a CSV import of ANNOTATION_IMPORT_MAX_RECORDS
 * (10,000) rows (read, checked, written in one transaction) beside the store's plain batched
 * insert of the same rows; the export of those 10,000 beside a plain select of them; a page of
 * the hit history of an annotation with 5,000 hits beside a plain indexed count of its rows; a
 * page of documents with their indexing runs (the knowledge page's poll) beside the plain page.
 */
export async function run(): Promise<void> {
  const s = await benchServer();
  const store = new AnnotationStore(s.runtime.store.db);
  const csv = Buffer.from(
    formatAnnotationCsv(Array.from({ length: ROWS }, (_, i) => ({ question: `How do I reset device ${i}, model "X${i % 97}"?`, answer: `Hold the button for ${i % 30} seconds,\nthen wait.` }))),
  );
  const apps: App[] = [];
  for (let i = 0; i < REPEAT * 2; i++) apps.push(await s.runtime.apps.importDsl(app(`bench ${i}`)));

  const importMs = await timed(REPEAT, async (i) => {
    await s.runtime.annotations.importCsv(apps[i]!, csv, null);
  });
  const rows = Array.from({ length: ROWS }, (_, i) => ({ question: `q${i}`, answer: `a${i}` }));
  const insertMs = await timed(REPEAT, async (i) => {
    const now = Date.now();
    await store.insertMany(rows.map((r) => ({ id: newId(), appId: apps[REPEAT + i]!.id, question: r.question, answer: r.answer, now })));
  });
  process.stdout.write(`annotation CSV import, ${ROWS} rows (${fmt(csv.length / 1024 / 1024)} MB): median ${fmt(importMs, 1)} ms; baseline plain batched insert of ${ROWS} rows: ${fmt(insertMs, 1)} ms\n`);

  const exportMs = await timed(REPEAT, async () => {
    await s.runtime.annotations.exportCsv(apps[0]!);
  });
  const selectMs = await timed(REPEAT, async () => {
    await store.newest(apps[0]!.id, ROWS);
  });
  process.stdout.write(`annotation CSV export, ${ROWS} rows: median ${fmt(exportMs, 1)} ms; baseline plain select of the rows: ${fmt(selectMs, 1)} ms\n`);

  const target = (await store.newest(apps[0]!.id, 1))[0]!;
  for (let i = 0; i < HITS; i++) {
    await store.recordHit({ id: newId(), appId: apps[0]!.id, annotationId: target.id, messageId: newId(), endUserId: newId(), query: `q${i}`, score: 0.9, annotationQuestion: target.question, annotationContent: target.answer, now: 1_000_000 + i });
  }
  const pageMs = await timed(50, async (i) => {
    await s.runtime.annotations.hitHistories(apps[0]!, target.id, { page: 1 + (i % 10), limit: 20 });
  });
  const countMs = await timed(50, async () => {
    await store.hitHistoryCount(target.id);
  });
  process.stdout.write(`hit history page (20 of ${HITS} hits): median ${fmt(pageMs, 2)} ms; baseline plain indexed count of the rows: ${fmt(countMs, 2)} ms\n`);

  // the knowledge page's poll: a page of documents with their runs, beside the Service API's plain page
  const ws = await s.runtime.apps.workspaceId();
  const ds = await s.runtime.datasets.create(ws, { name: 'bench docs', indexingTechnique: 'economy', createdBy: 'bench' });
  for (let i = 0; i < DOCS; i++) {
    const file = await s.runtime.documents.storeText(ws, `doc ${i}`, `Document ${i}.\n\nA second paragraph of document ${i}.`, 'bench');
    await s.runtime.documents.create(ds, file, { processRule: { mode: 'automatic' } }, 'bench');
  }
  for (;;) {
    const { rows } = await s.runtime.documents.listWithProgress(ds.id, 1, DOCS);
    if (rows.every((r) => r.doc.indexing_status === 'completed' || r.doc.indexing_status === 'error')) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const withProgressMs = await timed(50, async (i) => {
    await s.runtime.documents.listWithProgress(ds.id, 1 + (i % 5), 20);
  });
  const plainMs = await timed(50, async (i) => {
    await s.runtime.documents.list(ds.id, 1 + (i % 5), 20);
  });
  process.stdout.write(`documents with progress (page of 20 of ${DOCS}): median ${fmt(withProgressMs, 2)} ms; baseline the plain documents page: ${fmt(plainMs, 2)} ms\n`);
  await s.close();
}
