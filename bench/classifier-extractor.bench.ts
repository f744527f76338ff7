import { startChild } from './child.js';
import { benchServer, fmt, median } from './lib.js';
import { startFakeOpenAI, type FakeBehaviour, type RecordedRequest } from '../test/helpers/fake-openai.js';
import { classifierExtractorChatflow } from '../test/helpers/llm-nodes-apps.js';

const TURNS = 60;
const WARMUP = 10;
const CALLS_PER_TURN = 3;

/** The fake model answers every call of the turn: the class as JSON, the extraction as a tool call (when offered tools). */
const BEHAVIOUR: FakeBehaviour = {
  reply: '{"keywords": ["trip"], "category_id": "order", "category_name": "Order"}',
  toolCalls: [{ name: 'extract_parameters', arguments: '{"city": "Tromsø", "days": 3}' }],
  chunkSize: 8,
};

const QUERY = 'Three days in Tromsø, please';

/** The three requests one turn sends upstream, recorded from a turn against an in-process fake. */
async function recordTurn(): Promise<RecordedRequest[]> {
  const fake = await startFakeOpenAI(BEHAVIOUR);
  const s = await benchServer({ OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: fake.baseUrl });
  try {
    const app = await s.runtime.apps.importDsl(classifierExtractorChatflow());
    const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
    await turn({ url: s.url, apiKey });
    if (fake.requests.length !== CALLS_PER_TURN) throw new Error(`a turn made ${fake.requests.length} model calls, expected ${CALLS_PER_TURN}`);
    return [...fake.requests];
  } finally {
    await s.close();
    await fake.close();
  }
}

/** One chatflow turn through Dovetail (blocking), checked. */
async function turn(server: { url: string; apiKey: string }): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(`${server.url}/v1/chat-messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: {}, query: QUERY, user: 'bench', response_mode: 'blocking' }),
  });
  const body = (await r.json()) as { answer?: string };
  const ms = performance.now() - t0;
  if (body.answer !== BEHAVIOUR.reply) throw new Error(`unexpected answer: ${JSON.stringify(body)}`);
  return ms;
}

/** The same three requests sent straight to the fake model, one after another, each read to its end. */
async function directTurn(baseUrl: string, requests: readonly RecordedRequest[]): Promise<number> {
  const t0 = performance.now();
  for (const req of requests) {
    const res = await fetch(`${baseUrl}${req.path.replace(/^\/v1/, '')}`, { method: 'POST', headers: { authorization: 'Bearer sk-bench', 'content-type': 'application/json' }, body: JSON.stringify(req.body) });
    const text = await res.text();
    if (!text.includes('[DONE]')) throw new Error('the direct stream did not finish');
  }
  return performance.now() - t0;
}

/**
 * A classifier → extractor → LLM chatflow turn (three model calls) against the local fake model
 * (its own process), through Dovetail (its own process) and — the baseline — the very same three
 * requests sent to the fake model directly, alternating turn by turn. Dovetail's added time per
 * model call is (through − direct) / 3: prompt building, the run's event log and snapshots, the
 * conversation and message rows, HTTP in and out.
 */
export async function run(): Promise<void> {
  const requests = await recordTurn();
  const upstream = await startChild<{ baseUrl: string }>('fake-upstream-process.ts', BEHAVIOUR);
  const server = await startChild<{ url: string; apiKey: string }>('chatflow-server-process.ts', {
    env: { OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: upstream.info.baseUrl },
    dsl: classifierExtractorChatflow(),
  });
  const direct: number[] = [];
  const through: number[] = [];
  try {
    for (let i = 0; i < WARMUP + TURNS; i++) {
      let d: number;
      let t: number;
      if (i % 2 === 0) {
        d = await directTurn(upstream.info.baseUrl, requests);
        t = await turn(server.info);
      } else {
        t = await turn(server.info);
        d = await directTurn(upstream.info.baseUrl, requests);
      }
      if (i < WARMUP) continue;
      direct.push(d);
      through.push(t);
    }
  } finally {
    server.stop();
    upstream.stop();
  }
  const d = median(direct);
  const t = median(through);
  const added = median(through.map((x, i) => x - direct[i]!)) / CALLS_PER_TURN;
  process.stdout.write(
    [
      `classifier → extractor → LLM chatflow turn (${CALLS_PER_TURN} model calls), blocking, ${TURNS} turns after ${WARMUP} warm-up; medians`,
      `fake model called directly (the same ${CALLS_PER_TURN} requests in turn), baseline  ${fmt(d)} ms per turn   ${fmt(d / CALLS_PER_TURN)} ms per call`,
      `through Dovetail (POST /v1/chat-messages)                          ${fmt(t)} ms per turn   ${fmt(t / CALLS_PER_TURN)} ms per call`,
      `Dovetail's added time per model call                               ${fmt(added)} ms (median of per-turn differences / ${CALLS_PER_TURN})`,
    ].join('\n') + '\n',
  );
}
