/**
 * Issue 14, "Slow clients": 200 connections sending a body at 1 byte every 5 s were all still open
 * after 330 s, and with a bad key the 401 was sent but the socket stayed open. A request must now
 * arrive whole within HTTP_BODY_TIMEOUT_SECONDS (408 in Dify's envelope, connection closed), and
 * an error answered before the body was read closes the connection.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { watchHealth, type HealthWatch } from '../helpers/health-watch.js';
import { rawRequest, requestHead } from '../helpers/raw-http.js';
import { completionApp } from '../helpers/apps.js';

const TIMEOUT_S = 2;
let prep: TestServer;
let s: ServerProcess;
let key: string;
let health: HealthWatch;

beforeAll(async () => {
  prep = await startServer();
  ({ apiKey: key } = await prep.importApp(completionApp()));
  await prep.stop();
  // In a process of its own: 200 dripping clients in the test process must not slow the server.
  s = await spawnServer(prep, { HTTP_BODY_TIMEOUT_SECONDS: String(TIMEOUT_S) });
  health = watchHealth(s.url);
}, 180_000);

afterAll(async () => {
  const report = await health?.stop();
  await s?.close();
  await prep?.close();
  expect(report.failures).toEqual([]);
  expect(report.probes).toBeGreaterThan(10);
}, 180_000);

interface SlowResult {
  readonly text: string;
  readonly closed: boolean;
  readonly bytesSent: number;
}

/**
 * Opens a connection, sends the head, then one byte of the declared body every `everyMs` until
 * the server closes the connection or `giveUpMs` passes.
 */
function slowClient(head: string, everyMs: number, giveUpMs: number): Promise<SlowResult> {
  const { port } = new URL(s.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    let sent = 0;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearInterval(drip);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ text, closed, bytesSent: sent });
    };
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.write(head);
    const drip = setInterval(() => {
      if (!socket.writable) return;
      socket.write('{');
      sent++;
    }, everyMs);
    const giveUp = setTimeout(() => finish(false), giveUpMs);
  });
}

function jsonOf(text: string): Record<string, unknown> {
  return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
}

describe('slow clients', () => {
  it(`200 connections dripping a body one byte at a time are answered 408 and closed after HTTP_BODY_TIMEOUT_SECONDS (${TIMEOUT_S} s)`, async () => {
    const head = requestHead('POST', `${s.api}/completion-messages`, {
      Authorization: `Bearer ${key}`,
      'Content-Type': 'application/json',
      'Content-Length': 10_000,
    });
    // Without the timeout these would stay open for as long as the drip lasts (10 s here).
    const results = await Promise.all(Array.from({ length: 200 }, () => slowClient(head, 500, 10 * TIMEOUT_S * 1000 / 2)));
    for (const r of results) {
      expect(r.closed).toBe(true);
      expect(r.text).toMatch(/^HTTP\/1\.1 408 /);
      expect(r.text).toMatch(/\r\nconnection: close\r\n/i);
      expect(jsonOf(r.text)).toEqual({ code: 'request_timeout', message: `The request was not received within HTTP_BODY_TIMEOUT_SECONDS (${TIMEOUT_S} s).`, status: 408 });
    }
    // The server still serves everyone else.
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  }, 60_000);

  it('headers that never finish are cut off the same way', async () => {
    const { port } = new URL(s.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    socket.write('GET /v1/parameters HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const drip = setInterval(() => socket.writable && socket.write('a'), 500);
    const text = await new Promise<string>((resolve) => {
      let t = '';
      socket.on('data', (d: Buffer) => (t += d.toString()));
      socket.on('close', () => resolve(t));
    });
    clearInterval(drip);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(jsonOf(text)).toMatchObject({ code: 'request_timeout', status: 408 });
  }, 30_000);

  it('a bad key on a request whose body has not arrived: 401 in the envelope, then the connection is closed (after a 500 ms grace)', async () => {
    for (const [method, path, type] of [
      ['POST', '/completion-messages', 'application/json'],
      ['POST', '/files/upload', 'multipart/form-data; boundary=XYZ'],
    ] as const) {
      const res = await rawRequest(
        s.url,
        requestHead(method, `${s.api}${path}`, { Authorization: 'Bearer app-not-a-key', 'Content-Type': type, 'Content-Length': 1_000_000 }) + '{"a":',
        // Well below HTTP_BODY_TIMEOUT_SECONDS: the close comes from the 401, not the timeout.
        { waitMs: (TIMEOUT_S * 1000) / 2 },
      );
      expect(res.status, path).toBe(401);
      expect(res.json).toMatchObject({ code: 'unauthorized', status: 401 });
      expect(res.closedByServer, path).toBe(true);
    }
  });

  it('an error answered after the whole body was read keeps the connection alive (keep-alive clients are not penalized)', async () => {
    const body = '{"inputs":{},"response_mode":"blocking","user":"u"}';
    const res = await rawRequest(
      s.url,
      requestHead('POST', `${s.api}/completion-messages`, { Authorization: 'Bearer app-not-a-key', 'Content-Type': 'application/json', 'Content-Length': body.length }) + body,
      { untilResponse: true, waitMs: 5000 },
    );
    expect(res.status).toBe(401);
    expect(res.text).not.toMatch(/\r\nconnection: close\r\n/i);
    expect(res.closedByServer).toBe(false);
  });
});
