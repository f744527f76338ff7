import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { kbClient } from '../helpers/kb-client.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { responseErrors } from '../helpers/openapi.js';
import { startFakeCrawlers, type FakeCrawlers } from '../helpers/fake-crawlers.js';

/**
 * The knowledge pipeline (issue 43): Dify's own pipeline templates (test/fixtures/dify-pipeline)
 * attached to datasets with the CLI, run over an uploaded file and over pages read through fake
 * Jina Reader and Firecrawl servers; the segments they make are found by `/retrieve`.
 */
const execFileP = promisify(execFile);
const FIXTURES = path.join(PROJECT_ROOT, 'test', 'fixtures', 'dify-pipeline');
const FILE_NODE = '1752479895761';
const JINA_NODE = '1752491761974';
const FIRECRAWL_NODE = '1752565402678';
let s: TestServer;
let crawlers: FakeCrawlers;
let kb: ReturnType<typeof kbClient>;
let key: string;

const PAGES = {
  'https://docs.example.com/otters': { title: 'Otters', description: 'About otters', markdown: '# Otters\n\nSea otters hold hands while they sleep.\n\nThey use stones as tools.' },
  'https://docs.example.com/beavers': { title: 'Beavers', description: 'About beavers', markdown: '# Beavers\n\nBeavers build dams from branches and mud.' },
};

