/**
 * A streamed model answer's body as Dovetail reads it (`src/llm/upstream-body.ts`: `read()` on the
 * body, no web stream) beside the baseline of the same body read as a web `ReadableStream` (its
 * `stream`, what a `Response` body is), in this process: 200 answers at a time, each 22 SSE chunks
 * written as the HTTP parser hands them on. Prints µs per answer and per body made (the part that
 * falls in a burst's arrivals: the body is made right after its model request is written).
 */
import { UpstreamBody } from '../src/llm/upstream-body.js';
import { fmt, median } from './lib.js';

const ANSWERS = 20_000;
const AT_ONCE = 200;
const CHUNKS = 22;
const input = { pause: () => undefined, resume: () => undefined, abort: () => undefined };
const chunk = Buffer.from('data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "}}]}\n\n');

/** One answer: the parser writes its chunks (one per network read), the reader reads to the end. */
async function answer(asWebStream: boolean): Promise<void> {
  const body = new UpstreamBody(input, () => undefined);
  const reader = asWebStream ? body.stream.getReader() : body;
  const reading = (async () => {
    for (;;) if ((await reader.read()).done) return;
  })();
  for (let i = 0; i < CHUNKS; i++) {
    body.write(chunk);
    // the next network read comes after this one's microtasks (where the chunk is handed on)
    await Promise.resolve();
    await Promise.resolve();
  }
  body.end();
  await reading;
}

/** µs per answer, answers read `AT_ONCE` at a time. */
async function perAnswer(asWebStream: boolean): Promise<number> {
  const t0 = performance.now();
  for (let k = 0; k < ANSWERS / AT_ONCE; k++) await Promise.all(Array.from({ length: AT_ONCE }, () => answer(asWebStream)));
  return ((performance.now() - t0) / ANSWERS) * 1000;
}

/** µs to make a body (and, for the baseline, its web stream), `ANSWERS` made and kept. */
function perBody(asWebStream: boolean): number {
  const kept: unknown[] = [];
  const t0 = performance.now();
  for (let i = 0; i < ANSWERS; i++) {
    const body = new UpstreamBody(input, () => undefined);
    kept.push(asWebStream ? body.stream : body);
  }
  return ((performance.now() - t0) / kept.length) * 1000;
}

export async function run(): Promise<void> {
  const direct: number[] = [];
  const web: number[] = [];
  const madeDirect: number[] = [];
  const madeWeb: number[] = [];
  for (let round = 0; round < 5; round++) {
    web.push(await perAnswer(true));
    direct.push(await perAnswer(false));
    madeWeb.push(perBody(true));
    madeDirect.push(perBody(false));
  }
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out(`a streamed answer's body (${CHUNKS} chunks, ${AT_ONCE} answers at a time), median of 5 rounds of ${ANSWERS}:`);
  out(`  read()                        ${fmt(median(direct), 1)} µs per answer, ${fmt(median(madeDirect), 2)} µs to make the body`);
  out(`  baseline: as a web stream     ${fmt(median(web), 1)} µs per answer, ${fmt(median(madeWeb), 2)} µs to make the body and its stream`);
}
