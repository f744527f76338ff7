import { sha256 } from '../../src/infra/ids.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { startServer, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { validateResponse } from '../helpers/openapi.js';

let s: TestServer;
let key: string;
let appId: string;

beforeAll(async () => {
  s = await startServer({ env: { UPLOAD_IMAGE_FILE_SIZE_LIMIT: '1' } });
  ({ apiKey: key, appId } = await s.importApp(example('completion-writer.yml')));
});
afterAll(async () => s?.close());

const auth = (k = key) => ({ authorization: `Bearer ${k}` });

describe('health and routing', () => {
  it('GET /health answers 200', async () => {
    const r = await fetch(`${s.url}/health`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok' });
  });

  it('unknown route → JSON 404 not_found with a request id', async () => {
    const r = await fetch(`${s.api}/nope`, { headers: auth() });
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    expect(r.headers.get('x-request-id')).toBeTruthy();
    const body = await r.json();
    expect(body).toMatchObject({ code: 'not_found', status: 404 });
    expect(Object.keys(body)).toEqual(['code', 'message', 'status']);
  });

  it('wrong method on a known path → 405 method_not_allowed', async () => {
    const r = await fetch(`${s.api}/parameters`, { method: 'DELETE', headers: auth() });
    expect(r.status).toBe(405);
    expect(await r.json()).toEqual({ code: 'method_not_allowed', message: 'The method is not allowed for the requested URL.', status: 405 });
  });

  it('echoes a caller x-request-id', async () => {
    const r = await fetch(`${s.url}/health`, { headers: { 'x-request-id': 'abc-123' } });
    expect(r.headers.get('x-request-id')).toBe('abc-123');
  });
});

describe('authentication', () => {
  const cases: [string, Record<string, string>, string][] = [
    ['missing header', {}, "Authorization header must be provided and start with 'Bearer'"],
    ['no space', { authorization: 'Bearer' }, "Authorization header must be provided and start with 'Bearer'"],
    ['wrong scheme', { authorization: 'Basic abc' }, "Authorization scheme must be 'Bearer'"],
    ['unknown key', { authorization: 'Bearer app-doesnotexist' }, 'Access token is invalid'],
  ];
  for (const [name, headers, message] of cases) {
    it(`${name} → 401 unauthorized`, async () => {
      const r = await fetch(`${s.api}/info`, { headers });
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="api"');
      expect(await r.json()).toEqual({ code: 'unauthorized', message, status: 401 });
    });
  }

  it('a knowledge key on an app endpoint is 401', async () => {
    const dk = await s.datasetKey();
    expect(dk).toMatch(/^dataset-/);
    const r = await fetch(`${s.api}/info`, { headers: auth(dk) });
    expect(r.status).toBe(401);
    expect((await r.json()).message).toBe('Access token is invalid');
  });

  it('keys are stored only as hashes', async () => {
    const rows = await s.runtime.store.db.selectFrom('api_keys').selectAll().execute();
    for (const row of rows) expect(JSON.stringify(row)).not.toContain(key);
    expect(key).toMatch(/^app-[A-Za-z0-9_-]{32}$/);
  });

  it('a revoked key is refused', async () => {
    const a = await s.runtime.apps.find(appId);
    const k = await s.runtime.keys.create('app', a!.workspaceId, appId);
    expect((await fetch(`${s.api}/info`, { headers: auth(k.apiKey) })).status).toBe(200);
    expect(await s.runtime.keys.revoke(k.id)).toBe(true);
    expect((await fetch(`${s.api}/info`, { headers: auth(k.apiKey) })).status).toBe(401);
  });

  it('made-up tokens cannot grow the key cache: past 10,000 lookups the oldest are forgotten', async () => {
    const a = await s.runtime.apps.find(appId);
    // A token nobody has yet: its miss is remembered.
    const token = `app-${'q'.repeat(32)}`;
    expect((await fetch(`${s.api}/info`, { headers: auth(token) })).status).toBe(401);
    // Added behind the cache's back: the remembered miss still keeps it out.
    await s.runtime.store.db
      .insertInto('api_keys')
      .values({ id: 'k-behind', type: 'app', app_id: appId, workspace_id: a!.workspaceId, token_hash: sha256(token), hint: 'app-qqqqq…', created_at: Date.now(), last_used_at: null })
      .execute();
    expect((await fetch(`${s.api}/info`, { headers: auth(token) })).status).toBe(401);
    // Well-formed but unknown tokens (tokens of another shape are not looked up at all).
    for (let i = 0; i < 10_000; i++) await s.runtime.keys.resolve(`app-${String(i).padStart(32, 'x')}`, 'app');
    expect((await fetch(`${s.api}/info`, { headers: auth(token) })).status).toBe(200);
    await s.runtime.store.db.deleteFrom('api_keys').where('id', '=', 'k-behind').execute();
  });
});

describe('app info and parameters', () => {
  it('GET /site: the web-app settings from the DSL', async () => {
    const r = await fetch(`${s.api}/site`, { headers: auth() });
    const body = await r.json();
    validateResponse('/site', 'get', 200, body);
    expect(body).toMatchObject({ title: 'Writer (mock model)', icon: '✍️', icon_type: 'emoji', default_language: 'en-US' });
  });

  it('GET /end-users/{id}: an end user of the workspace, 404 otherwise', async () => {
    const u = await s.runtime.endUsers.getOrCreate(appId, 'eu-1');
    const r = await fetch(`${s.api}/end-users/${u.id}`, { headers: auth() });
    const body = await r.json();
    validateResponse('/end-users/{end_user_id}', 'get', 200, body);
    expect(body).toMatchObject({ id: u.id, app_id: appId, session_id: 'eu-1', external_user_id: 'eu-1', type: 'service_api', is_anonymous: false });
    const missing = await fetch(`${s.api}/end-users/00000000-0000-0000-0000-000000000000`, { headers: auth() });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ code: 'not_found', message: 'End user not found.', status: 404 });
  });

  it('GET /info', async () => {
    const r = await fetch(`${s.api}/info`, { headers: auth() });
    expect(await r.json()).toEqual({
      name: 'Writer (mock model)',
      description: expect.any(String),
      tags: [],
      mode: 'completion',
      author_name: expect.any(String),
    });
  });

  it('GET /parameters gives the user_input_form and limits', async () => {
    const r = await fetch(`${s.api}/parameters`, { headers: auth() });
    expect(r.status).toBe(200);
    const p = await r.json();
    expect(p.user_input_form).toEqual([
      { 'text-input': { label: 'Topic', variable: 'topic', required: true, max_length: 200, default: '' } },
      { select: { label: 'Tone', variable: 'tone', required: false, options: ['friendly', 'formal', 'playful'], default: 'friendly' } },
    ]);
    expect(p.system_parameters).toEqual({
      file_size_limit: 15,
      image_file_size_limit: 1,
      audio_file_size_limit: 50,
      video_file_size_limit: 100,
      workflow_file_upload_limit: 10,
    });
    for (const k of ['opening_statement', 'suggested_questions', 'speech_to_text', 'text_to_speech', 'retriever_resource', 'annotation_reply', 'more_like_this', 'sensitive_word_avoidance', 'file_upload']) {
      expect(p).toHaveProperty(k);
    }
  });
});

