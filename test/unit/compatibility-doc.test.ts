import { readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { DslError } from '../../src/apps/errors.js';

/**
 * docs/compatibility.md tells the truth about what is refused, warned about and imported (issue
 * 41). Rows carry machine-readable markers in HTML comments:
 *
 * - `<!-- refused-at-import: ID -->`: the DSL of scenario ID is refused at import (the message is checked);
 * - `<!-- import-warning: ID -->`: it imports, and the import warns about the part named;
 * - `<!-- imports: ID -->`: it imports with no warning (a feature the page says is supported);
 * - `<!-- in-code: "TEXT" -->`: a refusal outside the DSL import, whose message TEXT is in src/.
 *
 * Every table row whose Dovetail column says something is refused, not supported or warned about
 * must carry a marker, and every marker must name a scenario below that behaves as it says.
 */

const DOC = readFileSync(path.join(PROJECT_ROOT, 'docs', 'compatibility.md'), 'utf8');
const MARKER = /<!--\s*(refused-at-import|import-warning|imports|in-code):\s*(?:"([^"]+)"|([A-Za-z0-9-]+))\s*-->/g;
/** Words in the Dovetail column that make a claim the test must check. */
const CLAIM = /\b(refused|refuses|not imported|not supported|unsupported|import warning|imports with a warning|imports with `warnings`)\b/i;

interface Marker {
  readonly kind: 'refused-at-import' | 'import-warning' | 'imports' | 'in-code';
  readonly value: string;
}

function markersIn(text: string): Marker[] {
  return [...text.matchAll(MARKER)].map((m) => ({ kind: m[1] as Marker['kind'], value: m[2] ?? m[3]! }));
}

/** Cells of a Markdown table row (`\|` inside a cell is not a border). */
function cells(line: string): string[] {
  return line.trim().replace(/^\|/, '').replace(/\|$/, '').split(/(?<!\\)\|/).map((c) => c.trim());
}

/**
 * Every table row with its Dovetail cell, found by each table's header (the third column of a
 * table without one: a row cut off from its table by a blank line is still read).
 */
