import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { cliOn, sharedData, startCluster, type Cluster, type RoleProcess, type SharedData } from '../helpers/cluster.js';
import { startS3, type S3TestServer } from '../helpers/s3-server.js';
import { imageChatApp } from '../helpers/apps.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { dataFrames, parseSse, readSse, type SseFrame } from '../helpers/sse.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';
import pg from 'pg';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';

/**
 * Two api-role and two worker-role processes (`dovetail serve --role …`, each with a data dir of
 * its own) on one PostgreSQL schema, one Redis and one S3 bucket: what any instance accepts, any
 * other serves.
 */
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;
const ready = Boolean(pgUrl && redisUrl);
if (!ready) process.stdout.write('[cluster] NOTICE: the multi-process tests need TEST_DATABASE_URL and TEST_REDIS_URL (PostgreSQL project); skipped.\n');

const IMAGE_CHAT = imageChatApp('Viewer');
const SLOW = workflowDsl(
  [startNode(), llmNode('llm', 'go'), templateNode('after', 'after {{ t }}', { t: ['llm', 'text'] }), endNode({ a: ['after', 'output'] })],
  [['start', 'llm'], ['llm', 'after'], ['after', 'end']],
);

let s3: S3TestServer;
let fake: FakeOpenAI;
let emb: EmbeddingsServer;
let data: SharedData;
let cluster: Cluster;
const keys: Record<string, string> = {};

