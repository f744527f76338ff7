import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * Workflow as tool (`provider_type: workflow`) over real HTTP: the provider id of another
 * workspace mapped to a workflow app of this server with the CLI (`app import --tool`,
 * `app update --tool`), its outputs as the tool's text / json, the unmapped error and warning,
 * and the call depth limit.
 */
const exec = promisify(execFile);
const OLD = '5c6f1a2e-0000-4000-8000-00000000f00d';
let s: TestServer;

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: Record<string, string | undefined> = { ...process.env, DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent', DATABASE_URL: s.config.databaseUrl ?? '', DATABASE_SCHEMA: s.config.databaseSchema ?? '' };
  delete env.DOVETAIL_CONFIG;
  try {
    const r = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir });
    return { code: 0, stdout: r.stdout, stderr: r.stderr.replace(/^database: .*\n/, '') };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr.replace(/^database: .*\n/, '') };
  }
}

/** The workflow the tool runs: greets `name` `times` times. */
const INNER = workflowDsl(
  [
    startNode([{ variable: 'name' }, { variable: 'times', type: 'number', required: false }]),
    templateNode('greet', 'Hello {{ name }} x{{ times }}', { name: ['start', 'name'], times: ['start', 'times'] }),
    endNode({ greeting: ['greet', 'output'], name: ['start', 'name'] }),
  ],
  [['start', 'greet'], ['greet', 'end']],
  { name: 'greeter' },
);

/** An export whose tool node names a workflow tool of another workspace (`provider_id`). */
const toolApp = (providerId: string, name = 'caller') =>
  workflowDsl(
    [
      startNode([{ variable: 'who' }]),
      {
        id: 'wt',
        type: 'tool',
        title: 'Greeter tool',
        provider_id: providerId,
        provider_name: 'greeter',
        provider_type: 'workflow',
        tool_name: 'greeter',
        tool_configurations: {},
        tool_parameters: { name: { type: 'mixed', value: '{{#start.who#}}' }, times: { type: 'constant', value: 3 }, who: { type: 'mixed', value: '{{#start.who#}}' } },
      },
      endNode({ text: ['wt', 'text'], json: ['wt', 'json'], files: ['wt', 'files'] }),
    ],
    [['start', 'wt'], ['wt', 'end']],
    { name },
  );

async function run(apiKey: string, inputs: Record<string, unknown>): Promise<Record<string, any>> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs, user: 'tool-user' }) });
  expect(r.status).toBe(200);
  return (await r.json()).data;
}

let innerId = '';
beforeAll(async () => {
  s = await startServer({ env: { WORKFLOW_CALL_MAX_DEPTH: '2' } });
  innerId = (await s.importApp(INNER)).appId;
  writeFileSync(path.join(s.dataDir, 'caller.yml'), toolApp(OLD));
});
afterAll(async () => {
  await s?.close();
});

