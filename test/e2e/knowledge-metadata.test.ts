import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, testDialect, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { responseErrors, validateResponse } from '../helpers/openapi.js';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { MetadataService } from '../../src/knowledge/documents/metadata.js';

let s: TestServer;
let kb: ReturnType<typeof kbClient>;

beforeAll(async () => {
  s = await startServer({ env: { QUEUE_POLL_MS: '50', KNOWLEDGE_METADATA_NAME_MAX_LENGTH: '20' } });
  kb = kbClient(s, await s.datasetKey());
});
afterAll(async () => {
  await s?.close();
});

const NO_SUCH = '00000000-0000-0000-0000-000000000000';
const BUILT_IN = [
  { name: 'document_name', type: 'string' },
  { name: 'uploader', type: 'string' },
  { name: 'upload_date', type: 'time' },
  { name: 'last_update_date', type: 'time' },
  { name: 'source', type: 'string' },
];

async function doc(ds: string, name: string, text: string): Promise<string> {
  const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name, text, indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
  expect(r.status).toBe(200);
  await kb.settle(ds, r.body.batch);
  return r.body.document.id;
}

async function field(ds: string, name: string, type = 'string'): Promise<string> {
  const r = await kb.call('POST', `/datasets/${ds}/metadata`, { type, name });
  expect(r.status).toBe(201);
  return r.body.id as string;
}

const setValues = (ds: string, operation_data: unknown) => kb.call('POST', `/datasets/${ds}/documents/metadata`, { operation_data });
const getDoc = async (ds: string, id: string) => (await kb.call('GET', `/datasets/${ds}/documents/${id}`)).body;

