import { fmt, median } from './lib.js';
import { startChild } from './child.js';

const TOKENS = 2000;
/** Fresh upstream and server processes per launch. */
const LAUNCHES = 3;
/** Direct/through pairs per launch. */
const PAIRS = 40;
const WARMUP = 5;

interface Timing {
  readonly firstMs: number;
  /** When the last token was decoded. */
  readonly lastMs: number;
  /** When the body ended: after `[DONE]` directly; after `message_end`, sent once the message is stored, through Dovetail. */
  readonly endMs: number;
}

/**
 * Reads a streaming response as a client does: splits the event stream into `data:` lines and
 * decodes each JSON event. `firstMs` and `lastMs` are when the first and the last token (`pick`
 * returns text) are decoded, `endMs` when the body ends. Both paths use this same reader.
 */
async function timed(start: number, res: Response, pick: (event: Record<string, unknown>) => string | undefined): Promise<Timing> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let firstMs = NaN;
  let lastMs = NaN;
  let buf = '';
  let tokens = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let start0 = 0;
    let nl: number;
    while ((nl = buf.indexOf('\n', start0)) >= 0) {
      const line = buf.slice(start0, nl);
      start0 = nl + 1;
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const t = pick(JSON.parse(line.slice(6)) as Record<string, unknown>);
      if (t) {
        tokens += t;
        lastMs = performance.now() - start;
        if (Number.isNaN(firstMs)) firstMs = lastMs;
      }
    }
    buf = buf.slice(start0);
  }
  if (tokens.length !== TOKENS * 4) throw new Error(`expected ${TOKENS * 4} characters, got ${tokens.length}`);
  return { firstMs, lastMs, endMs: performance.now() - start };
}

const openaiToken = (e: Record<string, unknown>) => (e.choices as { delta?: { content?: string } }[] | undefined)?.[0]?.delta?.content;
const difyToken = (e: Record<string, unknown>) => (e.event === 'message' ? (e.answer as string) : undefined);

const direct = async (base: string): Promise<Timing> => {
  const t0 = performance.now();
  const res = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-bench', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Write about bench in a friendly tone,  lines. ' }] }),
  });
  return timed(t0, res, openaiToken);
};