beforeAll(async () => {
  if (!ready) return;
  s3 = await startS3();
  emb = await startEmbeddings();
  fake = await startFakeOpenAI({ reply: 'w'.repeat(4000), chunkSize: 1, delayMs: 10 });
  data = sharedData({ ...s3.env(), REDIS_URL: redisUrl!, REDIS_KEY_PREFIX: `cl${Math.random().toString(36).slice(2, 8)}:`, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.baseUrl, QUEUE_POLL_MS: '50', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_MODEL: 'test-embed', EMBEDDINGS_BATCH_SIZE: '2',
    // short leases: a killed worker's jobs are taken over within seconds; info logs name the run's worker
    RUN_LEASE_SECONDS: '2', QUEUE_LEASE_MS: '2000', LOG_LEVEL: 'info' });
  const imports: Record<string, string> = { chat: IMAGE_CHAT, slow: SLOW };
  for (const [name, yaml] of Object.entries(imports)) {
    const file = path.join(data.dataDir, `${name}.yml`);
    writeFileSync(file, yaml);
    keys[name] = (JSON.parse(await cliOn(data, ['--init', 'app', 'import', file, '--json'])) as { api_key: string }).api_key;
  }
  keys.approval = (JSON.parse(await cliOn(data, ['app', 'import', path.join(PROJECT_ROOT, 'examples', 'workflow-approval.yml'), '--json'])) as { api_key: string }).api_key;
  keys.dataset = (JSON.parse(await cliOn(data, ['key', 'create', '--dataset', '--json'])) as { api_key: string }).api_key;
  cluster = await startCluster(data, { apis: 2, workers: 2 });
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  await data?.remove();
  await fake?.close();
  await emb?.close();
  await s3?.close();
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const json = (key: string) => ({ ...auth(key), 'content-type': 'application/json' });
const api = (i: 0 | 1): RoleProcess => cluster.apis[i]!;

/** A counter of a process's `/metrics` (0 when it has no sample yet). */
async function metric(p: RoleProcess, name: string): Promise<number> {
  const text = await (await fetch(`${p.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

describe.skipIf(!ready)('2 api + 2 worker processes on PostgreSQL, Redis and S3', { timeout: 120_000 }, () => {
  it('a file uploaded through api 1 is used by a message and previewed through api 2', async () => {
    const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('shared through the bucket')]);
    const fd = new FormData();
    fd.append('file', new Blob([new Uint8Array(PNG)], { type: 'image/png' }), 'pic.png');
    fd.append('user', 'ann');
    const up = await fetch(`${api(0).api}/files/upload`, { method: 'POST', headers: auth(keys.chat!), body: fd });
    expect(up.status).toBe(201);
    const { id } = (await up.json()) as { id: string };
    const chat = await fetch(`${api(0).api}/chat-messages`, {
      method: 'POST',
      headers: json(keys.chat!),
      body: JSON.stringify({ inputs: {}, query: 'look', user: 'ann', response_mode: 'blocking', files: [{ type: 'image', transfer_method: 'local_file', upload_file_id: id }] }),
    });
    expect(chat.status).toBe(200);
    const preview = await fetch(`${api(1).api}/files/${id}/preview`, { headers: auth(keys.chat!) });
    expect(preview.status).toBe(200);
    expect(Buffer.from(await preview.arrayBuffer()).equals(PNG)).toBe(true);
  });

  it('a streaming run started on api 1 is read on api 2 and stopped from api 2', async () => {
    const r = await fetch(`${api(0).api}/workflows/run`, { method: 'POST', headers: json(keys.slow!), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
    expect(r.status).toBe(200);
    const first = readSse(r)[Symbol.asyncIterator]();
    let runId = '';
    let taskId = '';
    for (;;) {
      const n = await first.next();
      if (n.done) throw new Error('the stream on api 1 ended early');
      if (n.value.kind === 'data' && n.value.data.event === 'text_chunk') {
        runId = String(n.value.data.workflow_run_id);
        taskId = String(n.value.data.task_id);
        break;
      }
    }
    // api 2 replays the run from its log and tails it
    const watch = await fetch(`${api(1).api}/workflow/${runId}/events?user=u&include_state_snapshot=true`, { headers: auth(keys.slow!) });
    expect(watch.status).toBe(200);
    const second = readSse(watch)[Symbol.asyncIterator]();
    const seen: SseFrame[] = [];
    while (!seen.some((f) => f.kind === 'data' && f.data.event === 'text_chunk')) {
      const n = await second.next();
      if (n.done) throw new Error('the stream on api 2 ended early');
      seen.push(n.value);
    }
    const stop = await fetch(`${api(1).api}/workflows/tasks/${taskId}/stop`, { method: 'POST', headers: json(keys.slow!), body: JSON.stringify({ user: 'u' }) });
    expect(stop.status).toBe(200);
    for (let n = await second.next(); !n.done; n = await second.next()) seen.push(n.value);
    const events = dataFrames(seen);
    expect(events[0]).toMatchObject({ event: 'workflow_started', workflow_run_id: runId });
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'stopped' } });
    // api 1's client sees the same end
    const rest: SseFrame[] = [];
    for (let n = await first.next(); !n.done; n = await first.next()) rest.push(n.value);
    expect(dataFrames(rest).at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'stopped' } });
    const status = (await (await fetch(`${api(1).api}/workflows/run/${runId}`, { headers: auth(keys.slow!) })).json()) as { status: string };
    expect(status.status).toBe('stopped');
  });

  it('a document uploaded through api 1 is indexed by a worker and retrieved through api 2', async () => {
    const call = async (p: RoleProcess, method: string, route: string, body?: unknown) => {
      const r = await fetch(`${p.api}${route}`, { method, headers: json(keys.dataset!), body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as Record<string, any> };
    };
    const ds = await call(api(0), 'POST', '/datasets', { name: 'cluster', indexing_technique: 'economy' });
    const fd = new FormData();
    fd.append('data', JSON.stringify({ indexing_technique: 'economy', process_rule: { mode: 'automatic' } }));
    fd.append('file', new Blob([new Uint8Array(Buffer.from('Cluster nodes share one bucket for uploaded files.'))], { type: 'text/plain' }), 'cluster.txt');
    const doc = await fetch(`${api(0).api}/datasets/${ds.body.id}/document/create-by-file`, { method: 'POST', headers: auth(keys.dataset!), body: fd });
    expect(doc.status).toBe(200);
    const { batch } = (await doc.json()) as { batch: string };
    await vi.waitFor(async () => {
      const st = await call(api(1), 'GET', `/datasets/${ds.body.id}/documents/${batch}/indexing-status`);
      expect(st.body.data[0].indexing_status).toBe('completed');
    }, { timeout: 30_000, interval: 100 });
    const hits = await call(api(1), 'POST', `/datasets/${ds.body.id}/retrieve`, { query: 'bucket uploaded files' });
    expect(hits.body.records.map((r: { segment: { content: string } }) => r.segment.content)).toEqual(['Cluster nodes share one bucket for uploaded files.']);
    // a worker indexed it, no api process did
    const indexed = async (p: RoleProcess) => metric(p, 'dovetail_indexed_segments_total');
    expect(await indexed(api(0)) + (await indexed(api(1)))).toBe(0);
    expect(await indexed(cluster.workers[0]!) + (await indexed(cluster.workers[1]!))).toBe(1);
  });

  it('a form submitted through api 2 resumes the run api 1 paused', async () => {
    const r = await fetch(`${api(0).api}/workflows/run`, { method: 'POST', headers: json(keys.approval!), body: JSON.stringify({ inputs: { draft: 'Ship it' }, response_mode: 'streaming', user: 'erin' }) });
    const events = dataFrames(parseSse(await r.text()));
    expect(events.map((e) => e.event).slice(-2)).toEqual(['human_input_required', 'workflow_paused']);
    const token = String((events.at(-2)!.data as { form_token: string }).form_token);
    const runId = String(events[0]!.workflow_run_id);
    const submit = await fetch(`${api(1).api}/form/human_input/${token}`, { method: 'POST', headers: json(keys.approval!), body: JSON.stringify({ inputs: { comment: 'great' }, action: 'approve', user: 'erin' }) });
    expect(submit.status).toBe(200);
    await vi.waitFor(async () => {
      const run = (await (await fetch(`${api(0).api}/workflows/run/${runId}`, { headers: auth(keys.approval!) })).json()) as { status: string; outputs: Record<string, unknown> };
      expect(run).toMatchObject({ status: 'succeeded', outputs: { decision: 'approved: great' } });
    }, { timeout: 30_000, interval: 100 });
  });

  it('a worker killed (SIGKILL) mid-run: the other worker finishes the run, the log holds each event once, and the stream on api 1 goes on', async () => {
    const before = fake.behaviour;
    fake.behaviour = { reply: 'w'.repeat(400), chunkSize: 1, delayMs: 10 };
    onTestFinished(() => void (fake.behaviour = before));
    const r = await fetch(`${api(0).api}/workflows/run`, { method: 'POST', headers: json(keys.slow!), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'k' }) });
    expect(r.status).toBe(200);
    const stream = readSse(r)[Symbol.asyncIterator]();
    const frames: SseFrame[] = [];
    while (dataFrames(frames).filter((e) => e.event === 'text_chunk').length < 3) {
      const n = await stream.next();
      if (n.done) throw new Error('the stream on api 1 ended early');
      frames.push(n.value);
    }
    const runId = String(dataFrames(frames)[0]!.workflow_run_id);
    const executing = new RegExp(`"runId":"${runId}"[^\\n]*executing run`);
    const owner = await vi.waitFor(() => {
      const w = cluster.workers.find((p) => executing.test(p.stdout()));
      expect(w).toBeDefined();
      return w!;
    });
    const other = cluster.workers.find((p) => p !== owner)!;
    expect(await owner.kill('SIGKILL')).toBe('SIGKILL');
    // the same connection goes on: the other worker takes the run over and api 1 tails its log
    for (let n = await stream.next(); !n.done; n = await stream.next()) frames.push(n.value);
    const events = dataFrames(frames);
    expect(events.filter((e) => e.event === 'workflow_started')).toHaveLength(1);
    expect(events.filter((e) => e.event === 'workflow_finished')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { a: `after ${'w'.repeat(400)}` } } });
    expect(other.stdout()).toMatch(executing);
    // the stored log: each seq once from 1, one start, one end, each node finished once
    const db = new pg.Client({ connectionString: data.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ seq: string; event: string; payload: string }>(`select seq, event, payload from "${data.schema}".workflow_run_events where run_id = $1 order by seq`, [runId]);
      expect(rows.map((e) => Number(e.seq))).toEqual(rows.map((_e, i) => i + 1));
      expect(rows.filter((e) => e.event === 'workflow_started')).toHaveLength(1);
      expect(rows.filter((e) => e.event === 'workflow_finished')).toHaveLength(1);
      expect(rows.at(-1)!.event).toBe('workflow_finished');
      const finishedNodes = rows.filter((e) => e.event === 'node_finished').map((e) => (JSON.parse(e.payload) as { data: { node_id: string } }).data.node_id);
      expect(finishedNodes.sort()).toEqual(['after', 'end', 'llm', 'start']);
    } finally {
      await db.end();
    }
    // back to two workers for what follows
    cluster.workers.splice(cluster.workers.indexOf(owner), 1);
    await cluster.add('worker');
  });

  it('an indexing job whose worker is killed (SIGKILL) mid-job is finished by the other worker, without duplicate segments', async () => {
    const call = async (p: RoleProcess, method: string, route: string, body?: unknown) => {
      const r = await fetch(`${p.api}${route}`, { method, headers: json(keys.dataset!), body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as Record<string, any> };
    };
    const ds = await call(api(0), 'POST', '/datasets', { name: 'crash', indexing_technique: 'high_quality' });
    expect(ds.status).toBe(200);
    const lines = ['alpha ships on monday', 'beta ships on tuesday', 'gamma ships on wednesday', 'delta ships on thursday', 'epsilon ships on friday'];
    emb.mode = 'hold';
    onTestFinished(() => emb.release());
    const fd = new FormData();
    fd.append('data', JSON.stringify({ indexing_technique: 'high_quality', process_rule: { mode: 'automatic' } }));
    fd.append('file', new Blob([new Uint8Array(Buffer.from(lines.join('\n')))], { type: 'text/plain' }), 'ships.txt');
    const doc = await fetch(`${api(0).api}/datasets/${ds.body.id}/document/create-by-file`, { method: 'POST', headers: auth(keys.dataset!), body: fd });
    expect(doc.status).toBe(200);
    const { batch, document } = (await doc.json()) as { batch: string; document: { id: string } };
    // a worker is mid-job: its embeddings call is held
    await emb.waitHeld();
    const indexing = new RegExp(`"document":"${document.id}"[^\\n]*indexing document`);
    const owner = await vi.waitFor(() => {
      const w = cluster.workers.find((p) => indexing.test(p.stdout()));
      expect(w).toBeDefined();
      return w!;
    });
    const other = cluster.workers.find((p) => p !== owner)!;
    expect(await owner.kill('SIGKILL')).toBe('SIGKILL');
    emb.release();
    await vi.waitFor(async () => {
      const st = await call(api(1), 'GET', `/datasets/${ds.body.id}/documents/${batch}/indexing-status`);
      expect(st.body.data[0].indexing_status).toBe('completed');
    }, { timeout: 60_000, interval: 200 });
    expect(other.stdout()).toMatch(indexing);
    const segs = await call(api(1), 'GET', `/datasets/${ds.body.id}/documents/${document.id}/segments?limit=100`);
    expect(segs.body.data.map((s: { content: string }) => s.content).sort()).toEqual([...lines].sort());
    const hits = await call(api(1), 'POST', `/datasets/${ds.body.id}/retrieve`, { query: 'gamma wednesday', retrieval_model: { search_method: 'keyword_search', top_k: 10 } });
    expect(hits.body.records.map((r: { segment: { content: string } }) => r.segment.content)).toContain('gamma ships on wednesday');
    cluster.workers.splice(cluster.workers.indexOf(owner), 1);
    await cluster.add('worker');
  });
});