describe('dataset metadata fields', () => {
  it('create, list with counts, rename, delete', async () => {
    const ds = await kb.dataset('meta-crud');
    const created = await kb.call('POST', `/datasets/${ds}/metadata`, { type: 'string', name: 'author' });
    expect(created.status).toBe(201);
    validateResponse('/datasets/{dataset_id}/metadata', 'post', 201, created.body);
    expect(created.body).toEqual({ id: expect.any(String), name: 'author', type: 'string' });
    const year = await field(ds, 'year', 'number');

    const list = await kb.call('GET', `/datasets/${ds}/metadata`);
    expect(list.status).toBe(200);
    validateResponse('/datasets/{dataset_id}/metadata', 'get', 200, list.body);
    expect(list.body).toEqual({
      doc_metadata: [
        { id: created.body.id, name: 'author', type: 'string', count: 0 },
        { id: year, name: 'year', type: 'number', count: 0 },
      ],
      built_in_field_enabled: false,
    });
    // The dataset object lists its fields.
    expect((await kb.call('GET', `/datasets/${ds}`)).body.doc_metadata).toEqual([
      { id: created.body.id, name: 'author', type: 'string' },
      { id: year, name: 'year', type: 'number' },
    ]);

    const renamed = await kb.call('PATCH', `/datasets/${ds}/metadata/${created.body.id}`, { name: 'writer' });
    expect(renamed.status).toBe(200);
    validateResponse('/datasets/{dataset_id}/metadata/{metadata_id}', 'patch', 200, renamed.body);
    expect(renamed.body).toEqual({ id: created.body.id, name: 'writer', type: 'string' });

    const del = await kb.call('DELETE', `/datasets/${ds}/metadata/${year}`);
    expect(del.status).toBe(204);
    expect((await kb.call('GET', `/datasets/${ds}/metadata`)).body.doc_metadata).toEqual([{ id: created.body.id, name: 'writer', type: 'string', count: 0 }]);
  });

  it('refuses duplicates, built-in names, long names, bad types and unknown ids with Dify’s errors', async () => {
    const ds = await kb.dataset('meta-errors');
    const id = await field(ds, 'author');
    await field(ds, 'team');
    const post = (body: unknown) => kb.call('POST', `/datasets/${ds}/metadata`, body);
    expect(await post({ type: 'string', name: 'author' })).toEqual({ status: 400, body: { code: 'invalid_param', message: 'Metadata name already exists.', status: 400 } });
    expect(await post({ type: 'time', name: 'upload_date' })).toEqual({ status: 400, body: { code: 'invalid_param', message: 'Metadata name already exists in Built-in fields.', status: 400 } });
    // The limit is config (20 here) and named in the message.
    expect(await post({ type: 'string', name: 'n'.repeat(21) })).toEqual({ status: 400, body: { code: 'invalid_param', message: 'Metadata name cannot exceed 20 characters.', status: 400 } });
    expect((await post({ type: 'string', name: 'n'.repeat(20) })).status).toBe(201);
    expect(await post({ type: 'date', name: 'when' })).toEqual({ status: 400, body: { code: 'invalid_param', message: 'type must be one of string, number, time.', status: 400 } });
    expect((await post({ type: 'string' })).body).toEqual({ code: 'invalid_param', message: 'name is required.', status: 400 });
    expect((await post({ name: 'x' })).body.code).toBe('invalid_param');

    const patch = (mid: string, body: unknown) => kb.call('PATCH', `/datasets/${ds}/metadata/${mid}`, body);
    expect((await patch(id, { name: 'team' })).body).toEqual({ code: 'invalid_param', message: 'Metadata name already exists.', status: 400 });
    expect((await patch(id, { name: 'source' })).body.message).toBe('Metadata name already exists in Built-in fields.');
    expect((await patch(id, { name: 'n'.repeat(21) })).body.message).toBe('Metadata name cannot exceed 20 characters.');
    expect(await patch(NO_SUCH, { name: 'fresh' })).toEqual({ status: 404, body: { code: 'not_found', message: 'Metadata not found.', status: 404 } });
    expect(await kb.call('DELETE', `/datasets/${ds}/metadata/${NO_SUCH}`)).toEqual({ status: 404, body: { code: 'not_found', message: 'Metadata not found.', status: 404 } });

    // A field of another dataset is unknown here.
    const other = await kb.dataset('meta-errors-other');
    expect((await kb.call('DELETE', `/datasets/${other}/metadata/${id}`)).status).toBe(404);
    for (const [method, path] of [
      ['GET', `/datasets/${NO_SUCH}/metadata`],
      ['POST', `/datasets/${NO_SUCH}/metadata`],
      ['GET', `/datasets/${NO_SUCH}/metadata/built-in`],
      ['POST', `/datasets/${NO_SUCH}/metadata/built-in/enable`],
      ['POST', `/datasets/${NO_SUCH}/documents/metadata`],
    ] as const) {
      const r = await kb.call(method, path, method === 'POST' ? { type: 'string', name: 'x', operation_data: [] } : undefined);
      expect(r).toEqual({ status: 404, body: { code: 'not_found', message: 'Dataset not found.', status: 404 } });
    }
  });
});

