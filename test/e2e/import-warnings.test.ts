import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer } from '../helpers/server.js';
import { dropSchema } from '../../src/store/db.js';
import { endNode, llmNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { pythonImports } from '../../src/apps/import-check.js';

const exec = promisify(execFile);
const pgUrl = process.env.TEST_DATABASE_URL;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-warn-'));
const schema = pgUrl ? `t_warn_${Math.random().toString(36).slice(2, 10)}` : undefined;
const env: Record<string, string | undefined> = {
  ...process.env,
  DOVETAIL_DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema } : { DATABASE_URL: '' }),
};
// the providers this app names must be unconfigured here
delete env.ANTHROPIC_API_KEY;
delete env.DOVETAIL_CONFIG;

/** Every command first names its database on stderr (`database: …`); the rest is what these tests read. */
function withoutDatabaseLine(stderr: string): string {
  return stderr.replace(/^database: .*\n/, '');
}

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: dataDir });
    return { code: 0, stdout: r.stdout, stderr: withoutDatabaseLine(r.stderr) };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: withoutDatabaseLine(e.stderr) };
  }
}

const OLD_DATASET = '6b1f0000-0000-4000-8000-0000000000aa';
const MISSING_MODULE = 'dovetail_no_such_module_xyz';

/** An export from another workspace: an Anthropic LLM, a knowledge base of that workspace, a code node importing a module not installed here. */
const APP = workflowDsl(
  [
    startNode([{ variable: 'q' }]),
    { id: 'kr', type: 'knowledge-retrieval', query_variable_selector: ['start', 'q'], dataset_ids: [OLD_DATASET], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 2 } },
    { id: 'code', type: 'code', code_language: 'python3', code: `import json, os.path\nfrom ${MISSING_MODULE}.sub import thing\n\ndef main():\n    return {"r": 1}\n`, variables: [], outputs: { r: { type: 'number' } } },
    llmNode('llm', '{{#start.q#}}', { model: { provider: 'anthropic', name: 'claude-test', mode: 'chat', completion_params: {} } }),
    endNode({ text: ['llm', 'text'] }),
  ],
  [['start', 'llm'], ['llm', 'kr'], ['kr', 'code'], ['code', 'end']],
  { name: 'exported app' },
);
const file = path.join(dataDir, 'exported.yml');

interface Warning {
  node_id: string;
  node_type: string;
  part: string;
  setting: string;
  message: string;
}

