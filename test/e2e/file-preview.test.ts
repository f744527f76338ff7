import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Readable } from 'node:stream';
import { ChatClient } from 'dify-client';
import { startServer, type TestServer } from '../helpers/server.js';
import { imageChatApp } from '../helpers/apps.js';

/** `GET /files/{file_id}/preview`: the bytes of an upload a message of the app was sent with. */

let s: TestServer;
let key: string;
let otherKey: string;

beforeAll(async () => {
  s = await startServer();
  ({ apiKey: key } = await s.importApp(imageChatApp('Viewer')));
  ({ apiKey: otherKey } = await s.importApp(imageChatApp('Other viewer')));
});
afterAll(async () => s?.close());

const auth = (k = key) => ({ authorization: `Bearer ${k}` });

async function upload(bytes: Buffer, name: string, type: string, k = key): Promise<{ id: string; size: number }> {
  const fd = new FormData();
  fd.append('file', new Blob([new Uint8Array(bytes)], { type }), name);
  fd.append('user', 'ann');
  const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(k), body: fd });
  expect(r.status).toBe(201);
  return (await r.json()) as { id: string; size: number };
}

/** Sends a chat message with the upload, which makes it reachable through the app (as Dify). */
async function sendWith(fileId: string, k = key): Promise<void> {
  const r = await fetch(`${s.api}/chat-messages`, {
    method: 'POST',
    headers: { ...auth(k), 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: {}, query: 'look', user: 'ann', response_mode: 'blocking', files: [{ type: 'document', transfer_method: 'local_file', upload_file_id: fileId }] }),
  });
  expect(r.status).toBe(200);
}

const preview = (id: string, query = '', k = key) => fetch(`${s.api}/files/${id}/preview${query}`, { headers: auth(k) });

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('not really a picture, but bytes')]);