describe('built-in fields', () => {
  it('lists them, and enable / disable shows them on the dataset and its documents', async () => {
    const ds = await kb.dataset('builtin');
    const d = await doc(ds, 'Handbook', 'Remote work is allowed on Fridays.');
    const fields = await kb.call('GET', `/datasets/${ds}/metadata/built-in`);
    expect(fields.status).toBe(200);
    validateResponse('/datasets/{dataset_id}/metadata/built-in', 'get', 200, fields.body);
    expect(fields.body).toEqual({ fields: BUILT_IN });
    expect((await getDoc(ds, d)).doc_metadata).toEqual([]);

    const on = await kb.call('POST', `/datasets/${ds}/metadata/built-in/enable`);
    expect(on.status).toBe(200);
    validateResponse('/datasets/{dataset_id}/metadata/built-in/{action}', 'post', 200, on.body);
    expect(on.body).toEqual({ result: 'success' });
    const dsBody = (await kb.call('GET', `/datasets/${ds}`)).body;
    expect(dsBody.built_in_field_enabled).toBe(true);
    expect(dsBody.doc_metadata).toEqual(BUILT_IN.map((f) => ({ id: 'built-in', ...f })));
    expect((await kb.call('GET', `/datasets/${ds}/metadata`)).body).toEqual({ doc_metadata: [], built_in_field_enabled: true });
    const got = await getDoc(ds, d);
    expect(got.doc_metadata).toEqual([
      { id: 'built-in', name: 'document_name', type: 'string', value: 'Handbook' },
      { id: 'built-in', name: 'uploader', type: 'string', value: null },
      { id: 'built-in', name: 'upload_date', type: 'time', value: String(got.created_at) },
      { id: 'built-in', name: 'last_update_date', type: 'time', value: expect.stringMatching(/^\d+$/) },
      { id: 'built-in', name: 'source', type: 'string', value: 'file_upload' },
    ]);
    // Enabling twice is harmless.
    expect((await kb.call('POST', `/datasets/${ds}/metadata/built-in/enable`)).status).toBe(200);

    expect((await kb.call('POST', `/datasets/${ds}/metadata/built-in/disable`)).body).toEqual({ result: 'success' });
    expect((await kb.call('GET', `/datasets/${ds}`)).body).toMatchObject({ built_in_field_enabled: false, doc_metadata: [] });
    expect((await getDoc(ds, d)).doc_metadata).toEqual([]);
    expect(await kb.call('POST', `/datasets/${ds}/metadata/built-in/toggle`)).toEqual({ status: 400, body: { code: 'invalid_action', message: 'Invalid action.', status: 400 } });
  });
});

