import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { validateResponse } from '../helpers/openapi.js';
import { readZip } from '../helpers/zip-reader.js';

/** Document downloads: a signed URL of the original file, and several files as one ZIP. */

const SECRET = 'test-secret-key';
let s: TestServer;
let kb: ReturnType<typeof kbClient>;
let ds: string;
const docs: Record<string, string> = {};
const NOTES = Buffer.from('# Notes\n\nRemote work is allowed on Fridays.\n');
const OTHER = Buffer.from('# Other notes\n\nThe office closes at six.\n');

async function fileDoc(dataset: string, name: string, bytes: Buffer): Promise<string> {
  const r = await kb.form('POST', `/datasets/${dataset}/document/create-by-file`, { name, bytes, mime: 'text/markdown' }, { process_rule: { mode: 'automatic' } });
  expect(r.status).toBe(200);
  expect(await kb.settle(dataset, r.body.batch)).toMatchObject({ indexing_status: 'completed' });
  return r.body.document.id as string;
}

beforeAll(async () => {
  s = await startServer({ env: { QUEUE_POLL_MS: '50', SECRET_KEY: SECRET, FILES_ACCESS_TIMEOUT: '60', KNOWLEDGE_DOWNLOAD_ZIP_MAX_DOCUMENTS: '4' } });
  kb = kbClient(s, await s.datasetKey());
  ds = await kb.dataset('Handbook é');
  docs.notes = await fileDoc(ds, 'notes.md', NOTES);
  docs.notesAgain = await fileDoc(ds, 'notes.md', OTHER);
  const t = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Typed', text: 'Typed in by hand.', process_rule: { mode: 'automatic' } });
  expect(t.status).toBe(200);
  docs.typed = t.body.document.id;
  await kb.settle(ds, t.body.batch);
});
afterAll(async () => s?.close());

const sign = (fileId: string, timestamp: number, nonce: string) =>
  createHmac('sha256', SECRET).update(`file-preview|${fileId}|${timestamp}|${nonce}`).digest('base64').replaceAll('+', '-').replaceAll('/', '_');

describe('GET …/documents/{document_id}/download', () => {
  it('answers a signed URL that serves the original file, without a key, as an attachment', async () => {
    const r = await kb.call('GET', `/datasets/${ds}/documents/${docs.notes}/download`);
    expect(r.status).toBe(200);
    validateResponse('/datasets/{dataset_id}/documents/{document_id}/download', 'get', 200, r.body);
    expect(Object.keys(r.body)).toEqual(['url']);
    const url = new URL(r.body.url);
    expect(`${url.origin}`).toBe(s.url);
    expect(url.pathname).toMatch(/^\/files\/[0-9a-f-]{36}\/file-preview$/);
    expect([...url.searchParams.keys()].sort()).toEqual(['as_attachment', 'nonce', 'sign', 'timestamp']);
    const file = await fetch(url);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer())).toEqual(NOTES);
    expect(file.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''notes.md");
    expect(file.headers.get('x-content-type-options')).toBe('nosniff');
    // The signature is Dify's: HMAC-SHA256 of "file-preview|id|timestamp|nonce" with the secret key.
    const fileId = url.pathname.split('/')[2]!;
    expect(url.searchParams.get('sign')).toBe(sign(fileId, Number(url.searchParams.get('timestamp')), url.searchParams.get('nonce')!));
    // Text documents are files too (as Dify stores them).
    const typed = await kb.call('GET', `/datasets/${ds}/documents/${docs.typed}/download`);
    expect(await (await fetch(typed.body.url)).text()).toBe('Typed in by hand.');
  });

  it('a changed, expired or incomplete signature, or an unknown file, is refused', async () => {
    const url = new URL((await kb.call('GET', `/datasets/${ds}/documents/${docs.notes}/download`)).body.url);
    const fileId = url.pathname.split('/')[2]!;
    const notFound = { code: 'not_found', message: 'File not found or signature is invalid', status: 404 };
    const tampered = new URL(url);
    tampered.searchParams.set('nonce', 'other');
    expect(await (await fetch(tampered)).json()).toEqual(notFound);
    const now = Math.floor(Date.now() / 1000);
    const at = (ts: number, id = fileId) => `${s.url}/files/${id}/file-preview?timestamp=${ts}&nonce=n1&sign=${encodeURIComponent(sign(id, ts, 'n1'))}`;
    expect((await fetch(at(now - 10))).status).toBe(200);
    const expired = await fetch(at(now - 61));
    expect(expired.status).toBe(404);
    expect(await expired.json()).toEqual(notFound);
    expect((await fetch(at(now, '00000000-0000-4000-8000-000000000000'))).status).toBe(404);
    const missing = await fetch(`${s.url}/files/${fileId}/file-preview?timestamp=${now}&nonce=n1`);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({ code: 'invalid_param', message: 'sign is required.', status: 400 });
  });

  it('FILES_URL is the base of the signed URLs; an unknown document is Dify’s 404', async () => {
    const other = await startServer({ env: { FILES_URL: 'https://files.example.com/', SECRET_KEY: SECRET } });
    try {
      const k = kbClient(other, await other.datasetKey());
      const d = await k.dataset('Elsewhere');
      const t = await k.call('POST', `/datasets/${d}/document/create-by-text`, { name: 'x', text: 'hello', process_rule: { mode: 'automatic' } });
      const r = await k.call('GET', `/datasets/${d}/documents/${t.body.document.id}/download`);
      expect(r.body.url).toMatch(/^https:\/\/files\.example\.com\/files\/[0-9a-f-]{36}\/file-preview\?timestamp=\d+&nonce=[0-9a-f]{32}&sign=[\w%-]+&as_attachment=true$/);
    } finally {
      await other.close();
    }
    const r = await kb.call('GET', `/datasets/${ds}/documents/00000000-0000-4000-8000-000000000000/download`);
    expect(r).toEqual({ status: 404, body: { code: 'not_found', message: 'Document not found.', status: 404 } });
  });
});

