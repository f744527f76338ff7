import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { DslError } from '../../src/apps/errors.js';

/**
 * Older DSL files import as Dify's importer (and editor) upgrade them (issue 41): iterations from
 * before `iteration-start`, End outputs pointing nowhere, files without `kind` / `version`, and a
 * file newer than Dovetail knows (a warning).
 */

let s: TestServer;

beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => s?.close());

const headers = (k: string) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });

async function runBlocking(key: string, inputs: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs, user: 'u', response_mode: 'blocking' }) });
  const body = (await r.json()) as { data: Record<string, unknown> };
  expect(r.status, JSON.stringify(body)).toBe(200);
  return body.data;
}

/**
 * The shape of Dify's recommended-app templates before 0.1.x's containers: no `kind`, no
 * `version`, an iteration whose `start_node_id` is its first child (`isIterationStart`) and no
 * `iteration-start` node; the children carry `parentId` (or only `data.iteration_id`).
 */
function oldIterationApp(childParent: 'parentId' | 'iteration_id'): string {
  const child = (id: string, data: Record<string, unknown>) =>
    childParent === 'parentId' ? { id, parentId: 'iter', type: 'custom', data: { ...data, isInIteration: true, iteration_id: 'iter' } } : { id, type: 'custom', data: { ...data, isInIteration: true, iteration_id: 'iter' } };
  return stringify({
    app: { name: `old iteration (${childParent})`, mode: 'workflow', icon: '🤖' },
    workflow: {
      features: {},
      graph: {
        nodes: [
          { id: 'start', type: 'custom', data: { type: 'start', title: 'Start', variables: [{ variable: 'words', label: 'words', type: 'paragraph', required: true }] } },
          { id: 'split', type: 'custom', data: { type: 'code', title: 'Split', code_language: 'javascript', code: 'function main({words}) { return {items: words.split(" ")} }', variables: [{ variable: 'words', value_selector: ['start', 'words'] }], outputs: { items: { type: 'array[string]', children: null } } } },
          { id: 'iter', type: 'custom', data: { type: 'iteration', title: 'Each', iterator_selector: ['split', 'items'], output_selector: ['shout', 'output'], output_type: 'array[string]', start_node_id: 'shout', startNodeType: 'template-transform' } },
          child('shout', { type: 'template-transform', title: 'Shout', isIterationStart: true, template: '{{ w | upper }}!', variables: [{ variable: 'w', value_selector: ['iter', 'item'] }] }),
          { id: 'end', type: 'custom', data: { type: 'end', title: 'End', outputs: [{ variable: 'shouted', value_selector: ['iter', 'output'] }] } },
        ],
        edges: [
          { id: 'e1', source: 'start', target: 'split', sourceHandle: 'source', targetHandle: 'target' },
          { id: 'e2', source: 'split', target: 'iter', sourceHandle: 'source', targetHandle: 'target' },
          { id: 'e3', source: 'iter', target: 'end', sourceHandle: 'source', targetHandle: 'target' },
        ],
      },
    },
  });
}

describe('older DSL files', () => {
  it('an iteration without iteration-start (start_node_id names its first child), no kind, no version: imports, runs, and is stored upgraded', async () => {
    for (const how of ['parentId', 'iteration_id'] as const) {
      const { apiKey, appId } = await s.importApp(oldIterationApp(how));
      const data = await runBlocking(apiKey, { words: 'a bc d' });
      expect(data.status).toBe('succeeded');
      expect(data.outputs).toEqual({ shouted: ['A!', 'BC!', 'D!'] });
      const dsl = (await s.runtime.apps.find(appId))!.dsl;
      const nodes = dsl.workflow!.graph.nodes;
      const start = nodes.find((n) => n.data.type === 'iteration-start')!;
      expect(start).toMatchObject({ id: 'iterstart', parentId: 'iter' });
      expect(nodes.find((n) => n.id === 'iter')!.data.start_node_id).toBe('iterstart');
      expect(nodes.find((n) => n.id === 'shout')!.parentId).toBe('iter');
      expect(dsl.workflow!.graph.edges.some((e) => e.source === 'iterstart' && e.target === 'shout')).toBe(true);
      expect(await s.runtime.appWarnings((await s.runtime.apps.find(appId))!)).toEqual([]);
    }
  });

  it('End outputs whose value_selector has fewer than two names import and output null (as Dify)', async () => {
    const yaml = stringify({
      app: { name: 'unset outputs', mode: 'workflow' },
      kind: 'app',
      version: '0.1.2',
      workflow: {
        graph: {
          nodes: [
            { id: 'start', data: { type: 'start', title: 'Start', variables: [{ variable: 'q', label: 'q', type: 'text-input', required: true }] } },
            { id: 'end', data: { type: 'end', title: 'End', outputs: [{ variable: 'q', value_selector: ['start', 'q'] }, { variable: 'empty', value_selector: [] }, { variable: 'half', value_selector: ['start'] }] } },
          ],
          edges: [{ source: 'start', target: 'end' }],
        },
      },
    });
    const { apiKey } = await s.importApp(yaml);
    const data = await runBlocking(apiKey, { q: 'hi' });
    expect(data.outputs).toEqual({ q: 'hi', empty: null, half: null });
  });

  it('a chat app without kind and version imports; a version that is not a version is refused naming the field', async () => {
    const chat = (header: string) => `${header}app:
  mode: chat
  name: Templated
model_config:
  model:
    provider: mock
    name: mock-echo
    mode: chat
  pre_prompt: ''
`;
    const { apiKey } = await s.importApp(chat(''));
    const r = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: headers(apiKey), body: JSON.stringify({ inputs: {}, query: 'hello', user: 'u', response_mode: 'blocking' }) });
    expect(r.status).toBe(200);
    await expect(s.runtime.apps.importDsl(chat('version: 0.3\n'))).rejects.toThrow(new DslError('version must be a string such as "0.5.0", got number 0.3 (quote it in the YAML)'));
    await expect(s.runtime.apps.importDsl(chat('version: latest\n'))).rejects.toThrow(new DslError('version must be a version such as "0.5.0", got "latest"'));
  });

  it('a DSL newer than the newest Dovetail knows imports with a warning naming both versions', async () => {
    const yaml = `app:\n  mode: chat\n  name: From the future\nkind: app\nversion: 9.1.0\nmodel_config:\n  model:\n    provider: mock\n    name: mock-echo\n    mode: chat\n`;
    const { appId } = await s.importApp(yaml);
    const warnings = await s.runtime.appWarnings((await s.runtime.apps.find(appId))!);
    expect(warnings).toEqual([
      {
        node_id: 'version',
        node_type: 'dsl',
        part: 'DSL version 9.1.0',
        setting: null,
        message: 'version 9.1.0 is newer than the newest DSL version Dovetail knows (0.7.0): what was added to the DSL since is not read; check the app before relying on it',
      },
    ]);
    // the versions Dovetail knows raise nothing
    const known = await s.importApp(yaml.replace('9.1.0', '0.7.0'));
    expect(await s.runtime.appWarnings((await s.runtime.apps.find(known.appId))!)).toEqual([]);
  });
});