describe('POST /datasets/{id}/documents/metadata', () => {
  it('sets, replaces and partially updates values; documents report them; rename and delete follow', async () => {
    const ds = await kb.dataset('values');
    const a = await doc(ds, 'A', 'Alpha text.');
    const b = await doc(ds, 'B', 'Beta text.');
    const author = await field(ds, 'author');
    const year = await field(ds, 'year', 'number');

    const r = await setValues(ds, [
      { document_id: a, metadata_list: [{ id: author, name: 'author', value: 'Ann' }, { id: year, name: 'year', value: 2021 }] },
      { document_id: b, metadata_list: [{ id: author, name: 'author', value: 'Bob' }] },
    ]);
    expect(r.status).toBe(200);
    validateResponse('/datasets/{dataset_id}/documents/metadata', 'post', 200, r.body);
    expect(r.body).toEqual({ result: 'success' });
    expect((await getDoc(ds, a)).doc_metadata).toEqual([
      { id: author, name: 'author', type: 'string', value: 'Ann' },
      { id: year, name: 'year', type: 'number', value: '2021' },
    ]);
    const list = await kb.call('GET', `/datasets/${ds}/documents`);
    expect(list.body.data.find((x: { id: string }) => x.id === b).doc_metadata).toEqual([{ id: author, name: 'author', type: 'string', value: 'Bob' }]);
    expect(responseErrors('/datasets/{dataset_id}/documents', 'get', 200, list.body).filter((e) => /doc_metadata/.test(e))).toEqual([]);
    expect((await kb.call('GET', `/datasets/${ds}/metadata`)).body.doc_metadata).toEqual([
      { id: author, name: 'author', type: 'string', count: 2 },
      { id: year, name: 'year', type: 'number', count: 1 },
    ]);

    // Without partial_update the list replaces every value of the document.
    await setValues(ds, [{ document_id: a, metadata_list: [{ id: year, name: 'year', value: 2022 }] }]);
    expect((await getDoc(ds, a)).doc_metadata).toEqual([{ id: year, name: 'year', type: 'number', value: '2022' }]);
    // With it, the others stay.
    await setValues(ds, [{ document_id: a, partial_update: true, metadata_list: [{ id: author, name: 'author', value: 'Ada' }] }]);
    expect((await getDoc(ds, a)).doc_metadata).toEqual([
      { id: author, name: 'author', type: 'string', value: 'Ada' },
      { id: year, name: 'year', type: 'number', value: '2022' },
    ]);

    // A renamed field keeps its values; a deleted one takes them along.
    await kb.call('PATCH', `/datasets/${ds}/metadata/${author}`, { name: 'writer' });
    expect((await getDoc(ds, b)).doc_metadata).toEqual([{ id: author, name: 'writer', type: 'string', value: 'Bob' }]);
    await kb.call('DELETE', `/datasets/${ds}/metadata/${author}`);
    expect((await getDoc(ds, b)).doc_metadata).toEqual([]);
    expect((await getDoc(ds, a)).doc_metadata).toEqual([{ id: year, name: 'year', type: 'number', value: '2022' }]);

    // With built-in fields enabled they follow the custom values.
    await kb.call('POST', `/datasets/${ds}/metadata/built-in/enable`);
    const withBuiltIn = (await getDoc(ds, a)).doc_metadata as { id: string; name: string }[];
    expect(withBuiltIn.map((m) => m.name)).toEqual(['year', ...BUILT_IN.map((f) => f.name)]);

    // An empty list clears the document's values; deleting a document drops them from the counts.
    await setValues(ds, [{ document_id: a, metadata_list: [] }]);
    expect((await kb.call('GET', `/datasets/${ds}/metadata`)).body.doc_metadata).toEqual([{ id: year, name: 'year', type: 'number', count: 0 }]);
    await setValues(ds, [{ document_id: b, metadata_list: [{ id: year, name: 'year', value: 1999 }] }]);
    expect((await kb.call('DELETE', `/datasets/${ds}/documents/${b}`)).status).toBe(204);
    expect((await kb.call('GET', `/datasets/${ds}/metadata`)).body.doc_metadata).toEqual([{ id: year, name: 'year', type: 'number', count: 0 }]);
  });

  it('checks everything before changing anything, naming the field', async () => {
    const ds = await kb.dataset('values-errors');
    const a = await doc(ds, 'A', 'Alpha text.');
    const f = await field(ds, 'author');
    await setValues(ds, [{ document_id: a, metadata_list: [{ id: f, name: 'author', value: 'Ann' }] }]);
    const before = (await getDoc(ds, a)).doc_metadata;

    const ok = { document_id: a, metadata_list: [{ id: f, name: 'author', value: 'Zed' }] };
    expect(await setValues(ds, [ok, { document_id: NO_SUCH, metadata_list: [] }])).toEqual({ status: 400, body: { code: 'invalid_param', message: 'Document not found.', status: 400 } });
    expect((await setValues(ds, [ok, { document_id: a, metadata_list: [{ id: NO_SUCH, name: 'x', value: 1 }] }])).body).toEqual({
      code: 'invalid_param',
      message: 'operation_data[1].metadata_list[0].id: Metadata not found.',
      status: 400,
    });
    expect((await setValues(ds, [{ document_id: a, metadata_list: [{ id: f, name: 'author', value: { nested: true } }] }])).body.message).toBe(
      'operation_data[0].metadata_list[0].value must be a string, a number or null.',
    );
    expect((await setValues(ds, [{ metadata_list: [] }])).body.message).toBe('operation_data[0].document_id is required.');
    expect((await setValues(ds, [{ document_id: a }])).body.message).toBe('operation_data[0].metadata_list is required and must be a list.');
    expect((await setValues(ds, [{ document_id: a, metadata_list: [{ name: 'author' }] }])).body.message).toBe('operation_data[0].metadata_list[0].id is required.');
    expect((await setValues(ds, undefined)).body.message).toBe('operation_data is required and must be a list.');
    expect((await getDoc(ds, a)).doc_metadata).toEqual(before);

    // More documents than one SQL statement can bind: still a 400, not a 500.
    const many = Array.from({ length: 33_000 }, (_, i) => ({ document_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, metadata_list: [] }));
    expect((await setValues(ds, many)).body).toEqual({ code: 'invalid_param', message: 'Document not found.', status: 400 });

    // A document of another dataset is not found here.
    const other = await kb.dataset('values-errors-other');
    const foreign = await doc(other, 'F', 'Foreign text.');
    expect((await setValues(ds, [{ document_id: foreign, metadata_list: [] }])).body.message).toBe('Document not found.');
    // So is a field of another dataset.
    const foreignField = await field(other, 'author');
    expect((await setValues(ds, [{ document_id: a, metadata_list: [{ id: foreignField, name: 'author', value: 'X' }] }])).body.message).toBe('operation_data[0].metadata_list[0].id: Metadata not found.');
  });

  it('deleting a dataset deletes its fields and values', async () => {
    const ds = await kb.dataset('values-dataset-delete');
    const a = await doc(ds, 'A', 'Alpha text.');
    const f = await field(ds, 'author');
    await setValues(ds, [{ document_id: a, metadata_list: [{ id: f, name: 'author', value: 'Ann' }] }]);
    expect((await kb.call('DELETE', `/datasets/${ds}`)).status).toBe(204);
    const db = s.runtime.store.db;
    expect(await db.selectFrom('dataset_metadata').select('id').where('dataset_id', '=', ds).execute()).toEqual([]);
    expect(await db.selectFrom('document_metadata_values').select('document_id').where('dataset_id', '=', ds).execute()).toEqual([]);
  });
});