function dovetailCells(doc: string): { line: number; cell: string }[] {
  const out: { line: number; cell: string }[] = [];
  let column: number | undefined;
  doc.split('\n').forEach((line, i) => {
    if (!line.trim().startsWith('|')) {
      column = undefined;
      return;
    }
    const row = cells(line);
    if (row.every((c) => /^:?-+:?$/.test(c))) return;
    if (column === undefined) {
      const header = row.findIndex((c) => c.toLowerCase() === 'dovetail');
      column = header === -1 ? 2 : header;
      if (header !== -1) return;
    }
    out.push({ line: i + 1, cell: row[column] ?? '' });
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// The scenarios: small DSLs using the feature a row names.

type Doc = Record<string, unknown>;

function workflow(nodes: Doc[], edges: [string, string][], extra: { mode?: string; header?: Doc; workflow?: Doc } = {}): string {
  return stringify({
    app: { name: 'compat check', mode: extra.mode ?? 'workflow' },
    kind: 'app',
    version: '0.3.1',
    ...extra.header,
    workflow: {
      ...extra.workflow,
      graph: {
        nodes: nodes.map(({ id, parentId, ...data }) => ({ id, ...(parentId ? { parentId } : {}), data: { title: id, ...data } })),
        edges: edges.map(([source, target]) => ({ source, target, sourceHandle: 'source' })),
      },
    },
  });
}

const start = (variables: Doc[] = [{ variable: 'q', label: 'q', type: 'text-input', required: true }]): Doc => ({ id: 'start', type: 'start', variables });
const end = (outputs: Doc[] = []): Doc => ({ id: 'end', type: 'end', outputs });
const split: Doc = { id: 'split', type: 'code', code_language: 'javascript', code: 'function main({q}) { return {items: q.split(" ")} }', variables: [{ variable: 'q', value_selector: ['start', 'q'] }], outputs: { items: { type: 'array[string]' } } };
const iteration = (children: Doc[], startId = 'iterstart'): Doc[] => [
  { id: 'iter', type: 'iteration', iterator_selector: ['split', 'items'], output_selector: [children.at(-1)!.id, 'output'], output_type: 'array[string]', start_node_id: startId },
  { id: startId, type: 'iteration-start', parentId: 'iter' },
  ...children.map((c) => ({ ...c, parentId: 'iter' })),
];
const llm = (provider: string): Doc => ({ id: 'llm', type: 'llm', model: { provider, name: 'some-model', mode: 'chat', completion_params: {} }, prompt_template: [{ role: 'user', text: '{{#start.q#}}' }], context: { enabled: false } });
const agent = (strategyProvider: string, strategy: string, modelProvider: string): Doc => ({
  id: 'agent',
  type: 'agent',
  agent_strategy_provider_name: strategyProvider,
  agent_strategy_name: strategy,
  agent_parameters: {
    model: { type: 'constant', value: { provider: modelProvider, model: 'some-model', mode: 'chat', completion_params: {} } },
    tools: { type: 'array[tools]', value: [] },
    query: { type: 'constant', value: '{{#start.q#}}' },
  },
});
const chatApp = (header: string) => `${header}app:\n  mode: chat\n  name: compat chat\nmodel_config:\n  model:\n    provider: mock\n    name: mock-echo\n    mode: chat\n  pre_prompt: ''\n`;

interface Scenario {
  readonly dsl: string;
  /** refused-at-import: the message. */
  readonly refused?: RegExp;
  /** import-warning: the warning's `part`. */
  readonly warns?: RegExp;
}

const SCENARIOS: Record<string, Scenario> = {
  'human-input-in-iteration': {
    dsl: workflow(
      [
        start(),
        split,
        ...iteration([{ id: 'ask', type: 'human-input', delivery_methods: [{ id: 'web', type: 'webapp', enabled: true, config: {} }], form_content: 'x', inputs: [], user_actions: [{ id: 'ok', title: 'OK', button_style: 'primary' }], timeout: 1, timeout_unit: 'day' }]),
        end(),
      ],
      [['start', 'split'], ['split', 'iter'], ['iterstart', 'ask'], ['iter', 'end']],
    ),
    refused: /node ask \(human-input\) cannot run inside a loop or iteration/,
  },
  'unsupported-node-type': {
    dsl: workflow([start(), { id: 'ds', type: 'email-sender' }, end()], [['start', 'ds'], ['ds', 'end']]),
    refused: /node ds has type "email-sender", which Dovetail does not support \(supported: /,
  },
  'pipeline-node-in-app': {
    dsl: workflow([start(), { id: 'ds', type: 'knowledge-index', chunk_structure: 'text_model', index_chunk_variable_selector: ['start', 'x'] }, end()], [['start', 'ds'], ['ds', 'end']]),
    refused: /node ds \(knowledge-index\) belongs to knowledge pipelines \(kind: rag_pipeline\)/,
  },
  'kind-not-app': { dsl: chatApp('kind: rag_pipeline\n'), refused: /kind must be "app", got "rag_pipeline"/ },
  'malformed-dsl-version': { dsl: chatApp('version: latest\n'), refused: /version must be a version such as "0\.5\.0", got "latest"/ },
  'newer-dsl-version': { dsl: chatApp('kind: app\nversion: 9.0.0\n'), warns: /^DSL version 9\.0\.0$/ },
  'unknown-tool': {
    dsl: workflow(
      [start(), { id: 'search', type: 'tool', provider_id: 'langgenius/google/google', provider_name: 'langgenius/google/google', provider_type: 'builtin', tool_name: 'google_search', tool_parameters: {} }, end()],
      [['start', 'search'], ['search', 'end']],
    ),
    warns: /^tool langgenius\/google\/google\/google_search$/,
  },
  'trigger-plugin': {
    dsl: workflow([{ id: 'gh', type: 'trigger-plugin', plugin_id: 'langgenius/github_trigger', provider_id: 'langgenius/github_trigger/github', event_name: 'push' }, end()], [['gh', 'end']]),
    warns: /^trigger plugin langgenius\/github_trigger$/,
  },
  'trigger-webhook': {
    dsl: workflow([{ id: 'hook', type: 'trigger-webhook', method: 'POST', content_type: 'application/json', body: [{ name: 'q', type: 'string', required: true }] }, end()], [['hook', 'end']]),
  },
  'schedule-six-fields': {
    dsl: workflow([{ id: 'tick', type: 'trigger-schedule', mode: 'cron', cron_expression: '0 0 * * * *', timezone: 'UTC' }, end()], [['tick', 'end']]),
    refused: /node tick \(trigger-schedule\): cron_expression must have five fields/,
  },
  'unknown-agent-strategy': {
    dsl: workflow([start(), agent('someone/cot/cot', 'tree_of_thought', 'mock'), end()], [['start', 'agent'], ['agent', 'end']]),
    warns: /^agent strategy someone\/cot\/cot\/tree_of_thought$/,
  },
  'unconfigured-llm-provider': {
    dsl: workflow([start(), llm('langgenius/deepseek/deepseek'), end()], [['start', 'llm'], ['llm', 'end']]),
    warns: /^model provider "langgenius\/deepseek\/deepseek"$/,
  },
  'unconfigured-agent-provider': {
    dsl: workflow([start(), agent('langgenius/agent/agent', 'function_calling', 'langgenius/deepseek/deepseek'), end()], [['start', 'agent'], ['agent', 'end']]),
    warns: /^model provider "langgenius\/deepseek\/deepseek"$/,
  },
  'missing-dataset': {
    dsl: workflow(
      [start(), { id: 'kr', type: 'knowledge-retrieval', query_variable_selector: ['start', 'q'], dataset_ids: ['6b1f0000-0000-4000-8000-00000000c0de'], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 2 } }, end()],
      [['start', 'kr'], ['kr', 'end']],
    ),
    warns: /^dataset 6b1f0000-0000-4000-8000-00000000c0de$/,
  },
  'kr-v2-metadata-filters': {
    dsl: workflow(
      [start(), { id: 'kfs', type: 'knowledge-retrieval-v2', query_variable_selector: ['start', 'q'], control_space_ids: ['6b1f0000-0000-4000-8000-00000000c0df'], metadata_filters: { tags: ['a'] } }, end()],
      [['start', 'kfs'], ['kfs', 'end']],
    ),
    warns: /^metadata_filters \(tags\)$/,
  },
  'agent-chat-app': {
    dsl: `app:\n  mode: agent-chat\n  name: compat agent\nkind: app\nversion: 0.3.1\nmodel_config:\n  model:\n    provider: mock\n    name: mock-echo\n    mode: chat\n  pre_prompt: ''\n  agent_mode:\n    enabled: true\n    strategy: function_call\n    max_iteration: 3\n    tools:\n      - enabled: true\n        provider_type: builtin\n        provider_id: time\n        tool_name: current_time\n        tool_parameters: {}\n`,
  },
  'nested-containers': {
    dsl: workflow(
      [
        start(),
        split,
        ...iteration([
          { id: 'inner', type: 'loop', loop_count: 1, break_conditions: [], logical_operator: 'and', start_node_id: 'innerstart' },
          { id: 'shout', type: 'template-transform', template: '{{ w }}!', variables: [{ variable: 'w', value_selector: ['iter', 'item'] }] },
        ]),
        { id: 'innerstart', type: 'loop-start', parentId: 'inner' },
        { id: 'tick', type: 'template-transform', parentId: 'inner', template: 'tick', variables: [] },
        end([{ variable: 'out', value_selector: ['iter', 'output'] }]),
      ],
      [['start', 'split'], ['split', 'iter'], ['iterstart', 'inner'], ['inner', 'shout'], ['innerstart', 'tick'], ['iter', 'end']],
    ),
  },
  'assigner-v1': {
    dsl: workflow(
      [
        start(),
        { id: 'assign', type: 'assigner', assigned_variable_selector: ['conversation', 'memo'], write_mode: 'over-write', input_variable_selector: ['sys', 'query'] },
        { id: 'answer', type: 'answer', answer: 'ok' },
      ],
      [['start', 'assign'], ['assign', 'answer']],
      { mode: 'advanced-chat', workflow: { conversation_variables: [{ id: 'c1', name: 'memo', value_type: 'string', value: '' }] } },
    ),
  },
  'iteration-without-start': {
    dsl: workflow(
      [
        start(),
        split,
        { id: 'iter', type: 'iteration', iterator_selector: ['split', 'items'], output_selector: ['shout', 'output'], output_type: 'array[string]', start_node_id: 'shout' },
        { id: 'shout', parentId: 'iter', type: 'template-transform', isIterationStart: true, template: '{{ w }}!', variables: [{ variable: 'w', value_selector: ['iter', 'item'] }] },
        end([{ variable: 'out', value_selector: ['iter', 'output'] }]),
      ],
      [['start', 'split'], ['split', 'iter'], ['iter', 'end']],
    ),
  },
  'short-end-selector': { dsl: workflow([start(), end([{ variable: 'nothing', value_selector: [] }])], [['start', 'end']]) },
};

let s: TestServer;

beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => s?.close());

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sourceFiles(p)));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