beforeAll(() => writeFileSync(file, APP));
afterAll(async () => {
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('import that tells the truth', { timeout: 120_000 }, () => {
  let appId = '';
  let warnings: Warning[] = [];

  it('app import --json imports the app and lists what it cannot serve; stderr has one line per warning', async () => {
    const r = await cli('--init', 'app', 'import', file, '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout.trim());
    appId = out.app_id;
    expect(out.api_key).toMatch(/^app-/);
    warnings = out.warnings;
    expect(warnings.map((w) => [w.node_id, w.node_type, w.part, w.setting])).toEqual([
      ['kr', 'knowledge-retrieval', `dataset ${OLD_DATASET}`, `--dataset ${OLD_DATASET}=NEW_ID`],
      ['code', 'code', `python module ${MISSING_MODULE}`, 'CODE_PYTHON_PACKAGES_DIR'],
      ['llm', 'llm', 'model provider "anthropic"', 'ANTHROPIC_API_KEY'],
    ]);
    for (const w of warnings) expect(w.message).toMatch(new RegExp(`^node ${w.node_id} \\(${w.node_type}\\): `));
    expect(r.stderr.trim().split('\n')).toEqual(warnings.map((w) => `warning: ${w.message} [setting: ${w.setting}]`));
  });

  it('app check prints the same list later (--json and lines)', async () => {
    const j = await cli('app', 'check', appId, '--json');
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toEqual({ app_id: appId, warnings });
    const t = await cli('app', 'check', appId);
    expect(t.stdout.trim().split('\n')).toEqual(warnings.map((w) => `warning: ${w.message} [setting: ${w.setting}]`));
    const none = await cli('app', 'check', 'no-such-app');
    expect(none).toMatchObject({ code: 1, stderr: 'error: no app with id or name no-such-app\n' });
  });

  it('--dataset OLD=NEW rewrites the reference: the dataset warning is gone; an id the app does not use is an error', async () => {
    const ds = JSON.parse((await cli('dataset', 'create', '--name', 'Handbook', '--json')).stdout).dataset_id as string;
    const r = await cli('--init', 'app', 'import', file, '--dataset', `${OLD_DATASET}=${ds}`, '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.warnings.map((w: Warning) => w.node_id)).toEqual(['code', 'llm']);
    const bad = await cli('--init', 'app', 'import', file, '--dataset', `nope=${ds}`);
    expect(bad).toMatchObject({ code: 1, stderr: 'error: --dataset: the app references no dataset nope\n' });
    const malformed = await cli('--init', 'app', 'import', file, '--dataset', 'just-an-id');
    expect(malformed).toMatchObject({ code: 1, stderr: 'error: --dataset just-an-id: expected OLD_ID=NEW_ID\n' });
  });

  it('app update takes the same --dataset / --tool mappings as import and prints its warnings; a provider Dovetail does not know names the dovetail.yaml setting', async () => {
    const ds = JSON.parse((await cli('dataset', 'create', '--name', 'Handbook v2', '--json')).stdout).dataset_id as string;
    // the new version calls a provider Dovetail knows only once dovetail.yaml adds it
    const v2 = path.join(dataDir, 'exported-v2.yml');
    writeFileSync(v2, APP.replace('provider: anthropic', 'provider: yi'));
    const r = await cli('app', 'update', appId, v2, '--dataset', `${OLD_DATASET}=${ds}`, '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout.trim());
    expect(out).toMatchObject({ app_id: appId, version: 2 });
    expect(out.warnings.map((w: Warning) => [w.node_id, w.part, w.setting])).toEqual([
      ['code', `python module ${MISSING_MODULE}`, 'CODE_PYTHON_PACKAGES_DIR'],
      // YI_API_KEY would do nothing for a provider that is not in dovetail.yaml
      ['llm', 'model provider "yi"', 'providers.yi'],
    ]);
    expect(r.stderr.trim().split('\n')).toEqual(out.warnings.map((w: Warning) => `warning: ${w.message} [setting: ${w.setting}]`));
    const bad = await cli('app', 'update', appId, v2, '--dataset', `nope=${ds}`);
    expect(bad).toMatchObject({ code: 1, stderr: 'error: --dataset: the app references no dataset nope\n' });
    const tool = await cli('app', 'update', appId, v2, '--tool', 'old-provider=no-such-app');
    expect(tool).toMatchObject({ code: 1, stderr: expect.stringContaining('--tool old-provider=no-such-app: no app with id no-such-app') });
  });

  it('a run that reaches a part the server cannot serve fails that node naming it and the setting (never a 500)', async () => {
    const s = await startServer({ reuse: { dataDir, schema } });
    try {
      const { apiKey } = await s.importApp(APP);
      const r = await fetch(`${s.api}/workflows/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: { q: 'hi' }, user: 'u', response_mode: 'streaming' }),
      });
      expect(r.status).toBe(200);
      const text = await r.text();
      const finished = text
        .split('\n\n')
        .filter((f) => f.startsWith('data: '))
        .map((f) => JSON.parse(f.slice(6)) as { event: string; data: Record<string, unknown> })
        .filter((e) => e.event === 'node_finished' && e.data.node_id === 'llm');
      expect(finished).toHaveLength(1);
      expect(finished[0]!.data.status).toBe('failed');
      expect(String(finished[0]!.data.error)).toMatch(/anthropic.*ANTHROPIC_API_KEY/);
      // a code node importing a module this Python lacks fails naming the module and the setting
      const codeApp = await s.importApp(
        workflowDsl(
          [startNode(), { id: 'code', type: 'code', code_language: 'python3', code: `import ${MISSING_MODULE}\n\ndef main():\n    return {"r": 1}\n`, variables: [], outputs: { r: { type: 'number' } } }, endNode({ r: ['code', 'r'] })],
          [['start', 'code'], ['code', 'end']],
        ),
      );
      const c = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${codeApp.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, user: 'u' }) });
      expect(c.status).toBe(200);
      const cd = (await c.json()).data;
      expect(cd.status).toBe('failed');
      expect(cd.error).toContain(`python module ${MISSING_MODULE} is not available in the code sandbox: put its pure-Python wheel in CODE_PYTHON_PACKAGES_DIR`);
      // a chat app's one model is checked too
      const chatApp = await s.runtime.apps.importDsl('app:\n  mode: chat\n  name: c\nmodel_config:\n  model:\n    provider: anthropic\n    name: claude-test\n');
      expect(await s.runtime.appWarnings(chatApp)).toEqual([
        { node_id: 'model_config', node_type: 'chat', part: 'model provider "anthropic"', setting: 'ANTHROPIC_API_KEY', message: expect.stringMatching(/^model_config \(chat\): .*ANTHROPIC_API_KEY/) },
      ]);
    } finally {
      await s.stop();
    }
  });
});

describe('agent nodes: the model provider is checked like an LLM node\'s', { timeout: 120_000 }, () => {
  /** An agent node (Dify's agent strategy plugin) on an Anthropic model this server has no key for. */
  const AGENT_APP = workflowDsl(
    [
      startNode([{ variable: 'q' }]),
      {
        id: 'agent',
        type: 'agent',
        agent_strategy_provider_name: 'langgenius/agent/agent',
        agent_strategy_name: 'function_calling',
        agent_parameters: {
          model: { type: 'constant', value: { provider: 'langgenius/anthropic/anthropic', model: 'claude-test', model_type: 'llm', mode: 'chat', completion_params: {} } },
          tools: { type: 'array[tools]', value: [] },
          query: { type: 'constant', value: '{{#start.q#}}' },
        },
      },
      endNode({ text: ['agent', 'text'] }),
    ],
    [['start', 'agent'], ['agent', 'end']],
    { name: 'agent app' },
  );

  it('app import and app check warn about the agent model\'s unconfigured provider, naming the setting', async () => {
    const agentFile = path.join(dataDir, 'agent.yml');
    writeFileSync(agentFile, AGENT_APP);
    const r = await cli('--init', 'app', 'import', agentFile, '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { app_id: string; warnings: Warning[] };
    expect(out.warnings.map((w) => [w.node_id, w.node_type, w.part, w.setting])).toEqual([['agent', 'agent', 'model provider "langgenius/anthropic/anthropic"', 'ANTHROPIC_API_KEY']]);
    expect(out.warnings[0]!.message).toMatch(/^node agent \(agent\): .*ANTHROPIC_API_KEY/);
    const check = await cli('app', 'check', out.app_id, '--json');
    expect(JSON.parse(check.stdout)).toEqual({ app_id: out.app_id, warnings: out.warnings });
  });
});

describe('pythonImports', () => {
  it('finds top-level modules of import and from-import lines, once each, skipping relative imports', () => {
    expect(pythonImports('import a.b, c as d\nfrom e.f import g\n  import h\nfrom . import x\nfrom .y import z\nx = "import nothing"\nimport a')).toEqual(['a', 'c', 'e', 'h']);
  });
});
