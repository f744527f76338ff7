import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isBlockedAddress, sendRemote } from '../../src/files/remote-fetch.js';

describe('SSRF guard: blocked addresses', () => {
  it('blocks private and loopback targets in every IPv4 and IPv6 spelling', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.0.1', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '64:ff9b::7f00:1', '2002:7f00:1::1']) {
      expect(isBlockedAddress(ip), ip).toBe(true);
    }
    for (const ip of ['93.184.216.34', '2606:4700::1111', '::ffff:5db8:d822']) expect(isBlockedAddress(ip), ip).toBe(false);
  });
});

describe('sendRemote redirects', () => {
  let a: http.Server;
  let b: http.Server;
  let seen: http.IncomingHttpHeaders | undefined;
  beforeAll(async () => {
    b = http.createServer((req, res) => {
      seen = req.headers;
      res.end('ok');
    });
    await new Promise<void>((r) => b.listen(0, '127.0.0.1', r));
    const bPort = (b.address() as AddressInfo).port;
    a = http.createServer((req, res) => {
      // Same origin first, then another origin (a different host name for the same machine).
      const to = req.url === '/start' ? `/same` : `http://localhost:${bPort}/other`;
      if (req.url === '/same') seen = req.headers;
      res.writeHead(302, { location: to }).end();
    });
    await new Promise<void>((r) => a.listen(0, '127.0.0.1', r));
  });
  afterAll(() => {
    a.close();
    b.close();
  });

  it('keeps credentials on the same origin and drops them on another', async () => {
    const aPort = (a.address() as AddressInfo).port;
    const res = await sendRemote(
      { method: 'GET', url: `http://127.0.0.1:${aPort}/start`, headers: { authorization: 'Bearer secret', 'x-api-key': 'k', cookie: 'c=1', accept: 'text/plain' } },
      { maxBytes: 1000, allowHosts: ['127.0.0.1', 'localhost'], connectTimeoutMs: 2000, readTimeoutMs: 2000, credentialHeaders: ['X-Api-Key'] },
    );
    expect(res.body.toString()).toBe('ok');
    expect(seen).toMatchObject({ accept: 'text/plain' });
    expect(seen).not.toHaveProperty('authorization');
    expect(seen).not.toHaveProperty('x-api-key');
    expect(seen).not.toHaveProperty('cookie');
  });
});