describe('docs/compatibility.md', () => {
  it('every row that says something is refused, unsupported or warned about carries a marker', () => {
    const unmarked = dovetailCells(DOC).filter((r) => CLAIM.test(r.cell) && markersIn(r.cell).length === 0);
    expect(unmarked.map((r) => `line ${r.line}: ${r.cell.slice(0, 100)}`)).toEqual([]);
  });

  it('every marker names a scenario (or a message) that exists', () => {
    const markers = markersIn(DOC);
    expect(markers.length).toBeGreaterThan(10);
    const unknown = markers.filter((m) => m.kind !== 'in-code' && !(m.value in SCENARIOS));
    expect(unknown).toEqual([]);
  });

  it('each refusal, warning and supported feature the page names behaves as it says', async () => {
    const ws = await s.runtime.apps.workspaceId();
    for (const m of markersIn(DOC).filter((x) => x.kind !== 'in-code')) {
      const sc = SCENARIOS[m.value]!;
      if (m.kind === 'refused-at-import') {
        expect(sc.refused, m.value).toBeDefined();
        const err = await s.runtime.apps.importDsl(sc.dsl).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, `${m.value} imported although the page says it is refused`).toBeInstanceOf(DslError);
        expect((err as Error).message, m.value).toMatch(sc.refused!);
        continue;
      }
      const app = await s.runtime.apps.importDsl(sc.dsl);
      expect(app.workspaceId).toBe(ws);
      const warnings = await s.runtime.appWarnings(app);
      if (m.kind === 'import-warning') {
        expect(sc.warns, m.value).toBeDefined();
        expect(warnings.map((w) => w.part).filter((p) => sc.warns!.test(p)), `${m.value}: ${JSON.stringify(warnings)}`).toHaveLength(1);
      } else {
        expect(warnings, m.value).toEqual([]);
      }
    }
  });

  it('each refusal outside the import names a message the code really has', async () => {
    const texts = markersIn(DOC).filter((m) => m.kind === 'in-code').map((m) => m.value);
    expect(texts.length).toBeGreaterThan(5);
    const src = (await Promise.all((await sourceFiles(path.join(PROJECT_ROOT, 'src'))).map((f) => readFileSync(f, 'utf8')))).join('\n');
    expect(texts.filter((t) => !src.includes(t))).toEqual([]);
  });
});