const through = async (server: { url: string; apiKey: string }): Promise<Timing> => {
  const t0 = performance.now();
  const res = await fetch(`${server.url}/v1/completion-messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { topic: 'bench' }, user: 'bench', response_mode: 'streaming' }),
  });
  return timed(t0, res, difyToken);
};

const startUpstream = () => startChild<{ baseUrl: string }>('fake-upstream-process.ts', { reply: 'tok '.repeat(TOKENS), chunkSize: 4 });

/**
 * One launch: a fresh upstream and a fresh Dovetail, then `PAIRS` pairs — the answer read directly
 * and through `POST /v1/completion-messages` (streaming), the order alternating pair by pair.
 */
async function launch(): Promise<{ direct: Timing[]; through: Timing[] }> {
  // Upstream, server and client each have their own process, as in a deployment.
  const upstream = await startUpstream();
  const server = await startChild<{ url: string; apiKey: string }>('server-process.ts', { OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: upstream.info.baseUrl });
  const d: Timing[] = [];
  const o: Timing[] = [];
  try {
    for (let i = 0; i < WARMUP; i++) {
      await direct(upstream.info.baseUrl);
      await through(server.info);
    }
    for (let i = 0; i < PAIRS; i++) {
      if (i % 2 === 0) {
        d.push(await direct(upstream.info.baseUrl));
        o.push(await through(server.info));
      } else {
        o.push(await through(server.info));
        d.push(await direct(upstream.info.baseUrl));
      }
    }
  } finally {
    server.stop();
    upstream.stop();
  }
  return { direct: d, through: o };
}

/** Context: the same answer through a byte relay and through a piping HTTP proxy, each against its own direct runs. */
async function context(): Promise<{ direct: Timing[]; piped: Timing[]; relayed: Timing[] }> {
  const upstream = await startUpstream();
  const proxy = await startChild<{ baseUrl: string }>('pipe-proxy-process.ts', { upstream: upstream.info.baseUrl });
  const relay = await startChild<{ baseUrl: string }>('tcp-relay-process.ts', { upstream: upstream.info.baseUrl });
  const out = { direct: [] as Timing[], piped: [] as Timing[], relayed: [] as Timing[] };
  try {
    for (let i = 0; i < PAIRS + WARMUP; i++) {
      const dt = await direct(upstream.info.baseUrl);
      const pt = await direct(proxy.info.baseUrl);
      const rt = await direct(relay.info.baseUrl);
      if (i < WARMUP) continue;
      out.direct.push(dt);
      out.piped.push(pt);
      out.relayed.push(rt);
    }
  } finally {
    proxy.stop();
    relay.stop();
    upstream.stop();
  }
  return out;
}

/**
 * A 2,000-token streamed answer from the local OpenAI-compatible upstream at full speed, read
 * directly and through Dovetail. How fast a pair of processes happens to run together varies from
 * one start to the next (on the 2-core benchmark machine, one launch's last-token ratio ranged from
 * 0.99× to 1.18× between runs of the same code), so the pairs come from `LAUNCHES` fresh starts and
 * the figures are medians over all of them; each launch's own ratio is printed too.
 */
export async function run(): Promise<void> {
  const d: Timing[] = [];
  const o: Timing[] = [];
  const perLaunch: string[] = [];
  for (let l = 0; l < LAUNCHES; l++) {
    const r = await launch();
    d.push(...r.direct);
    o.push(...r.through);
    perLaunch.push(`${fmt(median(r.through.map((t) => t.lastMs)) / median(r.direct.map((t) => t.lastMs)))}× (${fmt(median(r.through.map((t, i) => t.firstMs - r.direct[i]!.firstMs)))} ms)`);
  }
  const c = await context();
  const med = (ts: Timing[], k: keyof Timing) => median(ts.map((t) => t[k]));
  const row = (name: string, ts: Timing[], note = '') =>
    `${name.padEnd(23)}first token ${fmt(med(ts, 'firstMs'))} ms   last token ${fmt(med(ts, 'lastMs'))} ms   stream end ${fmt(med(ts, 'endMs'))} ms${note}`;
  const hop = (ts: Timing[]) => `first token +${fmt(median(ts.map((t, i) => t.firstMs - c.direct[i]!.firstMs)))} ms median over direct, last token ${fmt(med(ts, 'lastMs') / med(c.direct, 'lastMs'))}× direct`;
  process.stdout.write(
    [
      `${TOKENS}-token stream, ${LAUNCHES} launches × ${PAIRS} pairs (direct and through Dovetail, alternating); medians over all ${d.length} pairs`,
      row('direct upstream', d),
      row('through Dovetail', o),
      `first-token overhead   ${fmt(median(o.map((t, i) => t.firstMs - d[i]!.firstMs)))} ms median (target ≤ 3 ms)`,
      `first-token ratio      ${fmt(med(o, 'firstMs') / med(d, 'firstMs'))}×`,
      `last-token ratio       ${fmt(med(o, 'lastMs') / med(d, 'lastMs'))}× direct (target ≤ 1.15×)`,
      `stream-end ratio       ${fmt(med(o, 'endMs') / med(d, 'endMs'))}× direct (Dovetail's message_end follows storing the message)`,
      `per launch             last-token ratio (first-token overhead): ${perLaunch.join(', ')}`,
      `context, against its own ${c.direct.length} direct runs:`,
      row('  direct upstream', c.direct),
      row('  TCP relay', c.relayed, '   (one extra process hop, bytes only)'),
      row('  node:http pipe proxy', c.piped, '   (one extra hop through an HTTP proxy that only pipes)'),
      `  TCP relay            ${hop(c.relayed)}`,
      `  pipe proxy           ${hop(c.piped)}`,
    ].join('\n') + '\n',
  );
}
