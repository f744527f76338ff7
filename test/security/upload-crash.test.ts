/**
 * Issue 14, "Crash": a multipart body that ends early (no closing boundary) on an upload route
 * killed the process (`Part terminated early … Emitted 'error' event on Transform instance`), and a
 * multipart request without a boundary answered 500. Every stream error in every upload path must
 * end that request with a 400 in Dify's envelope, and nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startServer } from '../helpers/server.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { watchHealth, type HealthWatch } from '../helpers/health-watch.js';
import { rawRequest, requestHead } from '../helpers/raw-http.js';
import { completionApp } from '../helpers/apps.js';

let server: ServerProcess;
let health: HealthWatch;
const routes: { name: string; method: string; path: string; key: string }[] = [];

beforeAll(async () => {
  const prep = await startServer();
  const doc = parse(completionApp({ name: 'voice' })) as { model_config: Record<string, unknown> };
  doc.model_config.speech_to_text = { enabled: true };
  const { apiKey } = await prep.importApp(stringify(doc));
  const kbKey = await prep.datasetKey();
  const auth = { authorization: `Bearer ${kbKey}`, 'content-type': 'application/json' };
  const ds = (await (await fetch(`${prep.api}/datasets`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'kb', indexing_technique: 'economy' }) })).json()) as { id: string };
  const created = (await (
    await fetch(`${prep.api}/datasets/${ds.id}/document/create-by-text`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: 'a', text: 'some text', indexing_technique: 'economy', process_rule: { mode: 'automatic' } }),
    })
  ).json()) as { document: { id: string } };
  await prep.stop();
  server = await spawnServer(prep);
  const docPath = `/datasets/${ds.id}/documents/${created.document.id}`;
  // The update routes check that the document is available (indexed) before reading the body.
  for (let i = 0; i < 600; i++) {
    const d = (await (await fetch(`${server.api}${docPath}`, { headers: { authorization: `Bearer ${kbKey}` } })).json()) as { indexing_status?: string };
    if (d.indexing_status === 'completed') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  routes.push(
    { name: 'files/upload', method: 'POST', path: '/files/upload', key: apiKey },
    { name: 'audio-to-text', method: 'POST', path: '/audio-to-text', key: apiKey },
    { name: 'create-by-file', method: 'POST', path: `/datasets/${ds.id}/document/create-by-file`, key: kbKey },
    { name: 'update-by-file', method: 'POST', path: `${docPath}/update-by-file`, key: kbKey },
    { name: 'PATCH document', method: 'PATCH', path: docPath, key: kbKey },
  );
  health = watchHealth(server.url);
  return async () => {
    await server.close();
    await prep.close();
  };
}, 180_000);

afterAll(async () => {
  // The server answered every /health probe throughout the attacks below, and is still up
  // (how fast: `npm run bench health-under-attack`).
  const report = await health.stop();
  expect(report.failures).toEqual([]);
  expect(report.probes).toBeGreaterThan(0);
  expect(server.alive()).toBe(true);
}, 180_000);

const B = 'XYZ';
/** A form whose `file` part (and, for documents, a `data` field) never reaches a closing boundary. */
function truncatedBody(fileName: string, mime: string): string {
  return [
    `--${B}`,
    'Content-Disposition: form-data; name="data"',
    '',
    '{"indexing_technique":"economy","process_rule":{"mode":"automatic"}}',
    `--${B}`,
    `Content-Disposition: form-data; name="file"; filename="${fileName}"`,
    `Content-Type: ${mime}`,
    '',
    'hello',
  ].join('\r\n');
}

function fileFor(name: string): [string, string] {
  return name === 'audio-to-text' ? ['a.mp3', 'audio/mpeg'] : ['a.txt', 'text/plain'];
}

function expectEnvelope400(status: number | undefined, json: Record<string, unknown> | undefined): void {
  expect(status).toBe(400);
  expect(json).toEqual({ code: 'bad_request', message: expect.stringMatching(/multipart/i), status: 400 });
}