function form(parts: [string, string | Blob, string?][]): FormData {
  const fd = new FormData();
  for (const [k, v, name] of parts) {
    if (typeof v === 'string') fd.append(k, v);
    else fd.append(k, v, name);
  }
  return fd;
}

describe('POST /files/upload', () => {
  const txt = () => new Blob(['hello world'], { type: 'text/plain' });

  it('201 with Dify FileResponse fields; user after the file is honoured', async () => {
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(), body: form([['file', txt(), 'notes.TXT'], ['user', 'alice']]) });
    expect(r.status).toBe(201);
    const f = await r.json();
    expect(f).toMatchObject({ name: 'notes.TXT', size: 11, extension: 'txt', mime_type: 'text/plain' });
    for (const k of ['id', 'created_by', 'created_at', 'preview_url', 'source_url', 'tenant_id', 'reference', 'file_key']) expect(f).toHaveProperty(k);
    expect(typeof f.created_at).toBe('number');
    const alice = await s.runtime.endUsers.find(appId, 'alice');
    expect(f.created_by).toBe(alice!.id);
    const stored = await s.runtime.uploads.find(f.id);
    expect((await s.runtime.uploads.read(stored!))!.toString()).toBe('hello world');
    // source_url: a signed URL of the file that needs no key (as Dify's).
    expect(f.source_url).toMatch(new RegExp(`^${s.url}/files/${f.id}/file-preview\\?timestamp=\\d+&nonce=\\w+&sign=`));
    const signed = await fetch(f.source_url);
    expect(signed.status).toBe(200);
    expect(await signed.text()).toBe('hello world');
  });

  it('no user → DEFAULT-USER', async () => {
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(), body: form([['file', txt(), 'a.txt']]) });
    expect(r.status).toBe(201);
    const def = await s.runtime.endUsers.find(appId, 'DEFAULT-USER');
    expect((await r.json()).created_by).toBe(def!.id);
  });

  it('no file → 400 no_file_uploaded', async () => {
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(), body: form([['user', 'alice']]) });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'no_file_uploaded', message: 'Please upload your file.', status: 400 });
  });

  it('not multipart → 400 no_file_uploaded', async () => {
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: '{}' });
    expect(r.status).toBe(400);
    expect((await r.json()).code).toBe('no_file_uploaded');
  });

  it('two file fields → 400 too_many_files, nothing stored', async () => {
    const before = await countUploads();
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(), body: form([['file', txt(), 'a.txt'], ['other', txt(), 'b.txt']]) });
    expect(r.status).toBe(400);
    expect((await r.json()).code).toBe('too_many_files');
    expect(await countUploads()).toBe(before);
  });

  it('dangerous extension → 400 invalid_param naming it', async () => {
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(), body: form([['file', txt(), 'run.exe']]) });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'invalid_param', message: "File extension '.exe' is not allowed for security reasons", status: 400 });
  });

  it('path characters in the name → 400 invalid_param', async () => {
    const body = multipartRaw('..\\evil.txt', 'x');
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ code: 'invalid_param', message: 'Filename contains invalid characters' });
  });

  it('over the category limit → 413 file_too_large stating the limit, no row, no file', async () => {
    const before = await countUploads();
    const big = new Blob([new Uint8Array(1024 * 1024 + 10)], { type: 'image/png' });
    const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: auth(), body: form([['file', big, 'big.png']]) });
    expect(r.status).toBe(413);
    const body = await r.json();
    expect(body.code).toBe('file_too_large');
    expect(body.message).toContain('1 MB');
    expect(await countUploads()).toBe(before);
    expect(blobFiles()).toBe(before);
  });

  it('an aborted upload leaves no row and no orphan file', async () => {
    const before = await countUploads();
    await new Promise<void>((resolve) => {
      const u = new URL(`${s.api}/files/upload`);
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': '100000' } });
      req.on('error', () => resolve());
      req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="part.txt"\r\nContent-Type: text/plain\r\n\r\n`);
      req.write('x'.repeat(5000));
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 100);
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(await countUploads()).toBe(before);
    expect(blobFiles()).toBe(before);
    expect(tmpFiles()).toBe(0);
  });
});

const BOUNDARY = 'dovetailboundary';
function multipartRaw(filename: string, content: string): string {
  return `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n${content}\r\n--${BOUNDARY}--\r\n`;
}

async function countUploads(): Promise<number> {
  const r = await s.runtime.store.db.selectFrom('upload_files').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

function walk(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  } catch {
    return [];
  }
}
function blobFiles(): number {
  return walk(path.join(s.dataDir, 'files', 'uploads')).length;
}
function tmpFiles(): number {
  return walk(path.join(s.dataDir, 'files', '.tmp')).length;
}
