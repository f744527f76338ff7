/**
 * A bare pass-through proxy in its own process, for benchmarks: forwards each request to the
 * upstream named in argv[2] (`{"upstream": baseUrl}`) with `fetch` and pipes the body back
 * untouched. It measures what one extra process hop costs on this machine, with no work at all.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const { upstream } = JSON.parse(process.argv[2] ?? '{}') as { upstream: string };
const server = http.createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', async () => {
    const up = await fetch(`${upstream}${req.url!.replace(/^\/v1/, '')}`, {
      method: req.method,
      headers: { 'content-type': 'application/json', authorization: String(req.headers.authorization ?? '') },
      body: Buffer.concat(parts),
    });
    res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/octet-stream' });
    res.flushHeaders();
    const reader = up.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }));
process.on('disconnect', () => server.close(() => process.exit(0)));