describe('truncated and boundary-less multipart on every upload route', () => {
  it('a body that ends without its closing boundary (whole Content-Length sent) answers 400, and the server stays up', async () => {
    for (const r of routes) {
      const body = truncatedBody(...fileFor(r.name));
      const res = await rawRequest(
        server.url,
        requestHead(r.method, `${server.api}${r.path}`, {
          Authorization: `Bearer ${r.key}`,
          'Content-Type': `multipart/form-data; boundary=${B}`,
          'Content-Length': Buffer.byteLength(body),
        }) + body,
        { untilResponse: true },
      );
      expect(res.status, `${r.name}: ${res.text.slice(0, 200)}`).toBe(400);
      expectEnvelope400(res.status, res.json);
      expect(res.json!.message, r.name).toMatch(/ended before its closing boundary/);
      expect(server.alive()).toBe(true);
    }
  });

  it('a chunked body that ends without its closing boundary answers 400', async () => {
    for (const r of routes) {
      const body = truncatedBody(...fileFor(r.name));
      const chunked = `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
      const res = await rawRequest(
        server.url,
        requestHead(r.method, `${server.api}${r.path}`, {
          Authorization: `Bearer ${r.key}`,
          'Content-Type': `multipart/form-data; boundary=${B}`,
          'Transfer-Encoding': 'chunked',
        }) + chunked,
        { untilResponse: true },
      );
      expectEnvelope400(res.status, res.json);
      expect(server.alive()).toBe(true);
    }
  });

  it('a client that stops sending mid-file and hangs up leaves the server up', async () => {
    for (const r of routes) {
      const body = truncatedBody(...fileFor(r.name));
      const res = await rawRequest(
        server.url,
        requestHead(r.method, `${server.api}${r.path}`, {
          Authorization: `Bearer ${r.key}`,
          'Content-Type': `multipart/form-data; boundary=${B}`,
          'Content-Length': Buffer.byteLength(body) + 1000,
        }) + body,
        { end: true, waitMs: 300 },
      );
      // Nothing can be answered to a client that left; the server must simply survive it.
      expect(res.status === undefined || res.status === 400, r.name).toBe(true);
      expect(server.alive()).toBe(true);
    }
    for (const r of routes) {
      // Every route still reads the next caller's form (a refused file type: no side effect, so the
      // document stays available to the tests below).
      const fd = new FormData();
      fd.append('file', new Blob(['MZ'], { type: 'application/x-msdownload' }), 'a.exe');
      const res = await fetch(`${server.api}${r.path}`, { method: r.method, headers: { authorization: `Bearer ${r.key}` }, body: fd });
      expect(res.status, r.name).toBeGreaterThanOrEqual(400);
      expect(res.status, r.name).toBeLessThan(500);
    }
  });

  it('multipart/form-data without a boundary answers 400 naming the boundary, not 500', async () => {
    for (const r of routes) {
      const body = '--XYZ\r\nContent-Disposition: form-data; name="user"\r\n\r\nu\r\n--XYZ--\r\n';
      const res = await fetch(`${server.api}${r.path}`, {
        method: r.method,
        headers: { authorization: `Bearer ${r.key}`, 'content-type': 'multipart/form-data' },
        body,
      });
      const json = (await res.json()) as Record<string, unknown>;
      expectEnvelope400(res.status, json);
      expect(json.message, r.name).toMatch(/boundary/);
    }
  });

  it('a boundary that never appears in the body answers 400', async () => {
    for (const r of routes) {
      const res = await fetch(`${server.api}${r.path}`, {
        method: r.method,
        headers: { authorization: `Bearer ${r.key}`, 'content-type': 'multipart/form-data; boundary=nothere' },
        body: 'just some bytes that are not a form',
      });
      expectEnvelope400(res.status, (await res.json()) as Record<string, unknown>);
    }
  });
});