describe('GET /files/{file_id}/preview', () => {
  it('inline: the raw bytes with the file\'s type, its length, a one-hour public cache and nosniff', async () => {
    const f = await upload(PNG, 'dot.png', 'image/png');
    await sendWith(f.id);
    const r = await preview(f.id, '?user=ann');
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).equals(PNG)).toBe(true);
    expect(r.headers.get('content-type')).toBe('image/png');
    expect(r.headers.get('content-length')).toBe(String(PNG.length));
    expect(r.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('content-disposition')).toBeNull();
    expect(r.headers.get('accept-ranges')).toBeNull();
    // HEAD answers the same headers without the bytes.
    const head = await fetch(`${s.api}/files/${f.id}/preview`, { method: 'HEAD', headers: auth() });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(PNG.length));
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  it('as_attachment=true: a download under the file\'s name (RFC 5987, Python quote), as octet-stream', async () => {
    const name = "café (1) it's.png";
    const f = await upload(PNG, name, 'image/png');
    await sendWith(f.id);
    const r = await preview(f.id, '?as_attachment=true&user=ann');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''caf%C3%A9%20%281%29%20it%27s.png");
    expect(r.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await r.arrayBuffer()).equals(PNG)).toBe(true);
    // `false` (and pydantic's other false spellings) is inline.
    const inline = await preview(f.id, '?as_attachment=0');
    expect(inline.headers.get('content-disposition')).toBeNull();
    expect(inline.headers.get('content-type')).toBe('image/png');
  });

  it('text gets werkzeug\'s charset; audio and video say Accept-Ranges; HTML always downloads; SVG is an inert attachment', async () => {
    const txt = await upload(Buffer.from('hello'), 'notes.txt', 'text/plain');
    const mp3 = await upload(Buffer.from('ID3fake'), 'song.mp3', 'audio/mpeg');
    const html = await upload(Buffer.from('<script>alert(1)</script>'), 'page.html', 'text/html');
    const svg = await upload(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), 'logo.svg', 'image/svg+xml');
    for (const f of [txt, mp3, html, svg]) await sendWith(f.id);

    const t = await preview(txt.id);
    expect(t.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await t.text()).toBe('hello');
    expect((await preview(mp3.id)).headers.get('accept-ranges')).toBe('bytes');
    const h = await preview(html.id);
    expect(h.headers.get('content-type')).toBe('application/octet-stream');
    expect(h.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''page.html");
    const v = await preview(svg.id);
    expect(v.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
    expect(v.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''logo.svg");
    expect(v.headers.get('content-security-policy')).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox");
  });

  it('every …+xml type is an inert attachment; a stored type that is not a media type is sent as bytes', async () => {
    const script = '<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>';
    for (const type of ['application/rss+xml', 'application/vnd.example+xml', 'text/xsl']) {
      const f = await upload(Buffer.from(script), 'feed.txt', type);
      await sendWith(f.id);
      const r = await preview(f.id);
      expect(r.status, type).toBe(200);
      expect(r.headers.get('content-disposition'), type).toBe("attachment; filename*=UTF-8''feed.txt");
      expect(r.headers.get('content-security-policy'), type).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox");
    }
    // The client names an upload's type; one with a control character is not a header value.
    const boundary = 'dovetail-boundary';
    const body = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="user"\r\n\r\nann\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="odd.txt"\r\nContent-Type: text/plain\x01\r\n\r\nhello\r\n--${boundary}--\r\n`,
      'latin1',
    );
    const up = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
    expect(up.status).toBe(201);
    const odd = (await up.json()) as { id: string };
    await sendWith(odd.id);
    const r = await preview(odd.id);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/octet-stream');
    expect(await r.text()).toBe('hello');
  });

  it('HEAD answers the headers (the file\'s Content-Length) without the bytes', async () => {
    const f = await upload(Buffer.from('hello head'), 'head.txt', 'text/plain');
    await sendWith(f.id);
    const r = await fetch(`${s.api}/files/${f.id}/preview`, { method: 'HEAD', headers: auth() });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-length')).toBe('10');
    expect(await r.text()).toBe('');
  });

  it('404 file_not_found: an unknown id, a malformed id, and an upload no message of the app was sent with', async () => {
    const notFound = { code: 'file_not_found', message: 'File not found in message context', status: 404 };
    for (const id of ['0b6a3c1e-1d7f-4d2b-9a61-4f0c8a9e2b11', 'not-a-uuid']) {
      const r = await preview(id);
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual(notFound);
    }
    const f = await upload(PNG, 'unsent.png', 'image/png');
    const r = await preview(f.id);
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual(notFound);
    // Once a message carries it, it is reachable.
    await sendWith(f.id);
    expect((await preview(f.id)).status).toBe(200);
  });

  it('403 file_access_denied: another app\'s file, even one its messages carry', async () => {
    const f = await upload(PNG, 'theirs.png', 'image/png', otherKey);
    await sendWith(f.id, otherKey);
    expect((await preview(f.id, '', otherKey)).status).toBe(200);
    const r = await preview(f.id);
    expect(r.status).toBe(403);
    expect(await r.json()).toEqual({ code: 'file_access_denied', message: 'File access denied: not owned by requesting app', status: 403 });
  });

  it('400 invalid_param naming as_attachment when it is not a boolean', async () => {
    const f = await upload(PNG, 'x.png', 'image/png');
    await sendWith(f.id);
    const r = await preview(f.id, '?as_attachment=maybe');
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'invalid_param', message: 'as_attachment must be a boolean (true or false), got "maybe"', status: 400 });
  });

  it('dify-client: the SDK\'s request reads the bytes back as a download', async () => {
    const client = new ChatClient(key, s.api);
    const f = await upload(PNG, 'sdk.png', 'image/png');
    await sendWith(f.id);
    // dify-client 2.3.2 has no filePreview helper; its 3.x `filePreview` sends this same request.
    const r = await client.sendRequest('GET', `/files/${f.id}/preview`, null, { user: 'ann', as_attachment: true }, true);
    expect(r.status).toBe(200);
    expect(r.headers['content-disposition']).toBe("attachment; filename*=UTF-8''sdk.png");
    const chunks: Buffer[] = [];
    for await (const c of r.data as Readable) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(PNG)).toBe(true);
  });
});

describe('Range on the file preview and the signed download', () => {
  const BYTES = Buffer.from('0123456789abcdefghij');
  const ranged = (url: string, range: string, headers: Record<string, string> = {}) => fetch(url, { headers: { ...headers, range } });

  /** Asks `url` for each kind of range: one range is 206 with Content-Range, past the end 416, anything else the whole file. */
  async function checkRanges(url: string, headers: Record<string, string> = {}): Promise<void> {
    const mid = await ranged(url, 'bytes=2-5', headers);
    expect(mid.status).toBe(206);
    expect(mid.headers.get('content-range')).toBe(`bytes 2-5/${BYTES.length}`);
    expect(mid.headers.get('content-length')).toBe('4');
    expect(await mid.text()).toBe('2345');
    const open = await ranged(url, 'bytes=15-', headers);
    expect(open.status).toBe(206);
    expect(open.headers.get('content-range')).toBe(`bytes 15-19/${BYTES.length}`);
    expect(await open.text()).toBe('fghij');
    const suffix = await ranged(url, 'bytes=-3', headers);
    expect(suffix.status).toBe(206);
    expect(await suffix.text()).toBe('hij');
    // an end past the last byte is clamped to it
    const long = await ranged(url, 'bytes=18-1000', headers);
    expect(long.status).toBe(206);
    expect(long.headers.get('content-range')).toBe(`bytes 18-19/${BYTES.length}`);
    expect(await long.text()).toBe('ij');
    // a start past the end: 416 with the size, in Dify's envelope
    const past = await ranged(url, 'bytes=20-', headers);
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${BYTES.length}`);
    expect(await past.json()).toEqual({ code: 'range_not_satisfiable', message: `Range not satisfiable: "bytes=20-" starts past the end of the file (${BYTES.length} bytes).`, status: 416 });
    // several ranges or a header that does not parse: the whole file, as RFC 9110 allows
    for (const r of ['bytes=0-1,4-5', 'bytes=5-2', 'items=0-1', 'bytes=x-']) {
      const whole = await ranged(url, r, headers);
      expect(whole.status, r).toBe(200);
      expect(Buffer.from(await whole.arrayBuffer()).equals(BYTES), r).toBe(true);
    }
  }

  it('GET /files/{id}/preview serves one byte range (206), 416 past the end', async () => {
    const f = await upload(BYTES, 'clip.mp4', 'video/mp4');
    await sendWith(f.id);
    await checkRanges(`${s.api}/files/${f.id}/preview`, auth());
  });

  it('the signed download URL (/files/{id}/file-preview) serves ranges the same way', async () => {
    const f = await upload(BYTES, 'notes.txt', 'text/plain');
    const url = await s.runtime.fileUrls.sign(f.id, s.url, true);
    await checkRanges(url);
  });
});

