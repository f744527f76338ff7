/**
 * A bare TCP relay in its own process, for benchmarks: each connection is piped byte for byte to
 * the upstream named in argv[2] (`{"upstream": baseUrl}`), with no HTTP parsing at all. It measures
 * the floor of one extra process hop on this machine.
 */
import net from 'node:net';

const { upstream } = JSON.parse(process.argv[2] ?? '{}') as { upstream: string };
const target = new URL(upstream);
const server = net.createServer((client) => {
  const up = net.connect(Number(target.port), target.hostname);
  for (const s of [client, up]) {
    s.setNoDelay(true);
    s.on('error', () => undefined);
    s.on('close', () => {
      client.destroy();
      up.destroy();
    });
  }
  client.pipe(up);
  up.pipe(client);
});
server.listen(0, '127.0.0.1', () => process.send?.({ baseUrl: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1` }));
process.on('disconnect', () => process.exit(0));
