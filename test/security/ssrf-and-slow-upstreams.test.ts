import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { isBlockedAddress } from '../../src/files/remote-fetch.js';
import { isOwnAddress } from '../../src/files/blocked-addresses.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

describe('SSRF guard: every IANA special-purpose range', () => {
  it('blocks each special-purpose IPv4 block, in IPv4 and in every IPv6 form that carries it', () => {
    const v4 = [
      '0.1.2.3', '10.0.0.1', '100.64.0.1', '100.127.255.254', '127.0.0.1', '169.254.169.254', '172.16.0.1', '192.0.0.1', '192.0.0.170',
      '192.0.2.2', '192.31.196.1', '192.52.193.1', '192.88.99.1', '192.168.1.1', '192.175.48.1', '198.18.0.1', '198.19.255.255',
      '198.51.100.7', '203.0.113.9', '224.0.0.1', '239.255.255.250', '240.0.0.1', '255.255.255.255',
    ];
    for (const ip of v4) {
      expect(isBlockedAddress(ip), ip).toBe(true);
      const [a, b, c, d] = ip.split('.').map(Number) as [number, number, number, number];
      const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
      for (const form of [`::ffff:${ip}`, `::ffff:${hex}`, `64:ff9b::${ip}`, `2002:${hex}::1`]) expect(isBlockedAddress(form), form).toBe(true);
    }
  });

  it('blocks each special-purpose IPv6 block and everything outside global unicast', () => {
    const v6 = [
      '::', '::1', '100::1', '100:0:0:1::1', '64:ff9b:1::1', '2001::1', '2001:1::1', '2001:2::1', '2001:3::1', '2001:4:112::1', '2001:10::1',
      '2001:20::1', '2001:30::1', '2001:db8::1', '2620:4f:8000::1', '3fff::1', '5f00::1', 'fc00::1', 'fd00::2', 'fe80::1', 'fec0::1', 'ff02::1', '4000::1',
    ];
    for (const ip of v6) expect(isBlockedAddress(ip), ip).toBe(true);
  });

  it('lets public addresses through, also when an IPv6 form carries them', () => {
    for (const ip of ['8.8.8.8', '93.184.216.34', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::808:808', '2002:808:808::1']) {
      expect(isBlockedAddress(ip), ip).toBe(false);
    }
  });

  it('treats garbage as blocked', () => {
    for (const ip of ['', 'localhost', '1.2.3', '0x7f.1', '::g']) expect(isBlockedAddress(ip), ip).toBe(true);
  });

  it("recognises every address of this host's own interfaces, in any spelling", () => {
    const own = Object.values(networkInterfaces()).flatMap((l) => l ?? []);
    expect(own.length).toBeGreaterThan(0);
    for (const iface of own) {
      expect(isOwnAddress(iface.address), iface.address).toBe(true);
      if (iface.family === 'IPv4') expect(isOwnAddress(`::ffff:${iface.address}`)).toBe(true);
    }
    expect(isOwnAddress('8.8.8.8')).toBe(false);
  });
});

const httpNode = (extra: Record<string, unknown>): NodeSpec => ({
  id: 'http',
  type: 'http-request',
  method: 'get',
  url: '{{#start.url#}}',
  authorization: { type: 'no-auth' },
  headers: '',
  params: '',
  body: { type: 'none', data: [] },
  timeout: { connect: 1, read: 2, write: 1 },
  ...extra,
});
const app = (node: NodeSpec) =>
  workflowDsl([startNode([{ variable: 'url' }]), node, endNode({ status: ['http', 'status_code'], body: ['http', 'body'] })], [['start', 'http'], ['http', 'end']]);

async function runBlocking(server: TestServer, key: string, url: string) {
  const r = await fetch(`${server.api}/workflows/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { url }, user: 'u' }),
  });
  expect(r.status).toBe(200);
  return (await r.json()).data;
}

describe('http-request node against slow upstreams and this host', () => {
  let upstream: Server;
  let port = 0;
  const timers = new Set<NodeJS.Timeout>();
  let s: TestServer;
  beforeAll(async () => {
    upstream = createServer((req, res) => {
      if (req.url === '/trickle') {
        // Headers at once, then one byte a second forever: never idle, never done.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const t = setInterval(() => res.write('x'), 1000);
        timers.add(t);
        res.on('close', () => clearInterval(t));
        return;
      }
      res.end('hello');
    });
    await new Promise<void>((r) => upstream.listen(0, '0.0.0.0', r));
    port = (upstream.address() as AddressInfo).port;
    s = await startServer({ env: { SSRF_ALLOW_HOSTS: '127.0.0.1' } });
  });
  afterAll(async () => {
    for (const t of timers) clearInterval(t);
    await s?.close();
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
  });

  it('ends a request that trickles one byte a second after connect + write + read seconds, and /health answers meanwhile', async () => {
    const { apiKey } = await s.importApp(app(httpNode({})));
    const run = runBlocking(s, apiKey, `http://127.0.0.1:${port}/trickle`);
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
    const d = await run;
    expect(d.status).toBe('failed');
    expect(d.error).toContain(`timed out: http://127.0.0.1:${port}/trickle did not answer in full within 4s`);
    expect(d.error).toContain('HTTP_REQUEST_MAX_READ_TIMEOUT');
  });

  it('caps node timeouts with HTTP_REQUEST_MAX_CONNECT_TIMEOUT, HTTP_REQUEST_MAX_WRITE_TIMEOUT and HTTP_REQUEST_MAX_READ_TIMEOUT', async () => {
    const capped = await startServer({ env: { SSRF_ALLOW_HOSTS: '127.0.0.1', HTTP_REQUEST_MAX_CONNECT_TIMEOUT: '1', HTTP_REQUEST_MAX_WRITE_TIMEOUT: '1', HTTP_REQUEST_MAX_READ_TIMEOUT: '2' } });
    try {
      const { apiKey } = await capped.importApp(app(httpNode({ timeout: { connect: 600, read: 600, write: 600 } })));
      const d = await runBlocking(capped, apiKey, `http://127.0.0.1:${port}/trickle`);
      expect(d).toMatchObject({ status: 'failed' });
      expect(d.error).toContain('did not answer in full within 4s');
      const fast = await runBlocking(capped, apiKey, `http://127.0.0.1:${port}/`);
      expect(fast).toMatchObject({ status: 'succeeded', outputs: { status: 200, body: 'hello' } });
    } finally {
      await capped.close();
    }
  });

  it("refuses this host's interface addresses, and SSRF_ALLOW_HOSTS still lets a listed one through", async () => {
    const external = Object.values(networkInterfaces())
      .flatMap((l) => l ?? [])
      .find((i) => i.family === 'IPv4' && !i.internal);
    expect(external, 'this test needs a non-loopback IPv4 interface').toBeDefined();
    const ip = external!.address;
    const guarded = await startServer();
    const allowed = await startServer({ env: { SSRF_ALLOW_HOSTS: ip } });
    try {
      const refused = await runBlocking(guarded, (await guarded.importApp(app(httpNode({})))).apiKey, `http://${ip}:${port}/`);
      expect(refused.status).toBe('failed');
      expect(refused.error).toMatch(new RegExp(`^host ${ip.replaceAll('.', '\\.')} resolves to (a private, loopback or reserved address|an address of this server), which is not allowed \\(SSRF_ALLOW_HOSTS\\)$`));
      const ok = await runBlocking(allowed, (await allowed.importApp(app(httpNode({})))).apiKey, `http://${ip}:${port}/`);
      expect(ok).toMatchObject({ status: 'succeeded', outputs: { status: 200, body: 'hello' } });
    } finally {
      await guarded.close();
      await allowed.close();
    }
  });
});
