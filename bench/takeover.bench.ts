import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { cliOn, sharedData, startCluster } from '../test/helpers/cluster.js';
import { startFakeOpenAI } from '../test/helpers/fake-openai.js';
import { dataFrames, readSse, type SseFrame } from '../test/helpers/sse.js';
import { endNode, llmNode, startNode, workflowDsl } from '../test/helpers/workflow-dsl.js';
import { fmt, median } from './lib.js';

const TRIALS = Number(process.env.BENCH_TAKEOVER_TRIALS) || 3;
const LEASE_SECONDS = Number(process.env.BENCH_RUN_LEASE_SECONDS) || 5;

/**
 * How long after its worker is killed (SIGKILL) a run is taken over by the other worker, beside
 * RUN_LEASE_SECONDS and the documented bound (1.5 leases): one api and two worker processes, on
 * PostgreSQL and Redis when BENCH_DATABASE_URL and BENCH_REDIS_URL are set (BullMQ), else on one
 * SQLite file with the embedded queue.
 */
export async function run(): Promise<void> {
  const pg = process.env.BENCH_DATABASE_URL;
  const redis = process.env.BENCH_REDIS_URL;
  if (pg) process.env.TEST_DATABASE_URL = pg;
  const fake = await startFakeOpenAI({ reply: 'w'.repeat(2000), chunkSize: 1, delayMs: 10 });
  const data = sharedData({
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: fake.baseUrl,
    RUN_LEASE_SECONDS: String(LEASE_SECONDS),
    QUEUE_POLL_MS: '100',
    LOG_LEVEL: 'info',
    ...(redis ? { REDIS_URL: redis, REDIS_KEY_PREFIX: `bt${Math.random().toString(36).slice(2, 8)}:` } : {}),
  });
  const file = path.join(data.dataDir, 'slow.yml');
  writeFileSync(file, workflowDsl([startNode(), llmNode('llm', 'go'), endNode({ a: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']]));
  const key = (JSON.parse(await cliOn(data, ['--init', 'app', 'import', file, '--json'])) as { api_key: string }).api_key;
  const cluster = await startCluster(data, { apis: 1, workers: 2 });
  const delays: number[] = [];
  try {
    for (let i = 0; i < TRIALS; i++) {
      const r = await fetch(`${cluster.apis[0]!.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: `b${i}` }) });
      const stream = readSse(r)[Symbol.asyncIterator]();
      const frames: SseFrame[] = [];
      while (!dataFrames(frames).some((e) => e.event === 'text_chunk')) frames.push((await stream.next()).value as SseFrame);
      const runId = String(dataFrames(frames)[0]!.workflow_run_id);
      const executing = new RegExp(`"runId":"${runId}"[^\\n]*"epoch":(\\d+)[^\\n]*executing run`);
      const owner = cluster.workers.find((w) => executing.test(w.stdout()))!;
      const other = cluster.workers.find((w) => w !== owner)!;
      const killedAt = performance.now();
      await owner.kill('SIGKILL');
      while (!executing.test(other.stdout())) await new Promise((res) => setTimeout(res, 20));
      delays.push((performance.now() - killedAt) / 1000);
      for (let n = await stream.next(); !n.done; n = await stream.next()) frames.push(n.value);
      cluster.workers.splice(cluster.workers.indexOf(owner), 1);
      await cluster.add('worker');
    }
  } finally {
    await cluster.stop();
    await data.remove();
    await fake.close();
  }
  const queue = redis ? 'BullMQ on Redis' : 'embedded queue';
  process.stdout.write(`run takeover after SIGKILL of its worker (${pg ? 'PostgreSQL' : 'SQLite'}, ${queue}), ${TRIALS} trials:\n`);
  process.stdout.write(`  measured  median ${fmt(median(delays))} s, max ${fmt(Math.max(...delays))} s  (${delays.map((d) => fmt(d)).join(', ')})\n`);
  process.stdout.write(`  RUN_LEASE_SECONDS=${LEASE_SECONDS}: lease ${LEASE_SECONDS} s, documented bound 1.5 × lease = ${fmt(1.5 * LEASE_SECONDS)} s\n`);
}