/** Runs `hook` once, after the first SELECT on `documents` has answered (the write's document check). */
class AfterDocumentCheck implements KyselyPlugin {
  hook: (() => Promise<void>) | undefined;
  readonly #pending = new WeakSet<object>();
  transformQuery(a: PluginTransformQueryArgs): RootOperationNode {
    const n = a.node as { kind: string; from?: unknown };
    if (n.kind === 'SelectQueryNode' && JSON.stringify(n.from).includes('"documents"')) this.#pending.add(a.queryId);
    return a.node;
  }
  async transformResult(a: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const hook = this.#pending.has(a.queryId) ? this.hook : undefined;
    this.hook = hook ? undefined : this.hook;
    await hook?.();
    return a.result;
  }
}

// PostgreSQL only: on SQLite the hook's DELETE would wait for the connection the checking query holds.
describe.skipIf(testDialect() !== 'postgres')('a document deleted while its metadata is written', () => {
  it('the write finds no document and leaves no values behind', async () => {
    const ds = await kb.dataset('metadata-delete-race');
    const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'D', text: 'hello world', indexing_technique: 'economy', process_rule: { mode: 'automatic' } });
    await kb.settle(ds, r.body.batch);
    const docId = r.body.document.id as string;
    const field = (await kb.call('POST', `/datasets/${ds}/metadata`, { type: 'string', name: 'author' })).body.id as string;
    const plugin = new AfterDocumentCheck();
    const service = new MetadataService(s.runtime.store.db.withPlugin(plugin), { now: () => Date.now() }, 255);
    const dataset = await s.runtime.datasets.get(await s.runtime.apps.workspaceId(), ds);
    // The delete lands between the write's check of the documents and its transaction.
    plugin.hook = async () => {
      expect((await kb.call('DELETE', `/datasets/${ds}/documents/${docId}`)).status).toBe(204);
    };
    const write = service.updateDocuments(dataset, { operation_data: [{ document_id: docId, metadata_list: [{ id: field, name: 'author', value: 'Ann' }] }] }, 'key');
    await expect(write).rejects.toMatchObject({ code: 'invalid_param', message: 'Document not found.' });
    expect(await s.runtime.store.db.selectFrom('document_metadata_values').selectAll().where('document_id', '=', docId).execute()).toEqual([]);
    expect((await kb.call('GET', `/datasets/${ds}/metadata`)).body.doc_metadata[0].count).toBe(0);
  });
});
