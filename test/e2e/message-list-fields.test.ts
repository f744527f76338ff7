import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { imageChatApp } from '../helpers/apps.js';
import { validateResponse } from '../helpers/openapi.js';

/** `GET /messages`: each message's end-user `feedback` and its `message_files`, as Dify lists them (issue 41). */

let s: TestServer;
let key: string;

beforeAll(async () => {
  // a public base for the signed URLs (the spec's `url` format refuses loopback hosts)
  s = await startServer({ env: { FILES_URL: 'https://files.example.com' } });
  // the image block allows remote URLs too: the list below sends one (the app's file rules apply to `files`)
  ({ apiKey: key } = await s.importApp(imageChatApp('Lister').replace('transfer_methods: [local_file]', 'transfer_methods: [local_file, remote_url]')));
});
afterAll(async () => s?.close());

const auth = (k = key) => ({ authorization: `Bearer ${k}` });
const json = (k = key) => ({ ...auth(k), 'content-type': 'application/json' });

async function upload(bytes: Buffer, name: string, type: string, k = key): Promise<{ id: string; size: number }> {
  const fd = new FormData();
  fd.append('file', new Blob([new Uint8Array(bytes)], { type }), name);
  fd.append('user', 'lee');
  const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(k), body: fd });
  expect(r.status).toBe(201);
  return (await r.json()) as { id: string; size: number };
}

async function chat(body: Record<string, unknown>): Promise<{ message_id: string; conversation_id: string }> {
  const r = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: json(), body: JSON.stringify({ inputs: {}, user: 'lee', response_mode: 'blocking', ...body }) });
  expect(r.status).toBe(200);
  return (await r.json()) as { message_id: string; conversation_id: string };
}

describe('GET /messages feedback and message_files', () => {
  it("lists the end user's rating and the files sent with each message, with working preview URLs", async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const image = await upload(png, 'dot.png', 'image/png');
    const doc = await upload(Buffer.from('notes about things'), 'notes.txt', 'text/plain');

    const first = await chat({
      query: 'look at these',
      files: [
        { type: 'image', transfer_method: 'local_file', upload_file_id: image.id },
        { type: 'document', transfer_method: 'local_file', upload_file_id: doc.id },
        { type: 'image', transfer_method: 'remote_url', url: 'https://example.com/pics/cat%20photo.png' },
      ],
    });
    const second = await chat({ query: 'and now?', conversation_id: first.conversation_id });

    const fb = await fetch(`${s.api}/messages/${first.message_id}/feedbacks`, { method: 'POST', headers: json(), body: JSON.stringify({ rating: 'dislike', user: 'lee' }) });
    expect(fb.status).toBe(200);

    const r = await fetch(`${s.api}/messages?user=lee&conversation_id=${first.conversation_id}`, { headers: auth() });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { data: Record<string, unknown>[] };
    validateResponse('/messages', 'get', 200, body);
    const [m1, m2] = body.data;
    expect(m1!.id).toBe(first.message_id);
    expect(m1!.feedback).toEqual({ rating: 'dislike' });
    expect(m2!.id).toBe(second.message_id);
    expect(m2!.feedback).toBeNull();
    expect(m2!.message_files).toEqual([]);

    const files = m1!.message_files as Record<string, unknown>[];
    expect(files).toHaveLength(3);
    expect(files[0]).toMatchObject({ id: image.id, filename: 'dot.png', type: 'image', mime_type: 'image/png', size: image.size, transfer_method: 'local_file', belongs_to: 'user', upload_file_id: image.id });
    expect(files[1]).toMatchObject({ id: doc.id, filename: 'notes.txt', type: 'document', mime_type: 'text/plain', size: doc.size, transfer_method: 'local_file', belongs_to: 'user', upload_file_id: doc.id });
    expect(files[2]).toMatchObject({ filename: 'cat photo.png', type: 'image', url: 'https://example.com/pics/cat%20photo.png', transfer_method: 'remote_url', belongs_to: 'user', upload_file_id: null });
    expect(String(files[2]!.id)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

    // the preview URLs are signed and serve the bytes without a key
    expect(String(files[1]!.url)).toMatch(new RegExp(`^https://files\\.example\\.com/files/${doc.id}/file-preview\\?timestamp=`));
    const preview = await fetch(String(files[1]!.url).replace('https://files.example.com', s.url));
    expect(preview.status).toBe(200);
    expect(await preview.text()).toBe('notes about things');

    // the listing is stable: the remote file's id does not change between reads
    const again = (await (await fetch(`${s.api}/messages?user=lee&conversation_id=${first.conversation_id}`, { headers: auth() })).json()) as { data: { message_files: { id: string }[] }[] };
    expect(again.data[0]!.message_files[2]!.id).toBe(files[2]!.id);

    // revoking the rating lists null again
    await fetch(`${s.api}/messages/${first.message_id}/feedbacks`, { method: 'POST', headers: json(), body: JSON.stringify({ rating: null, user: 'lee' }) });
    const after = (await (await fetch(`${s.api}/messages?user=lee&conversation_id=${first.conversation_id}`, { headers: auth() })).json()) as { data: { feedback: unknown }[] };
    expect(after.data[0]!.feedback).toBeNull();
  });
});
