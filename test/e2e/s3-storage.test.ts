import { existsSync } from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kbClient } from '../helpers/kb-client.js';
import { S3_TEST_BUCKET, S3_TEST_KEY, startS3, type S3TestServer } from '../helpers/s3-server.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { imageChatApp } from '../helpers/apps.js';

/** A server with STORAGE_TYPE=s3 keeps uploads in the bucket and reads them back from it. */

const chatApp = imageChatApp('S3 viewer');

let s3: S3TestServer;
let s: TestServer;
let bucket: S3Client;

beforeAll(async () => {
  s3 = await startS3();
  s = await startServer({ env: { ...s3.env(), QUEUE_POLL_MS: '50', UPLOAD_FILE_SIZE_LIMIT: '1' } });
  bucket = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_TEST_KEY, secretAccessKey: S3_TEST_KEY } });
});
afterAll(async () => {
  bucket?.destroy();
  await s?.close();
  await s3?.close();
});

/** The object the upload's row points at, read straight from the bucket. */
async function objectOf(fileId: string): Promise<Buffer> {
  const file = await s.runtime.uploads.find(fileId);
  const out = await bucket.send(new GetObjectCommand({ Bucket: S3_TEST_BUCKET, Key: file!.blobKey }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

describe('STORAGE_TYPE=s3', () => {
  it('an upload lands in the bucket (not on disk) and GET /files/{id}/preview reads it back', async () => {
    const { apiKey } = await s.importApp(chatApp);
    const auth = { authorization: `Bearer ${apiKey}` };
    const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('bytes kept in S3')]);
    const fd = new FormData();
    fd.append('file', new Blob([new Uint8Array(PNG)], { type: 'image/png' }), 'pic.png');
    fd.append('user', 'ann');
    const up = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth, body: fd });
    expect(up.status).toBe(201);
    const { id, size } = (await up.json()) as { id: string; size: number };
    expect(size).toBe(PNG.length);
    expect((await objectOf(id)).equals(PNG)).toBe(true);
    expect(existsSync(path.join(s.dataDir, 'files'))).toBe(false);
    const chat = await fetch(`${s.api}/chat-messages`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: {}, query: 'look', user: 'ann', response_mode: 'blocking', files: [{ type: 'image', transfer_method: 'local_file', upload_file_id: id }] }),
    });
    expect(chat.status).toBe(200);
    const preview = await fetch(`${s.api}/files/${id}/preview`, { headers: auth });
    expect(preview.status).toBe(200);
    expect(preview.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await preview.arrayBuffer()).equals(PNG)).toBe(true);
  });

  it('an upload over the size limit is refused (413) and leaves no object in the bucket', async () => {
    const { apiKey } = await s.importApp(chatApp);
    const objects = async () => (await bucket.send(new ListObjectsV2Command({ Bucket: S3_TEST_BUCKET }))).KeyCount ?? 0;
    const before = await objects();
    const fd = new FormData();
    fd.append('file', new Blob([new Uint8Array(Buffer.alloc(1024 * 1024 + 10, 120))], { type: 'text/plain' }), 'big.txt');
    fd.append('user', 'ann');
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: fd });
    expect(r.status).toBe(413);
    expect(((await r.json()) as { code: string }).code).toBe('file_too_large');
    expect(await objects()).toBe(before);
  });

  it('a document created by file is indexed from the bucket and downloads from it', async () => {
    const kb = kbClient(s, await s.datasetKey());
    const ds = await kb.dataset('S3 handbook');
    const NOTES = Buffer.from('# Notes\n\nThe okapi enclosure opens at nine.\n');
    const r = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'notes.md', bytes: NOTES, mime: 'text/markdown' }, { process_rule: { mode: 'automatic' } });
    expect(r.status).toBe(200);
    expect(await kb.settle(ds, r.body.batch)).toMatchObject({ indexing_status: 'completed' });
    const doc = r.body.document.id as string;
    const fileId = (await s.runtime.documents.find(ds, doc))?.upload_file_id;
    expect(fileId).toBeTruthy();
    expect((await objectOf(fileId!)).equals(NOTES)).toBe(true);
    const hits = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'okapi' });
    expect(hits.status).toBe(200);
    expect(hits.body.records.map((h: { segment: { content: string } }) => h.segment.content).join(' ')).toContain('okapi enclosure');
    const link = await kb.call('GET', `/datasets/${ds}/documents/${doc}/download`);
    expect(link.status).toBe(200);
    const file = await fetch(link.body.url);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(NOTES)).toBe(true);
  });
});
