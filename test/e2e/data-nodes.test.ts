import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServer, type TestServer } from '../helpers/server.js';
import { documentFixtures, type DocFixture } from '../helpers/documents.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

let s: TestServer;
let docs: DocFixture[];
/** Serves the document fixtures by name, for remote_url files. */
let remote: Server;
let remoteUrl = '';

beforeAll(async () => {
  docs = await documentFixtures();
  remote = createServer((req, res) => {
    const d = docs.find((x) => `/${x.name}` === req.url);
    if (d) res.writeHead(200, { 'content-type': d.mime }).end(d.bytes);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
  remoteUrl = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
  s = await startServer({ env: { SSRF_ALLOW_HOSTS: '127.0.0.1' } });
});
afterAll(async () => {
  await s?.close();
  await new Promise((r) => remote?.close(r));
});

const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function run(key: string, inputs: Record<string, unknown>): Promise<Record<string, any>> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs, user: 'u1' }) });
  expect(r.status).toBe(200);
  return (await r.json()).data;
}

async function upload(key: string, d: { name: string; bytes: Buffer; mime: string }): Promise<string> {
  const fd = new FormData();
  fd.append('user', 'u1');
  fd.append('file', new Blob([new Uint8Array(d.bytes)], { type: d.mime }), d.name);
  const r = await fetch(`${s.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd });
  expect(r.status, await r.clone().text()).toBe(201);
  return (await r.json()).id as string;
}

const local = (id: string) => ({ type: 'document', transfer_method: 'local_file', upload_file_id: id });

describe('document-extractor', () => {
  const single = workflowDsl(
    [startNode([{ variable: 'doc', type: 'file' }]), { id: 'ex', type: 'document-extractor', variable_selector: ['start', 'doc'], is_array_file: false }, endNode({ text: ['ex', 'text'] })],
    [['start', 'ex'], ['ex', 'end']],
  );

  it('extracts the text of every supported format from an uploaded file (text is a string)', async () => {
    const { apiKey } = await s.importApp(single);
    expect(docs.map((d) => d.name.split('.').pop())).toEqual(['txt', 'md', 'html', 'pdf', 'docx', 'csv', 'xlsx', 'json', 'eml', 'msg', 'pptx', 'epub', 'vtt', 'properties']);
    for (const d of docs) {
      const out = await run(apiKey, { doc: local(await upload(apiKey, d)) });
      expect(out.status, `${d.name}: ${out.error}`).toBe('succeeded');
      expect(typeof out.outputs.text).toBe('string');
      expect(out.outputs.text, d.name).toContain(d.word);
      if (d.text) expect(out.outputs.text, d.name).toBe(d.text);
    }
  });

  it('a list of files gives a list of texts in order; remote_url files are fetched', async () => {
    const { apiKey } = await s.importApp(
      workflowDsl(
        [startNode([{ variable: 'docs', type: 'file-list' }]), { id: 'ex', type: 'document-extractor', variable_selector: ['start', 'docs'], is_array_file: true }, endNode({ text: ['ex', 'text'] })],
        [['start', 'ex'], ['ex', 'end']],
      ),
    );
    const pick = (n: string) => docs.find((d) => d.name === n)!;
    const files = [local(await upload(apiKey, pick('deck.pptx'))), { type: 'document', transfer_method: 'remote_url', url: `${remoteUrl}/guide.md` }, local(await upload(apiKey, pick('talk.vtt')))];
    const out = await run(apiKey, { docs: files });
    expect(out.status, out.error).toBe('succeeded');
    expect(out.outputs.text).toHaveLength(3);
    expect(out.outputs.text[0]).toBe(pick('deck.pptx').text);
    expect(out.outputs.text[1]).toContain('quokka');
    expect(out.outputs.text[2]).toBe(pick('talk.vtt').text);
  });

  it('an unsupported type fails the node naming the extension; a file of another app is not found', async () => {
    const { apiKey } = await s.importApp(single);
    const id = await upload(apiKey, { name: 'model.xyz', bytes: Buffer.from('x'), mime: 'application/octet-stream' });
    const out = await run(apiKey, { doc: local(id) });
    expect(out).toMatchObject({ status: 'failed', error: 'Failed to extract text from start.doc: Unsupported Extension Type: .xyz' });
    const other = await s.importApp(single);
    const foreign = await run(other.apiKey, { doc: local(await upload(apiKey, docs[0]!)) });
    expect(foreign.status).toBe('failed');
    expect(foreign.error).toMatch(/^Failed to extract text from start\.doc: file [0-9a-f-]+ not found$/);
  });

  it('the node events carry the inputs, the documents it read and the text', async () => {
    const { apiKey } = await s.importApp(single);
    const id = await upload(apiKey, docs[0]!);
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: json(apiKey), body: JSON.stringify({ inputs: { doc: local(id) }, user: 'u1', response_mode: 'streaming' }) });
    const events = dataFrames(parseSse(await r.text()));
    const nf = events.find((e) => e.event === 'node_finished' && (e.data as { node_id: string }).node_id === 'ex')!.data as Record<string, any>;
    expect(nf).toMatchObject({ node_type: 'document-extractor', status: 'succeeded', inputs: { variable_selector: ['start', 'doc'] } });
    expect(nf.process_data.documents[0]).toMatchObject({ dify_model_identity: '__dify__file__', filename: 'notes.txt', extension: '.txt', transfer_method: 'local_file', size: docs[0]!.bytes.length });
    expect(nf.outputs.text).toContain('zanzibar');
  });
});

describe('list-operator', () => {
  /** A list operator over `[start, obj, items]` (a json_object input), ending with its three outputs. */
  const listApp = (data: Record<string, unknown>) =>
    workflowDsl(
      [startNode([{ variable: 'obj', type: 'json_object' }, { variable: 'n', required: false }]), { id: 'lo', type: 'list-operator', variable: ['start', 'obj', 'items'], ...data }, endNode({ result: ['lo', 'result'], first: ['lo', 'first_record'], last: ['lo', 'last_record'] })],
      [['start', 'lo'], ['lo', 'end']],
    );
  const filter = (comparison_operator: string, value: unknown, key = '') => ({ filter_by: { enabled: true, conditions: [{ key, comparison_operator, value }] } });
  const words = ['apple', 'banana', 'cherry', '', 'pineapple'];

  it('every string operator', async () => {
    const cases: [string, string, string[]][] = [
      ['contains', 'apple', ['apple', 'pineapple']],
      ['not contains', 'apple', ['banana', 'cherry', '']],
      ['start with', 'ba', ['banana']],
      ['end with', 'rry', ['cherry']],
      ['is', 'cherry', ['cherry']],
      ['is not', 'cherry', ['apple', 'banana', '', 'pineapple']],
      ['in', 'banana split', ['banana', '']],
      ['not in', 'banana split', ['apple', 'cherry', 'pineapple']],
      ['empty', '', ['']],
      ['not empty', '', ['apple', 'banana', 'cherry', 'pineapple']],
    ];
    for (const [op, value, want] of cases) {
      const { apiKey } = await s.importApp(listApp(filter(op, value)));
      const out = await run(apiKey, { obj: { items: words } });
      expect(out.outputs, op).toEqual({ result: want, first: want[0] ?? null, last: want.at(-1) ?? null });
    }
  });

  it('every number operator; the filter value is a template', async () => {
    const nums = [3, 1, 4, 1, 5, 9, 2, 6];
    const cases: [string, number[]][] = [
      ['=', [4]],
      ['≠', [3, 1, 1, 5, 9, 2, 6]],
      ['<', [3, 1, 1, 2]],
      ['≤', [3, 1, 4, 1, 2]],
      ['>', [5, 9, 6]],
      ['≥', [4, 5, 9, 6]],
    ];
    for (const [op, want] of cases) {
      const { apiKey } = await s.importApp(listApp(filter(op, '{{#start.n#}}')));
      const out = await run(apiKey, { obj: { items: nums }, n: '4' });
      expect(out.outputs.result, op).toEqual(want);
    }
    const { apiKey } = await s.importApp(listApp(filter('>', 'many')));
    expect(await run(apiKey, { obj: { items: nums } })).toMatchObject({ status: 'failed', error: 'Invalid filter value: many' });
  });

  it('extract_by serial (1-based, a template), order asc/desc, limit, in Dify\'s order (filter, extract, order, limit)', async () => {
    const both = async (data: Record<string, unknown>, items: unknown[], n?: string) => (await run((await s.importApp(listApp(data))).apiKey, { obj: { items }, ...(n ? { n } : {}) })).outputs;
    expect(await both({ extract_by: { enabled: true, serial: '{{#start.n#}}' } }, words, '2')).toEqual({ result: ['banana'], first: 'banana', last: 'banana' });
    expect(await both({ order_by: { enabled: true, key: '', value: 'asc' } }, [10, 2, 33, 2.5])).toMatchObject({ result: [2, 2.5, 10, 33] });
    expect(await both({ order_by: { enabled: true, key: '', value: 'desc' } }, ['b', 'a', 'B', 'é'])).toMatchObject({ result: ['é', 'b', 'a', 'B'] });
    expect(await both({ limit: { enabled: true, size: 2 } }, words)).toEqual({ result: ['apple', 'banana'], first: 'apple', last: 'banana' });
    expect(await both({ ...filter('contains', 'a'), order_by: { enabled: true, value: 'desc' }, limit: { enabled: true, size: 2 } }, words)).toMatchObject({ result: ['pineapple', 'banana'] });
    expect(await both({}, [])).toEqual({ result: [], first: null, last: null });
    const bad = await run((await s.importApp(listApp({ extract_by: { enabled: true, serial: '9' } }))).apiKey, { obj: { items: words } });
    expect(bad).toMatchObject({ status: 'failed', error: 'Invalid serial index: must be <= 5, got 9' });
    const mixed = await run((await s.importApp(listApp({}))).apiKey, { obj: { items: [1, 'a'] } });
    expect(mixed).toMatchObject({ status: 'failed', error: 'Variable start.obj.items is not an ArrayFileSegment, ArrayNumberSegment or ArrayStringSegment' });
  });

  it('files: filter by extension, name, size, type and transfer_method; order by size; out come Dify file mappings', async () => {
    const app = (data: Record<string, unknown>) =>
      workflowDsl(
        [startNode([{ variable: 'files', type: 'file-list' }]), { id: 'lo', type: 'list-operator', variable: ['start', 'files'], ...data }, endNode({ result: ['lo', 'result'], first: ['lo', 'first_record'] })],
        [['start', 'lo'], ['lo', 'end']],
      );
    const probe = await s.importApp(app({}));
    const pick = ['notes.txt', 'paper.pdf', 'data.json'].map((n) => docs.find((d) => d.name === n)!);
    const refs: Record<string, unknown>[] = [];
    for (const d of pick) refs.push(local(await upload(probe.apiKey, d)));
    refs.push({ type: 'document', transfer_method: 'remote_url', url: `${remoteUrl}/guide.md` });
    const names = async (data: Record<string, unknown>) => {
      const key = (await s.importApp(app(data))).apiKey;
      // uploads belong to the app they were uploaded to: upload again for this app
      const mine: Record<string, unknown>[] = [];
      for (const d of pick) mine.push(local(await upload(key, d)));
      mine.push(refs[3]!);
      const out = await run(key, { files: mine });
      expect(out.status, out.error).toBe('succeeded');
      return (out.outputs.result as { filename: string }[]).map((f) => f.filename);
    };
    expect(await names(filter('is', '.pdf', 'extension'))).toEqual(['paper.pdf']);
    expect(await names(filter('start with', 'n', 'name'))).toEqual(['notes.txt']);
    expect(await names(filter('>', '40', 'size'))).toEqual(pick.filter((d) => d.bytes.length > 40).map((d) => d.name));
    expect(await names(filter('in', ['remote_url'], 'transfer_method'))).toEqual(['guide.md']);
    expect(await names(filter('not in', ['document'], 'type'))).toEqual([]);
    expect(await names({ order_by: { enabled: true, key: 'size', value: 'desc' } })).toEqual(['paper.pdf', 'data.json', 'notes.txt', 'guide.md']);
    expect(await names({ order_by: { enabled: true, key: 'name', value: 'asc' } })).toEqual(['data.json', 'guide.md', 'notes.txt', 'paper.pdf']);
    const out = await run(probe.apiKey, { files: refs.slice(0, 1) });
    expect(out.outputs.first).toMatchObject({ dify_model_identity: '__dify__file__', filename: 'notes.txt', extension: '.txt', mime_type: 'text/plain', transfer_method: 'local_file', type: 'document' });
    const bad = await run((await s.importApp(app({ order_by: { enabled: true, key: 'colour', value: 'asc' } }))).apiKey, { files: [] });
    expect(bad.status).toBe('succeeded'); // an empty list never reaches the order key
  });

  it('import refuses a bad operator naming the node and the field', async () => {
    await expect(s.importApp(listApp(filter('approximately', 'x')))).rejects.toThrow(/node lo \(list-operator\): filter_by\.conditions\[0\]\.comparison_operator "approximately" is not supported/);
  });
});

describe('assigner v1 and variable-assigner', () => {
  const chatApp = (nodes: NodeSpec[], edges: [string, string][], convVars: Record<string, unknown>[]) => {
    const yaml = workflowDsl(nodes, edges, { mode: 'advanced-chat' });
    return yaml.replace('workflow:\n', `workflow:\n  conversation_variables: ${JSON.stringify(convVars)}\n`);
  };
  const chat = async (key: string, query: string, conversation_id = '') => {
    const r = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: json(key), body: JSON.stringify({ inputs: {}, query, user: 'u1', response_mode: 'blocking', conversation_id }) });
    expect(r.status).toBe(200);
    return (await r.json()) as { answer: string; conversation_id: string };
  };

  it('write_mode over-write, append and clear on conversation variables, carried to the next turn', async () => {
    const yaml = chatApp(
      [
        startNode(),
        { id: 'w', type: 'assigner', assigned_variable_selector: ['conversation', 'last'], write_mode: 'over-write', input_variable_selector: ['sys', 'query'] },
        { id: 'a', type: 'assigner', assigned_variable_selector: ['conversation', 'all'], write_mode: 'append', input_variable_selector: ['sys', 'query'] },
        { id: 'c', type: 'assigner', version: '1', assigned_variable_selector: ['conversation', 'count'], write_mode: 'clear' },
        { id: 'answer', type: 'answer', answer: '{{#conversation.last#}}|{{#conversation.all#}}|{{#conversation.count#}}' },
      ],
      [['start', 'w'], ['w', 'a'], ['a', 'c'], ['c', 'answer']],
      [
        { id: 'v1', name: 'last', value_type: 'string', value: 'none' },
        { id: 'v2', name: 'all', value_type: 'array[string]', value: [] },
        { id: 'v3', name: 'count', value_type: 'number', value: 7 },
      ],
    );
    const { apiKey } = await s.importApp(yaml);
    const one = await chat(apiKey, 'first');
    expect(one.answer).toBe('first|["first"]|0');
    const two = await chat(apiKey, 'second', one.conversation_id);
    expect(two.answer).toBe('second|["first","second"]|0');
  });

  it('append to a non-array fails the node; a bad write_mode is refused at import', async () => {
    const yaml = chatApp(
      [startNode(), { id: 'a', type: 'assigner', assigned_variable_selector: ['conversation', 'last'], write_mode: 'append', input_variable_selector: ['sys', 'query'] }, { id: 'answer', type: 'answer', answer: 'x' }],
      [['start', 'a'], ['a', 'answer']],
      [{ id: 'v1', name: 'last', value_type: 'string', value: '' }],
    );
    const { apiKey } = await s.importApp(yaml);
    const r = await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: json(apiKey), body: JSON.stringify({ inputs: {}, query: 'q', user: 'u1', response_mode: 'streaming' }) });
    const events = dataFrames(parseSse(await r.text()));
    expect(events.find((e) => e.event === 'workflow_finished')).toMatchObject({ data: { status: 'failed', error: 'Operation append is not supported: variable conversation.last is not an array' } });
    await expect(s.importApp(yaml.replace('write_mode: append', 'write_mode: sideways'))).rejects.toThrow(/node a \(assigner\): write_mode "sideways" is not supported \(supported: over-write, append, clear\)/);
  });

  it('variable-assigner (the old name of the variable aggregator): plain and grouped', async () => {
    const yaml = workflowDsl(
      [
        startNode([{ variable: 'a' }, { variable: 'b', required: false }]),
        { id: 'va', type: 'variable-assigner', output_type: 'string', variables: [['start', 'zzz'], ['start', 'a']] },
        { id: 'vg', type: 'variable-assigner', output_type: 'string', variables: [], advanced_settings: { group_enabled: true, groups: [{ group_name: 'G1', output_type: 'string', variables: [['start', 'b']], groupId: 'g1' }] } },
        endNode({ plain: ['va', 'output'], grouped: ['vg', 'G1', 'output'] }),
      ],
      [['start', 'va'], ['va', 'vg'], ['vg', 'end']],
    );
    const { apiKey } = await s.importApp(yaml);
    expect((await run(apiKey, { a: 'A', b: 'B' })).outputs).toEqual({ plain: 'A', grouped: 'B' });
  });
});

describe('containers inside containers', () => {
  it('an iteration inside a loop and a loop inside a (parallel) iteration', async () => {
    // a loop of 2 rounds; in each round an iteration renders every item and the assigner adds the list to acc
    const loopIter = workflowDsl(
      [
        startNode([{ variable: 'obj', type: 'json_object' }]),
        { id: 'lp', type: 'loop', loop_count: 2, break_conditions: [], logical_operator: 'and', loop_variables: [{ label: 'acc', var_type: 'array[string]', value_type: 'constant', value: '[]' }], start_node_id: 'lps' },
        { id: 'lps', type: 'loop-start', parentId: 'lp' },
        { id: 'it', type: 'iteration', parentId: 'lp', iterator_selector: ['start', 'obj', 'items'], output_selector: ['tt', 'output'], start_node_id: 'its' },
        { id: 'its', type: 'iteration-start', parentId: 'it' },
        { id: 'tt', type: 'template-transform', parentId: 'it', template: '<{{ x }}>', variables: [{ variable: 'x', value_selector: ['it', 'item'] }] },
        { id: 'as', type: 'assigner', version: '2', parentId: 'lp', items: [{ variable_selector: ['lp', 'acc'], operation: 'extend', input_type: 'variable', value: ['it', 'output'] }] },
        endNode({ acc: ['lp', 'acc'] }),
      ],
      [['start', 'lp'], ['lps', 'it'], ['its', 'tt'], ['it', 'as'], ['lp', 'end']],
    );
    const a = await s.importApp(loopIter);
    const out = await run(a.apiKey, { obj: { items: ['a', 'b'] } });
    expect(out.status, out.error).toBe('succeeded');
    expect(out.outputs.acc).toEqual(['<a>', '<b>', '<a>', '<b>']);

    // a parallel iteration whose items each run a loop counting to the item
    const iterLoop = workflowDsl(
      [
        startNode([{ variable: 'obj', type: 'json_object' }]),
        { id: 'it', type: 'iteration', iterator_selector: ['start', 'obj', 'items'], output_selector: ['lp', 'n'], is_parallel: true, parallel_nums: 3, start_node_id: 'its' },
        { id: 'its', type: 'iteration-start', parentId: 'it' },
        { id: 'lp', type: 'loop', parentId: 'it', loop_count: 10, logical_operator: 'and', break_conditions: [{ variable_selector: ['lp', 'n'], comparison_operator: '≥', value: '{{#it.item#}}', varType: 'number' }], loop_variables: [{ label: 'n', var_type: 'number', value_type: 'constant', value: '0' }], start_node_id: 'lps' },
        { id: 'lps', type: 'loop-start', parentId: 'lp' },
        { id: 'inc', type: 'assigner', version: '2', parentId: 'lp', items: [{ variable_selector: ['lp', 'n'], operation: '+=', input_type: 'constant', value: 1 }] },
        endNode({ counts: ['it', 'output'] }),
      ],
      [['start', 'it'], ['its', 'lp'], ['lps', 'inc'], ['it', 'end']],
    );
    const b = await s.importApp(iterLoop);
    const out2 = await run(b.apiKey, { obj: { items: [3, 1, 2, 5] } });
    expect(out2.status, out2.error).toBe('succeeded');
    expect(out2.outputs.counts).toEqual([3, 1, 2, 5]);
  });
});
