import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { example, PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { endNode, llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { reviewApp } from '../helpers/form-apps.js';
import { dataFrames, parseSse } from '../helpers/sse.js';

const exec = promisify(execFile);
let s: TestServer;
let fake: FakeOpenAI;

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent', DATABASE_URL: '', REDIS_URL: '' };
  if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
  delete env.DOVETAIL_CONFIG;
  try {
    const r = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  fake = await startFakeOpenAI({ reply: 'abcdefgh'.repeat(40), chunkSize: 2, delayMs: 10 });
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const post = (key: string, url: string, body: object) =>
  fetch(`${s.api}${url}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('dovetail run list | show | events, --version', { timeout: 120_000 }, () => {
  it('lists workflow runs and completion messages; shows one; prints its events; follows a running run to its end', async () => {
    const wf = await s.importApp(workflowDsl([startNode(), llmNode('llm', 'go'), endNode({ a: ['llm', 'text'] })], [['start', 'llm'], ['llm', 'end']]));
    const done = (await (await post(wf.apiKey, '/workflows/run', { inputs: {}, user: 'u' })).json()) as { workflow_run_id: string };
    const comp = await s.importApp(example('completion-writer.yml'));
    const msg = (await (await post(comp.apiKey, '/completion-messages', { inputs: { topic: 'otters' }, user: 'u' })).json()) as { message_id: string };

    const list = await cli('run', 'list', '--json');
    expect(list.code).toBe(0);
    const runs = JSON.parse(list.stdout) as { id: string; kind: string; status: string; mode: string }[];
    expect(runs.map((r) => [r.id, r.kind, r.mode, r.status])).toEqual([
      [msg.message_id, 'message', 'completion', 'normal'],
      [done.workflow_run_id, 'workflow_run', 'workflow', 'succeeded'],
    ]);
    // each run names its app
    expect((JSON.parse(list.stdout) as { app_name: string }[]).map((r) => r.app_name)).toEqual(['Writer (mock model)', 'test workflow']);
    const text = await cli('run', 'list');
    expect(text.stdout.split('\n')[1]).toMatch(new RegExp(`${done.workflow_run_id} .* ${wf.appId}  \\S`));
    const onlyWf = JSON.parse((await cli('run', 'list', '--app', wf.appId, '--status', 'succeeded', '--json')).stdout) as unknown[];
    expect(onlyWf).toHaveLength(1);
    const bad = await cli('run', 'list', '--status', 'done');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--status must be one of running, paused, succeeded, partial-succeeded, failed, stopped, normal, error, got "done"/);

    const shown = JSON.parse((await cli('run', 'show', done.workflow_run_id, '--json')).stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ id: done.workflow_run_id, status: 'succeeded', app_version: 1, outputs: { a: 'abcdefgh'.repeat(40) } });
    expect(JSON.parse((await cli('run', 'show', msg.message_id, '--json')).stdout)).toMatchObject({ kind: 'message', answer: expect.any(String) });

    const events = JSON.parse((await cli('run', 'events', done.workflow_run_id, '--json')).stdout) as { seq: number; event: string }[];
    expect(events[0]).toMatchObject({ seq: 1, event: 'workflow_started' });
    expect(events.at(-1)!.event).toBe('workflow_finished');
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect((await cli('run', 'events', msg.message_id)).stderr).toMatch(/keep no event log/);

    // a running run (about 6 s): --follow prints events as they are logged until workflow_finished
    fake.behaviour = { reply: 'abcdefgh'.repeat(40), chunkSize: 1, delayMs: 20 };
    const streaming = await post(wf.apiKey, '/workflows/run', { inputs: {}, user: 'u', response_mode: 'streaming' });
    const reader = streaming.body!.getReader();
    let head = '';
    while (!/"workflow_run_id":"([^"]+)"/.test(head)) head += new TextDecoder().decode((await reader.read()).value);
    const runId = /"workflow_run_id":"([^"]+)"/.exec(head)![1]!;
    const followed = await cli('run', 'events', runId, '--follow');
    expect(followed.code).toBe(0);
    const lines = followed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^\s*1 workflow_started/);
    expect(lines.at(-1)).toMatch(/workflow_finished\s+succeeded/);
    await reader.cancel();
  });

  it('with --json a failure is one JSON document on stdout too (and its line on stderr)', async () => {
    const bad = await cli('run', 'list', '--status', 'done', '--json');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toEqual({ code: 'invalid_param', message: expect.stringContaining('--status must be one of'), exit_code: 1 });
    expect(bad.stderr).toMatch(/^error: --status must be one of/m);
    const missing = await cli('run', 'show', 'no-such-run', '--json');
    expect(JSON.parse(missing.stdout)).toMatchObject({ code: 'invalid_param', message: 'no run or message with id no-such-run' });
    const usage = await cli('run', 'list', '--no-such-option', '--json');
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toEqual({ code: 'invalid_usage', message: "unknown option '--no-such-option'", exit_code: 2 });
  });

  it('dataset list lists the knowledge bases', async () => {
    const ds = await s.runtime.datasets.create(await s.runtime.apps.workspaceId(), { name: 'Run CLI handbook', indexingTechnique: 'economy', createdBy: 'test' });
    const list = JSON.parse((await cli('dataset', 'list', '--json')).stdout) as { dataset_id: string; name: string; indexing_technique: string }[];
    expect(list).toContainEqual(expect.objectContaining({ dataset_id: ds.id, name: 'Run CLI handbook', indexing_technique: 'economy' }));
    expect((await cli('dataset', 'list')).stdout).toMatch(new RegExp(`^${ds.id}  economy\\s+Run CLI handbook$`, 'm'));
  });

  it("run show of a paused run gives each waiting form's page link on the terminal, never in the JSON document", async () => {
    const { apiKey } = await s.importApp(reviewApp([{ id: 'web', type: 'webapp', enabled: true, config: {} }]));
    const r = await post(apiKey, '/workflows/run', { inputs: { draft: 'd' }, response_mode: 'streaming', user: 'u' });
    const events = dataFrames(parseSse(await r.text()));
    expect(events.at(-1)?.event).toBe('workflow_paused');
    const runId = String(events[0]!.workflow_run_id);
    const token = String((events.at(-2)!.data as { form_token: string }).form_token);
    // the page's address: APP_WEB_URL (here its default, http://localhost:PORT) and the form's token
    const link = `/form/${encodeURIComponent(token)}`;
    const text = await cli('run', 'show', runId);
    expect(text.code).toBe(0);
    const line = text.stdout.split('\n').find((l) => l.startsWith('form of node review '));
    expect(line).toMatch(/^form of node review \(waiting until \d{4}-[^)]+\): http:\/\/localhost:\d+\/form\/\S+$/);
    expect(line!.endsWith(link)).toBe(true);
    const json = await cli('run', 'show', runId, '--json');
    expect(json.stdout).not.toContain(token);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'paused', waiting_forms: [{ node_id: 'review', web_page: true }] });
    expect(json.stderr).toContain(link);
  });

  it('--version prints the package version', async () => {
    const v = await cli('--version');
    expect(v.stdout.trim()).toBe((JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });
});
