import { spawn } from 'node:child_process';

export interface HealthReport {
  /** Probes that completed. */
  readonly probes: number;
  /**
   * The slowest probe in ms (a probe still unanswered at `stop` counts until then). Tests do not
   * assert on it (a loaded machine schedules probes late with no stall at all); `npm run bench
   * health-under-attack` measures it beside an idle baseline.
   */
  readonly maxMs: number;
  /** Probes that failed or did not answer 200. */
  readonly failures: readonly string[];
}

export interface HealthWatch {
  /** Stops probing and reports. */
  stop(): Promise<HealthReport>;
}

/**
 * The prober, run as a process of its own so that work in the test process (a fake upstream
 * parsing a 2 MB body, building a request) cannot delay or excuse a probe. It probes until its
 * stdin closes, then prints its report as JSON; the report holds at least one probe (a watch
 * stopped while this process was still starting waits for its first).
 */
const PROBER = `
const http = require('node:http');
const [url, gapMs] = [process.argv[1], Number(process.argv[2])];
let running = true, probes = 0, maxMs = 0, current, inflight;
const failures = [];
function probe() {
  return new Promise((resolve) => {
    const start = performance.now();
    current = start;
    let done = false;
    const finish = (failure) => {
      if (done) return;
      done = true;
      current = undefined;
      maxMs = Math.max(maxMs, performance.now() - start);
      probes++;
      if (failure) failures.push(failure);
      resolve();
    };
    const req = http.get(url + '/health', { agent: false }, (res) => {
      res.resume();
      res.on('end', () => finish(res.statusCode === 200 ? undefined : 'status ' + res.statusCode));
      res.on('error', (err) => finish(err.message));
    });
    req.on('error', (err) => finish(err.message));
  });
}
(async () => {
  while (running) {
    await (inflight = probe());
    await new Promise((r) => setTimeout(r, gapMs));
  }
})();
process.stdin.resume();
process.stdin.on('end', async () => {
  running = false;
  // a watch stopped before its first probe answered (this process was still starting) waits for one
  if (probes === 0) await (inflight ?? probe());
  if (current !== undefined) maxMs = Math.max(maxMs, performance.now() - current);
  process.stdout.write(JSON.stringify({ probes, maxMs, failures }));
  process.exit(0);
});
`;

/**
 * Probes `GET {url}/health` one after another (a fresh connection each, as a load balancer does)
 * with `gapMs` between probes, timing each from the moment it is sent, from a separate process.
 * A server whose event loop is blocked shows as one long probe; one that died shows as failures.
 */
export function watchHealth(url: string, gapMs = 20): HealthWatch {
  const child = spawn(process.execPath, ['-e', PROBER, url, String(gapMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async stop() {
      child.stdin.end();
      await exited;
      return JSON.parse(out) as HealthReport;
    },
  };
}

