/**
 * A paced OpenAI-compatible upstream in its own process for load benchmarks: every streaming
 * `POST /chat/completions` sends its first token after `firstMs`, then `tokens` more tokens
 * `gapMs` apart, a usage chunk and `[DONE]` (SSE), as a slow hosted model does. Options come as
 * JSON in argv[2]; the base URL is sent to the parent over IPC. On the IPC message `'arrivals'` it
 * answers with the arrival times of the requests and the times their first tokens were written
 * (wall clock, ms) and the number of new connections since the last ask.
 */
import { createServer } from 'node:http';

const o = { firstMs: 500, gapMs: 100, tokens: 20, ...(JSON.parse(process.argv[2] ?? '{}') as Partial<{ firstMs: number; gapMs: number; tokens: number }>) };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Wall-clock time (ms since the epoch, sub-millisecond): comparable between processes of one machine. */
const wall = () => performance.timeOrigin + performance.now();
let arrivals: number[] = [];
/** When each request's first token was written (wall clock). */
let firstWrites: number[] = [];
/** New connections since the last ask. */
let connections = 0;
process.on('message', (m) => {
  if (m !== 'arrivals') return;
  process.send?.({ arrivals, firstWrites, connections });
  arrivals = [];
  firstWrites = [];
  connections = 0;
});

const server = createServer((req, res) => {
  arrivals.push(wall());
  let body = '';
  req.on('data', (c: Buffer) => (body += c));
  req.on('end', () => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    void (async () => {
      const id = `chatcmpl-${Math.random().toString(36).slice(2)}`;
      const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: unknown) =>
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'gpt-4o-mini', choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.flushHeaders();
      await sleep(o.firstMs);
      res.write(chunk({ role: 'assistant', content: 'tok0 ' }));
      firstWrites.push(wall());
      for (let i = 1; i <= o.tokens; i++) {
        await sleep(o.gapMs);
        res.write(chunk({ content: `tok${i} ` }));
      }
      res.write(chunk({}, 'stop'));
      res.write(chunk({}, null, { prompt_tokens: 12, completion_tokens: o.tokens + 1, total_tokens: o.tokens + 13 }));
      res.end('data: [DONE]\n\n');
    })();
  });
});
server.on('connection', () => connections++);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const addr = server.address() as { port: number };
  process.send?.({ baseUrl: `http://127.0.0.1:${addr.port}/v1` });
});
process.on('disconnect', () => server.close(() => process.exit(0)));
