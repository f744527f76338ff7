import { createDeflateRaw } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { benchServer, fmt, median } from './lib.js';

const FILES = 8;
const FILE_BYTES = 256 * 1024;
const RUNS = 10;

/** Deterministic text that compresses about as well as prose (words from a small vocabulary). */
function text(bytes: number, seed: number): string {
  let x = seed;
  const words = ['remote', 'work', 'policy', 'office', 'friday', 'team', 'alpha', 'beta', 'budget', 'review', 'notes', 'plan'];
  const out: string[] = [];
  let size = 0;
  while (size < bytes) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    const w = words[x % words.length]!;
    out.push(w);
    size += w.length + 1;
  }
  return out.join(' ');
}

/**
 * Document downloads: `POST …/documents/download-zip` of 8 × 256 KB files, against reading the same
 * files from the blob store and deflating them in the process (the archive's own work, no HTTP);
 * and a signed download (`GET …/download`, then the URL) against an authenticated
 * `GET …/documents/{id}` round trip.
 */
export async function run(): Promise<void> {
  const s = await benchServer({ QUEUE_POLL_MS: '20' });
  const key = (await s.runtime.keys.create('dataset', await s.runtime.apps.workspaceId(), null)).apiKey;
  const api = `${s.url}/v1`;
  const h = { authorization: `Bearer ${key}` };
  const j = { ...h, 'content-type': 'application/json' };
  const ds = ((await (await fetch(`${api}/datasets`, { method: 'POST', headers: j, body: JSON.stringify({ name: 'Downloads', indexing_technique: 'economy' }) })).json()) as { id: string }).id;
  const ids: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const fd = new FormData();
    fd.append('file', new Blob([text(FILE_BYTES, i + 1)], { type: 'text/plain' }), `file-${i}.txt`);
    fd.append('data', JSON.stringify({ process_rule: { mode: 'automatic' } }));
    const r = (await (await fetch(`${api}/datasets/${ds}/document/create-by-file`, { method: 'POST', headers: h, body: fd })).json()) as { document: { id: string } };
    ids.push(r.document.id);
  }
  const totalMb = (FILES * FILE_BYTES) / (1024 * 1024);
  // Indexing runs in the background: measure once it is over.
  for (;;) {
    const list = (await (await fetch(`${api}/datasets/${ds}/documents?limit=100`, { headers: h })).json()) as { data: { indexing_status: string }[] };
    if (list.data.every((d) => d.indexing_status === 'completed')) break;
    await new Promise((res) => setTimeout(res, 20));
  }

  const zipTimes: number[] = [];
  let zipBytes = 0;
  for (let i = 0; i < RUNS + 2; i++) {
    const t = performance.now();
    const r = await fetch(`${api}/datasets/${ds}/documents/download-zip`, { method: 'POST', headers: j, body: JSON.stringify({ document_ids: ids }) });
    zipBytes = (await r.arrayBuffer()).byteLength;
    if (r.status !== 200) throw new Error(`download-zip: ${r.status}`);
    if (i >= 2) zipTimes.push(performance.now() - t);
  }

  const files = await Promise.all(
    ids.map(async (id) => {
      const doc = await s.runtime.documents.get(ds, id);
      return (await s.runtime.documents.files([doc.upload_file_id])).get(doc.upload_file_id)!;
    }),
  );
  const baseTimes: number[] = [];
  for (let i = 0; i < RUNS + 2; i++) {
    const t = performance.now();
    for (const f of files) {
      const body = await s.runtime.blobs.get(f.blobKey);
      await pipeline(body!, createDeflateRaw(), new Writable({ write: (_c, _e, cb) => cb() }));
    }
    if (i >= 2) baseTimes.push(performance.now() - t);
  }

  const signedTimes: number[] = [];
  const getTimes: number[] = [];
  for (let i = 0; i < 40; i++) {
    let t = performance.now();
    const { url } = (await (await fetch(`${api}/datasets/${ds}/documents/${ids[0]}/download`, { headers: h })).json()) as { url: string };
    await (await fetch(url)).arrayBuffer();
    signedTimes.push(performance.now() - t);
    t = performance.now();
    await (await fetch(`${api}/datasets/${ds}/documents/${ids[0]}`, { headers: h })).json();
    getTimes.push(performance.now() - t);
  }

  const zipMs = median(zipTimes);
  const baseMs = median(baseTimes);
  process.stdout.write(
    [
      `download-zip, ${FILES} × ${FILE_BYTES / 1024} KB (${fmt(totalMb)} MB → ${fmt(zipBytes / 1024 / 1024)} MB)   median ${fmt(zipMs)} ms   ${fmt(totalMb / (zipMs / 1000))} MB/s`,
      `  baseline: read the same files and deflate them in process   median ${fmt(baseMs)} ms   ${fmt(totalMb / (baseMs / 1000))} MB/s   (ZIP over HTTP at ${fmt((100 * baseMs) / zipMs, 0)}% of it)`,
      `signed download of one 256 KB file (GET …/download, then the URL)   p50 ${fmt(median(signedTimes))} ms`,
      `  baseline: authenticated GET …/documents/{id} (JSON)               p50 ${fmt(median(getTimes))} ms`,
    ].join('\n') + '\n',
  );
  await s.close();
}
