/**
 * A bare pass-through proxy in its own process, for benchmarks: forwards each request to the
 * upstream named in argv[2] (`{"upstream": baseUrl}`) with `node:http` (keep-alive) and pipes the
 * body back untouched. It measures what one extra process hop costs on this machine, with no work.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const { upstream } = JSON.parse(process.argv[2] ?? '{}') as { upstream: string };
const agent = new http.Agent({ keepAlive: true });
const server = http.createServer((req, res) => {
  const up = http.request(`${upstream}${req.url!.replace(/^\/v1/, '')}`, { method: req.method, agent, headers: { 'content-type': 'application/json', authorization: String(req.headers.authorization ?? '') } }, (upRes) => {
    res.writeHead(upRes.statusCode ?? 502, { 'content-type': upRes.headers['content-type'] ?? 'application/octet-stream' });
    upRes.pipe(res);
  });
  req.pipe(up);
});
// Connections kept as long as the other legs' (the paced upstream and Dovetail keep theirs a minute or more).
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }));
process.on('disconnect', () => server.close(() => process.exit(0)));
