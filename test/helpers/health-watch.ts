import http from 'node:http';

export interface HealthReport {
  /** Probes that completed. */
  readonly probes: number;
  /** The slowest probe in ms (a probe still unanswered at `stop` counts until then). */
  readonly maxMs: number;
  /** Probes that failed or did not answer 200. */
  readonly failures: readonly string[];
}

export interface HealthWatch {
  /** Stops probing and reports. */
  stop(): Promise<HealthReport>;
}

/**
 * Probes `GET {url}/health` one after another (a fresh connection each, as a load balancer does)
 * with `gapMs` between probes, timing each from the moment it is sent. A server whose event loop
 * is blocked shows as one long probe; one that died shows as failures.
 */
export function watchHealth(url: string, gapMs = 20): HealthWatch {
  let running = true;
  let probes = 0;
  let maxMs = 0;
  const failures: string[] = [];
  let current: { start: number } | undefined;

  const probe = (): Promise<void> =>
    new Promise((resolve) => {
      const start = performance.now();
      const finish = (failure?: string) => {
        const ms = performance.now() - start;
        maxMs = Math.max(maxMs, ms);
        probes++;
        if (failure) failures.push(failure);
        resolve();
      };
      const req = http.get(`${url}/health`, { agent: false }, (res) => {
        res.resume();
        res.on('end', () => finish(res.statusCode === 200 ? undefined : `status ${res.statusCode}`));
        res.on('error', (err) => finish(err.message));
      });
      req.on('error', (err) => finish(err.message));
    });

  const loop = (async () => {
    while (running) {
      current = { start: performance.now() };
      await probe();
      current = undefined;
      await new Promise((r) => setTimeout(r, gapMs));
    }
  })();

  return {
    async stop() {
      running = false;
      const pending = current;
      if (pending) maxMs = Math.max(maxMs, performance.now() - pending.start);
      // A probe still open at the end is counted above; do not wait on a dead server.
      await Promise.race([loop, new Promise((r) => setTimeout(r, 2000))]);
      return { probes, maxMs, failures: [...failures] };
    },
  };
}