describe('workflow as tool', { timeout: 240_000 }, () => {
  it('app tools lists the workflow apps with their input parameters', async () => {
    const r = await cli('app', 'tools', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toContainEqual({
      app_id: innerId,
      name: 'greeter',
      description: '',
      parameters: [
        { name: 'name', type: 'string', required: true },
        { name: 'times', type: 'number', required: false },
      ],
    });
  });

  it('app import --tool OLD=APP_ID maps the tool: it runs the app with its inputs; text is the JSON of its outputs, json the outputs', async () => {
    const r = await cli('app', 'import', path.join(s.dataDir, 'caller.yml'), '--tool', `${OLD}=${innerId}`, '--json');
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout);
    expect(out.warnings).toEqual([]);
    const d = await run(out.api_key, { who: 'Ada' });
    expect(d.status).toBe('succeeded');
    // Dify's WorkflowTool: json.dumps(outputs, ensure_ascii=False), then the outputs as json
    expect(d.outputs.text).toBe('{"greeting": "Hello Ada x3", "name": "Ada"}');
    expect(d.outputs.json).toEqual([{ greeting: 'Hello Ada x3', name: 'Ada' }]);
    expect(d.outputs.files).toEqual([]);
    // the tool's run is a run of the inner app, by the calling user
    const logs = await s.runtime.store.db.selectFrom('workflow_runs').select(['status', 'inputs', 'end_user_id']).where('app_id', '=', innerId).execute();
    expect(logs.map((l) => [l.status, JSON.parse(l.inputs)])).toContainEqual(['succeeded', { name: 'Ada', times: 3 }]);
    const endUser = await s.runtime.store.db.selectFrom('end_users').selectAll().where('id', '=', logs[0]!.end_user_id).executeTakeFirstOrThrow();
    expect([endUser.app_id, endUser.session_id]).toEqual([innerId, 'tool-user']);
  });

  it('a bad mapping is refused naming it: not a workflow app, an id the app does not use', async () => {
    const file = path.join(s.dataDir, 'caller.yml');
    const chat = (await s.importApp(workflowDsl([startNode(), { id: 'answer', type: 'answer', answer: 'hi' }], [['start', 'answer']], { mode: 'advanced-chat' }))).appId;
    expect(await cli('app', 'import', file, '--tool', `${OLD}=${chat}`, '--tool', `other=${innerId}`)).toMatchObject({ code: 1, stderr: `error: --tool ${OLD}=${chat}: app ${chat} is a advanced-chat app; only workflow apps run as tools\n` });
    expect(await cli('app', 'import', file, '--tool', `other=${innerId}`)).toMatchObject({ code: 1, stderr: 'error: --tool: the app uses no workflow tool with provider id other\n' });
  });

  it('unmapped: the import warns naming the flag; the run fails naming the node, the provider id and the flag; app update --tool maps it', async () => {
    const r = await cli('app', 'import', path.join(s.dataDir, 'caller.yml'), '--json');
    const out = JSON.parse(r.stdout);
    expect(out.warnings).toHaveLength(1);
    expect(out.warnings[0]).toMatchObject({ node_id: 'wt', node_type: 'tool', part: `tool ${OLD}/greeter`, setting: `--tool ${OLD}=APP_ID` });
    expect(out.warnings[0].message).toContain(`map it with dovetail app import FILE --tool ${OLD}=APP_ID`);
    expect(r.stderr).toContain(`warning: node wt (tool): workflow tool "greeter" (provider id ${OLD})`);
    const failed = await run(out.api_key, { who: 'Bob' });
    expect(failed.status).toBe('failed');
    expect(failed.error).toBe(
      `tool node "Greeter tool" (wt): workflow tool "greeter" (provider id ${OLD}): no workflow app of this server has the id "${OLD}" (a workflow tool of another workspace); map it with dovetail app import FILE --tool ${OLD}=APP_ID (or app update APP FILE --tool ${OLD}=APP_ID; dovetail app tools lists the workflow apps)`,
    );
    const up = await cli('app', 'update', out.app_id, path.join(s.dataDir, 'caller.yml'), '--tool', `${OLD}=${innerId}`, '--json');
    expect(up.code).toBe(0);
    expect(JSON.parse(up.stdout).version).toBe(2);
    const ok = await run(out.api_key, { who: 'Bob' });
    expect(ok).toMatchObject({ status: 'succeeded', outputs: { text: '{"greeting": "Hello Bob x3", "name": "Bob"}' } });
    expect(await s.runtime.appWarnings((await s.runtime.apps.find(out.app_id))!)).toEqual([]);
  });

  it('a workflow that calls itself stops at WORKFLOW_CALL_MAX_DEPTH, named in the error', async () => {
    const self = '9e9e0000-0000-4000-8000-00000000beef';
    const loopFile = path.join(s.dataDir, 'loop.yml');
    writeFileSync(loopFile, toolApp(self, 'loop'));
    const imported = await s.importApp(toolApp(self, 'loop'));
    const up = await cli('app', 'update', imported.appId, loopFile, '--tool', `${self}=${imported.appId}`);
    // the app calls itself, so it is a workflow app; mapped to itself in an update
    expect(up.code).toBe(0);
    const d = await run(imported.apiKey, { who: 'Eve' });
    expect(d.status).toBe('failed');
    expect(d.error).toContain('Max workflow call depth 2 reached (WORKFLOW_CALL_MAX_DEPTH)');
    // depth 0 (the API's run) called depth 1 and 2; the third level was refused before it started
    const runs = await s.runtime.store.db.selectFrom('workflow_runs').select('status').where('app_id', '=', imported.appId).execute();
    expect(runs.map((r) => r.status).sort()).toEqual(['failed', 'failed', 'failed']);
  });
});