describe('POST …/documents/download-zip', () => {
  it('streams one ZIP of the documents’ files, in the order asked, same names made unique', async () => {
    const r = await fetch(`${s.api}/datasets/${ds}/documents/download-zip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await kbKey()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ document_ids: [docs.notes, docs.notesAgain, docs.typed, docs.notes] }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/zip');
    expect(r.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''Handbook%20%C3%A9.zip");
    const entries = readZip(Buffer.from(await r.arrayBuffer()));
    expect([...entries.keys()]).toEqual(['notes.md', 'notes (1).md', 'Typed.txt']);
    expect(entries.get('notes.md')).toEqual(NOTES);
    expect(entries.get('notes (1).md')).toEqual(OTHER);
    expect(entries.get('Typed.txt')!.toString()).toBe('Typed in by hand.');
  });

  it('checks every document first: empty or too long lists name the field and the limit; an unknown or foreign document is 404', async () => {
    const zip = (body: unknown) => kb.call('POST', `/datasets/${ds}/documents/download-zip`, body);
    expect(await zip({ document_ids: [] })).toEqual({ status: 400, body: { code: 'invalid_param', message: 'document_ids must be a non-empty list of document ids.', status: 400 } });
    expect((await zip({})).body.message).toBe('document_ids must be a non-empty list of document ids.');
    expect((await zip({ document_ids: [docs.notes, 5] })).body.message).toBe('document_ids[1] must be a document id.');
    const tooMany = await zip({ document_ids: ['a', 'b', 'c', 'd', 'e'] });
    expect(tooMany.body).toEqual({ code: 'invalid_param', message: 'document_ids may list at most 4 documents (KNOWLEDGE_DOWNLOAD_ZIP_MAX_DOCUMENTS).', status: 400 });
    const other = await kb.dataset('Other');
    const t = await kb.call('POST', `/datasets/${other}/document/create-by-text`, { name: 'y', text: 'elsewhere', process_rule: { mode: 'automatic' } });
    expect(await zip({ document_ids: [docs.notes, t.body.document.id] })).toEqual({ status: 404, body: { code: 'not_found', message: 'Document not found.', status: 404 } });
  });

  it('a stored file gone missing ends the archive early; the server carries on', async () => {
    const gone = await fileDoc(ds, 'gone.md', Buffer.from('soon gone'));
    const doc = await s.runtime.documents.get(ds, gone);
    const file = (await s.runtime.documents.files([doc.upload_file_id])).get(doc.upload_file_id)!;
    await s.runtime.blobs.delete(file.blobKey);
    const r = await fetch(`${s.api}/datasets/${ds}/documents/download-zip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await kbKey()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ document_ids: [docs.notes, gone] }),
    });
    expect(r.status).toBe(200);
    await expect(r.arrayBuffer()).rejects.toThrow();
    expect((await kb.call('GET', `/datasets/${ds}/documents/${docs.notes}/download`)).status).toBe(200);
  });

  it('a multipart body on a route that takes no body is ignored, as Dify; on a JSON route it is a 415', async () => {
    const form = new FormData();
    form.set('x', '1');
    const enable = await fetch(`${s.api}/datasets/${ds}/metadata/built-in/enable`, { method: 'POST', headers: { authorization: `Bearer ${await kbKey()}` }, body: form });
    expect(enable.status).toBe(200);
    expect(await enable.json()).toEqual({ result: 'success' });
    const zip = await fetch(`${s.api}/datasets/${ds}/documents/download-zip`, { method: 'POST', headers: { authorization: `Bearer ${await kbKey()}` }, body: form });
    expect(zip.status).toBe(415);
  });
});

let key: string | undefined;
async function kbKey(): Promise<string> {
  key ??= await s.datasetKey();
  return key;
}
