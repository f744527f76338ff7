import net from 'node:net';

/**
 * A TCP proxy in the test process, in front of a shared service (Redis): an outage is simulated by
 * resetting the connections that pass through it and refusing new ones for a while, without
 * touching the service itself (other tests use it).
 */
export interface TcpProxy {
  /** `redis://127.0.0.1:<port>` style address of the proxy for `scheme`. */
  url(scheme: string): string;
  readonly port: number;
  /** Connections open now. */
  open(): number;
  /** Resets (RST) every open connection; new ones are accepted at once. */
  reset(): void;
  /** Resets (RST) every open connection and refuses new ones (nothing listens on the port) for `ms`. */
  outage(ms: number): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; up: net.Socket }>();
  const server = net.createServer((client) => {
    const up = net.connect(target.port, target.host);
    const pair = { client, up };
    pairs.add(pair);
    for (const s of [client, up]) {
      s.on('error', () => undefined);
      s.on('close', () => {
        pairs.delete(pair);
        client.destroy();
        up.destroy();
      });
    }
    client.pipe(up);
    up.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const resetAll = () => {
    for (const { client, up } of pairs) {
      client.resetAndDestroy();
      up.destroy();
    }
    pairs.clear();
  };
  return {
    port,
    url: (scheme) => `${scheme}://127.0.0.1:${port}`,
    open: () => pairs.size,
    reset: resetAll,
    async outage(ms) {
      // as a Redis that went away: connections reset, new ones refused, then back on the same port
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        resetAll();
      });
      await new Promise((r) => setTimeout(r, ms));
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    async close() {
      resetAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
