import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cliOn, sharedData, startCluster, type Cluster, type RoleProcess, type SharedData } from '../helpers/cluster.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * Faults of real processes on PostgreSQL and Redis (BullMQ): a worker that stalls past its lease
 * and takes its own run back.
 */
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;
const ready = Boolean(pgUrl && redisUrl);

const SLOW = workflowDsl(
  [startNode(), llmNode('llm', 'go'), templateNode('after', 'after {{ t }}', { t: ['llm', 'text'] }), endNode({ a: ['after', 'output'] })],
  [['start', 'llm'], ['llm', 'after'], ['after', 'end']],
);
/** What the fake model answers: streamed over about three leases, so that a pause lands inside the node and a lost lease shows. */
const REPLY = 'w'.repeat(120);
const LEASE_SECONDS = 1;

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const json = (key: string) => ({ ...auth(key), 'content-type': 'application/json' });

/** Reads `stream` until `until` holds for the frames read so far. */
async function readUntil(stream: AsyncIterator<SseFrame>, frames: SseFrame[], until: (events: Record<string, unknown>[]) => boolean): Promise<void> {
  while (!until(dataFrames(frames))) {
    const n = await stream.next();
    if (n.done) return;
    frames.push(n.value);
  }
}

describe.skipIf(!ready)('one BullMQ worker on PostgreSQL that stalls past its run lease (SIGSTOP, then SIGCONT)', { timeout: 120_000 }, () => {
  let fake: FakeOpenAI;
  let data: SharedData;
  let cluster: Cluster;
  let key = '';

  beforeAll(async () => {
    fake = await startFakeOpenAI({ reply: REPLY, chunkSize: 1, delayMs: 20 });
    data = sharedData({
      REDIS_URL: redisUrl!,
      REDIS_KEY_PREFIX: `ft${Math.random().toString(36).slice(2, 8)}:`,
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: fake.baseUrl,
      QUEUE_POLL_MS: '50',
      RUN_LEASE_SECONDS: String(LEASE_SECONDS),
      LOG_LEVEL: 'info',
    });
    const file = path.join(data.dataDir, 'slow.yml');
    writeFileSync(file, SLOW);
    key = (JSON.parse(await cliOn(data, ['--init', 'app', 'import', file, '--json'])) as { api_key: string }).api_key;
    cluster = await startCluster(data, { apis: 1, workers: 1 });
  }, 60_000);
  afterAll(async () => {
    for (const w of cluster?.workers ?? []) if (w.alive()) process.kill(w.pid, 'SIGCONT');
    await cluster?.stop();
    await data?.remove();
    await fake?.close();
  });

  it('takes its own run back and finishes it, 10 times in a row', async () => {
    const api: RoleProcess = cluster.apis[0]!;
    const worker: RoleProcess = cluster.workers[0]!;
    for (let i = 0; i < 10; i++) {
      const r = await fetch(`${api.api}/workflows/run`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: `u${i}` }) });
      expect(r.status).toBe(200);
      const stream = readSse(r)[Symbol.asyncIterator]();
      const frames: SseFrame[] = [];
      // well inside the LLM node (longer than a stalled-job check interval, half a lease), the worker
      // stalls past its lease, then goes on
      await readUntil(stream, frames, (events) => events.filter((e) => e.event === 'text_chunk').length >= 35);
      const runId = String(dataFrames(frames)[0]!.workflow_run_id);
      process.kill(worker.pid, 'SIGSTOP');
      await sleep(LEASE_SECONDS * 1600);
      process.kill(worker.pid, 'SIGCONT');
      await readUntil(stream, frames, (events) => events.some((e) => e.event === 'workflow_finished'));
      const end = dataFrames(frames).at(-1);
      expect(end, `run ${i + 1} of 10 (${runId})`).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { a: `after ${REPLY}` } } });
      const row = (await (await fetch(`${api.api}/workflows/run/${runId}`, { headers: auth(key) })).json()) as { status: string };
      expect(row.status).toBe('succeeded');
    }
    expect(worker.alive()).toBe(true);
  });
});
