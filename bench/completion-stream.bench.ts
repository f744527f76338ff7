import { fmt, median } from './lib.js';
import { startChild } from './child.js';

const TOKENS = 2000;
const RUNS = 60;
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

/**
 * A 2,000-token streamed answer from the local OpenAI-compatible upstream at full speed, read
 * directly and through `POST /v1/completion-messages` (streaming), alternating, same process.
 */
export async function run(): Promise<void> {
  // Upstream, server and client each have their own process, as in a deployment.
  const upstream = await startChild<{ baseUrl: string }>('fake-upstream-process.ts', { reply: 'tok '.repeat(TOKENS), chunkSize: 4 });
  const fake = upstream.info;
  const server = await startChild<{ url: string; apiKey: string }>('server-process.ts', { OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: fake.baseUrl });
  const proxy = await startChild<{ baseUrl: string }>('pipe-proxy-process.ts', { upstream: fake.baseUrl });
  const relay = await startChild<{ baseUrl: string }>('tcp-relay-process.ts', { upstream: fake.baseUrl });
  const s = { url: server.info.url };
  const apiKey = server.info.apiKey;

  const direct = async (base = fake.baseUrl): Promise<Timing> => {
    const t0 = performance.now();
    const res = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-bench', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Write about bench in a friendly tone,  lines. ' }] }),
    });
    return timed(t0, res, openaiToken);
  };
  const through = async (): Promise<Timing> => {
    const t0 = performance.now();
    const res = await fetch(`${s.url}/v1/completion-messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { topic: 'bench' }, user: 'bench', response_mode: 'streaming' }),
    });
    return timed(t0, res, difyToken);
  };

  const piped = () => direct(proxy.info.baseUrl);
  const relayed = () => direct(relay.info.baseUrl);
  for (let i = 0; i < WARMUP; i++) {
    await direct();
    await piped();
    await relayed();
    await through();
  }
  const d: Timing[] = [];
  const p: Timing[] = [];
  const r: Timing[] = [];
  const o: Timing[] = [];
  for (let i = 0; i < RUNS; i++) {
    d.push(await direct());
    p.push(await piped());
    r.push(await relayed());
    o.push(await through());
  }
  const med = (ts: Timing[], k: keyof Timing) => median(ts.map((t) => t[k]));
  const row = (name: string, ts: Timing[], context = '') =>
    `${name.padEnd(23)}first token ${fmt(med(ts, 'firstMs'))} ms   last token ${fmt(med(ts, 'lastMs'))} ms   stream end ${fmt(med(ts, 'endMs'))} ms${context}`;
  const overheads = o.map((t, i) => t.firstMs - d[i]!.firstMs);
  process.stdout.write(
    [
      `${TOKENS}-token stream, ${RUNS} runs each (medians)`,
      row('direct upstream', d),
      row('through Dovetail', o),
      row('TCP relay', r, '   (context: one extra process hop, bytes only)'),
      row('node:http pipe proxy', p, '   (context: one extra hop through an HTTP proxy that only pipes)'),
      `first-token overhead   ${fmt(median(overheads))} ms median (target ≤ 3 ms)`,
      `first-token ratio      ${fmt(med(o, 'firstMs') / med(d, 'firstMs'))}×`,
      `last-token ratio       ${fmt(med(o, 'lastMs') / med(d, 'lastMs'))}× direct (target ≤ 1.15×)`,
      `stream-end ratio       ${fmt(med(o, 'endMs') / med(d, 'endMs'))}× direct (Dovetail's message_end follows storing the message)`,
      `vs the TCP relay       first token +${fmt(median(o.map((t, i) => t.firstMs - r[i]!.firstMs)))} ms median, last token ${fmt(med(o, 'lastMs') / med(r, 'lastMs'))}×`,
      `vs the pipe proxy      first token +${fmt(median(o.map((t, i) => t.firstMs - p[i]!.firstMs)))} ms median, last token ${fmt(med(o, 'lastMs') / med(p, 'lastMs'))}×`,
    ].join('\n') + '\n',
  );
  server.stop();
  proxy.stop();
  relay.stop();
  upstream.stop();
}