function cli(args: string[]) {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent' };
  delete env.DATABASE_URL;
  if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
  return execFileP(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir });
}
const createPipeline = async (name: string, file: string) => JSON.parse((await cli(['dataset', 'create', '--name', name, '--pipeline', path.join(FIXTURES, file), '--json'])).stdout) as { dataset_id: string; pipeline_id: string; warnings: unknown[] };
const post = (p: string, body: unknown) => fetch(`${s.api}${p}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
const SHARED = { delimiter: '\\n\\n', max_chunk_length: 200, chunk_overlap: 0 };

async function upload(name: string, text: string) {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), name);
  const r = await fetch(`${s.api}/datasets/pipeline/file-upload`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const body = (await r.json()) as Record<string, any>;
  return { status: r.status, body };
}

beforeAll(async () => {
  crawlers = await startFakeCrawlers(PAGES, 'crawl-key');
  s = await startServer({ env: { QUEUE_POLL_MS: '50', SSRF_ALLOW_HOSTS: '127.0.0.1', JINA_API_KEY: 'crawl-key', JINA_BASE_URL: crawlers.url, FIRECRAWL_API_KEY: 'crawl-key', FIRECRAWL_BASE_URL: crawlers.url } });
  key = await s.datasetKey();
  kb = kbClient(s, key);
}, 120_000);
afterAll(async () => {
  await s?.close();
  await crawlers?.close();
});

describe('knowledge pipeline', () => {
  it('a file pipeline (Dify template) runs on an uploaded file, blocking; retrieval finds its segments', async () => {
    const { dataset_id: ds, pipeline_id, warnings } = await createPipeline('Otter files', 'file-general-economy.yml');
    expect(warnings).toEqual([]);
    // the dataset object says a pipeline fills it, as Dify's does
    expect((await kb.call('GET', `/datasets/${ds}`)).body).toMatchObject({ runtime_mode: 'rag_pipeline', pipeline_id, is_published: true });
    const plugins = await fetch(`${s.api}/datasets/${ds}/pipeline/datasource-plugins?is_published=true`, { headers: { authorization: `Bearer ${key}` } });
    const list = await plugins.json();
    expect(responseErrors(`/datasets/{dataset_id}/pipeline/datasource-plugins`, 'get', 200, list)).toEqual([]);
    expect(list).toEqual([expect.objectContaining({ node_id: FILE_NODE, plugin_id: 'langgenius/file', provider_name: 'file', datasource_type: 'local_file', user_input_variables: [], credentials: [] })]);

    const up = await upload('otters.txt', 'Sea otters hold hands while they sleep.\n\nA group of otters is called a raft.');
    expect(up.status).toBe(201);
    expect(responseErrors('/datasets/pipeline/file-upload', 'post', 201, up.body)).toEqual([]);
    expect(up.body).toMatchObject({ name: 'otters.txt', extension: 'txt' });

    const r = await post(`/datasets/${ds}/pipeline/run`, { inputs: SHARED, datasource_type: 'local_file', datasource_info_list: [{ reference: up.body.id, name: 'Otter facts' }], start_node_id: FILE_NODE, is_published: true, response_mode: 'blocking' });
    const body = (await r.json()) as Record<string, any>;
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(responseErrors(`/datasets/{dataset_id}/pipeline/run`, 'post', 200, body)).toEqual([]);
    expect(body.data).toMatchObject({ status: 'succeeded', error: null });

    const docs = await kb.call('GET', `/datasets/${ds}/documents`);
    expect(docs.body.data).toEqual([expect.objectContaining({ name: 'Otter facts', indexing_status: 'completed' })]);
    const segs = await kb.call('GET', `/datasets/${ds}/documents/${docs.body.data[0].id}/segments`);
    expect(segs.body.data.map((x: { content: string }) => x.content)).toEqual(['Sea otters hold hands while they sleep.', 'A group of otters is called a raft.']);
    const hits = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'raft of otters' });
    expect(hits.body.records[0].segment.content).toBe('A group of otters is called a raft.');
  });

  it('a website pipeline (Dify template) crawls through Jina Reader and Firecrawl, streaming Dify events', async () => {
    const { dataset_id: ds } = await createPipeline('Animal pages', 'website-crawl-general-economy.yml');
    // Jina Reader: the datasource node run reads the page
    const node = await post(`/datasets/${ds}/pipeline/datasource/nodes/${JINA_NODE}/run`, { inputs: { jina_url: 'https://docs.example.com/otters', jina_limit: 1 }, datasource_type: 'website_crawl', is_published: true });
    expect(node.headers.get('content-type')).toMatch(/text\/event-stream/);
    const frames = dataFrames(parseSse(await node.text()));
    const done = frames.find((f) => f.event === 'datasource_completed') as Record<string, any>;
    expect(done.data).toEqual([{ source_url: 'https://docs.example.com/otters', content: PAGES['https://docs.example.com/otters'].markdown, title: 'Otters', description: 'About otters' }]);
    expect(crawlers.requests.find((q) => q.path === '/')).toMatchObject({ method: 'POST', auth: 'Bearer crawl-key', body: { url: 'https://docs.example.com/otters' } });

    // the pipeline run with the crawled page, streaming
    const run = await post(`/datasets/${ds}/pipeline/run`, { inputs: { ...SHARED, jina_url: 'https://docs.example.com/otters' }, datasource_type: 'website_crawl', datasource_info_list: done.data, start_node_id: JINA_NODE, is_published: true, response_mode: 'streaming' });
    const events = dataFrames(parseSse(await run.text()));
    expect(events.map((e) => e.event)).toEqual(['workflow_started', 'node_started', 'node_finished', 'node_started', 'node_finished', 'node_started', 'node_finished', 'node_started', 'node_finished', 'workflow_finished']);
    const index = events.find((e) => e.event === 'node_finished' && (e.data as any).node_type === 'knowledge-index')!.data as Record<string, any>;
    expect(index.outputs).toMatchObject({ dataset_id: ds, document_name: 'Otters', display_status: 'completed' });

    // Firecrawl: a page given by URL only is scraped during the run
    const fc = await post(`/datasets/${ds}/pipeline/run`, { inputs: { ...SHARED, firecrawl_url: 'https://docs.example.com/beavers', firecrawl_limit: 1 }, datasource_type: 'website_crawl', datasource_info_list: [{ url: 'https://docs.example.com/beavers' }], start_node_id: FIRECRAWL_NODE, is_published: true, response_mode: 'blocking' });
    const fcBody = (await fc.json()) as Record<string, any>;
    expect(fcBody.data.status, JSON.stringify(fcBody)).toBe('succeeded');
    expect(crawlers.requests.find((q) => q.path === '/v1/scrape')).toMatchObject({ body: { url: 'https://docs.example.com/beavers', formats: ['markdown'] } });

    const hits = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'beavers dams' });
    expect(hits.body.records[0].segment.content).toContain('Beavers build dams');
    const otters = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'otters stones tools' });
    expect(otters.body.records[0].segment.content).toContain('stones as tools');
  });

  it('bad input is a named 4xx', async () => {
    const { dataset_id: ds } = await createPipeline('Bad input', 'file-general-economy.yml');
    const base = { inputs: SHARED, datasource_type: 'local_file', datasource_info_list: [{ reference: 'nope' }], start_node_id: FILE_NODE, is_published: true, response_mode: 'blocking' };
    const missing = await post(`/datasets/${ds}/pipeline/run`, { ...base, inputs: {} });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ code: 'invalid_param', message: expect.stringContaining('inputs.delimiter is required') });
    const wrongNode = await post(`/datasets/${ds}/pipeline/run`, { ...base, start_node_id: 'nope' });
    expect(await wrongNode.json()).toMatchObject({ status: 400, code: 'invalid_param', message: expect.stringContaining('start_node_id nope is not a datasource node') });
    const noItems = await post(`/datasets/${ds}/pipeline/run`, { ...base, datasource_info_list: [] });
    expect(await noItems.json()).toMatchObject({ code: 'invalid_param', message: 'datasource_info_list must be a non-empty list.' });
    const plain = await kb.dataset('No pipeline');
    expect((await kb.call('GET', `/datasets/${plain}`)).body).toMatchObject({ runtime_mode: 'general', pipeline_id: null, is_published: false });
    const none = await fetch(`${s.api}/datasets/${plain}/pipeline/datasource-plugins`, { headers: { authorization: `Bearer ${key}` } });
    expect(none.status).toBe(400);
    expect(await none.json()).toEqual({ status: 400, code: 'invalid_param', message: 'Pipeline not found' });
    const exe = await upload('tool.exe', 'MZ');
    expect(exe.status).toBe(415);
    // a run whose file does not exist fails naming the node
    const run = await post(`/datasets/${ds}/pipeline/run`, base);
    const body = (await run.json()) as Record<string, any>;
    expect(body.data).toMatchObject({ status: 'failed', error: expect.stringContaining(`datasource node "File" (${FILE_NODE})`) });
  });

  it('export gives the imported DSL back; an app import of a pipeline is refused naming the kind', async () => {
    const { dataset_id: ds } = await createPipeline('Exported', 'file-general-economy.yml');
    const { stdout } = await cli(['dataset', 'pipeline', 'export', ds]);
    const { readFileSync } = await import('node:fs');
    expect(stdout).toBe(readFileSync(path.join(FIXTURES, 'file-general-economy.yml'), 'utf8'));
  });
});
