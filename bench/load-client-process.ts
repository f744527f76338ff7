/**
 * The load client of `completion-load.bench.ts`, in its own process: on each IPC message
 * `{ url, headers, body, n, kind }` it fires `n` streaming requests at once and answers with each
 * one's first-token latency (ms from sending the request until the first token is decoded) and
 * the errors (non-2xx, a broken stream, an `error` event, no token). With `sustainMs` it keeps `n`
 * streams open instead: `n` clients start at random times over `rampMs` and each sends its next
 * request when its answer ends, for `sustainMs`; only requests sent after the ramp are answered
 * (the steady state of `n` concurrent streams).
 */
import { Agent, request, setGlobalDispatcher } from 'undici';

// Enough sockets for every request at once, as a load generator must have. Idle connections are
// kept a minute (a server's `Keep-Alive` hint may shorten it), so that every leg of a round — direct,
// bare proxy, Dovetail — finds its connections open: with undici's default of 4 s, the leg that
// came after two others (~5 s later) opened 200 new connections and its first tokens came later for
// it, which made the other legs' overhead look smaller in those rounds.
const dispatcher = new Agent({ connections: 1000, pipelining: 1, headersTimeout: 120_000, bodyTimeout: 120_000, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 });
setGlobalDispatcher(dispatcher);

/**
 * How a request is sent and its answer read. `undici` (the default): undici's `request`, the body
 * read as a Node stream of text — the least CPU per request this client can spend. It shares the
 * cores with the upstream and the server it measures, and every tenth of a millisecond it spends per
 * request in a burst is one the server waits for, which counts against every leg but direct (a
 * deployed server's clients are other machines). `fetch`: the built-in `fetch` with a web-stream
 * reader, about three times this client's CPU per request on Node 20 — what the figures up to
 * 2026-11-28 were measured with.
 */
const CLIENT = process.env.BENCH_LOAD_CLIENT === 'fetch' ? 'fetch' : 'undici';

interface Job {
  /** Several: the requests go to them in turn (a round-robin balancer). */
  readonly url: string | readonly string[];
  readonly headers: Record<string, string>;
  readonly body: unknown;
  readonly n: number;
  readonly kind: 'openai' | 'dify';
  readonly sustainMs?: number;
  readonly rampMs?: number;
}

/** Wall-clock time (ms since the epoch, sub-millisecond): comparable between processes of one machine. */
const wall = () => performance.timeOrigin + performance.now();

/** Requests sent by the last sustained job, ramp included. */
let sent = 0;

/** `n` clients, each sending its next request when the last answer ended, after a random start in the ramp. */
async function sustained(job: Job, sustainMs: number, rampMs: number): Promise<Answer[]> {
  const t0 = performance.now();
  const kept: Answer[] = [];
  sent = 0;
  const client = async () => {
    await new Promise((r) => setTimeout(r, Math.random() * rampMs));
    while (performance.now() - t0 < rampMs + sustainMs) {
      const steady = performance.now() - t0 >= rampMs;
      sent++;
      const r = await one(job);
      if (steady) kept.push(r);
    }
  };
  await Promise.all(Array.from({ length: job.n }, client));
  return kept;
}

const tokenOf = (kind: Job['kind'], e: Record<string, unknown>): string | undefined =>
  kind === 'openai' ? (e.choices as { delta?: { content?: string } }[] | undefined)?.[0]?.delta?.content : e.event === 'message' ? (e.answer as string) : undefined;

/** Requests sent so far, for the turn of `job.url`. */
let turn = 0;

/** A request's first-token latency (ms) and when its first token came (wall clock), or its error. */
interface Answer {
  readonly firstMs: number;
  readonly firstAt?: number;
  readonly error?: string;
}

/** An answer's status and its body as text chunks (`error` for a status over 299: its text). */
interface Sent {
  readonly status: number;
  readonly chunks: AsyncIterable<string>;
  text(): Promise<string>;
}

async function send(url: string, headers: Record<string, string>, body: string): Promise<Sent> {
  if (CLIENT === 'fetch') {
    const res = await fetch(url, { method: 'POST', headers, body });
    const decoder = new TextDecoder();
    return {
      status: res.status,
      text: () => res.text(),
      chunks: (async function* () {
        const reader = res.body!.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          yield decoder.decode(value, { stream: true });
        }
      })(),
    };
  }
  const res = await request(url, { method: 'POST', headers, body, dispatcher });
  res.body.setEncoding('utf8');
  return { status: res.statusCode, text: () => res.body.text(), chunks: res.body as AsyncIterable<string> };
}

/** Per job: its headers and its body's JSON, made once. */
const prepared = new WeakMap<Job, { readonly headers: Record<string, string>; readonly body: string }>();

async function one(job: Job): Promise<Answer> {
  const url = typeof job.url === 'string' ? job.url : job.url[turn++ % job.url.length]!;
  let req = prepared.get(job);
  if (!req) prepared.set(job, (req = { headers: { 'content-type': 'application/json', ...job.headers }, body: JSON.stringify(job.body) }));
  const t0 = performance.now();
  let firstMs = NaN;
  try {
    const res = await send(url, req.headers, req.body);
    if (res.status > 299) return { firstMs, error: `HTTP ${res.status} ${(await res.text()).slice(0, 200)}` };
    let buf = '';
    let tokens = 0;
    for await (const text of res.chunks) {
      buf += text;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const e = JSON.parse(line.slice(6)) as Record<string, unknown>;
        if (e.event === 'error') return { firstMs, error: `error event: ${String(e.message)}` };
        if (tokenOf(job.kind, e)) {
          tokens++;
          if (Number.isNaN(firstMs)) firstMs = performance.now() - t0;
        }
      }
    }
    if (tokens === 0) return { firstMs, error: 'no token' };
    return { firstMs, firstAt: performance.timeOrigin + t0 + firstMs };
  } catch (err) {
    return { firstMs, error: String(err) };
  }
}

process.on('message', (job: Job) => {
  const startedAt = wall();
  const all = job.sustainMs ? sustained(job, job.sustainMs, job.rampMs ?? 0) : Promise.all(Array.from({ length: job.n }, () => one(job)));
  void all.then((rs) =>
    process.send?.({ sent: job.sustainMs ? sent : job.n, startedAt, firstMs: rs.filter((r) => !r.error).map((r) => r.firstMs), firstAt: rs.flatMap((r) => (r.firstAt === undefined ? [] : [r.firstAt])), errors: rs.flatMap((r) => (r.error ? [r.error] : [])) }),
  );
});
process.send?.({ ready: true });
process.on('disconnect', () => process.exit(0));
