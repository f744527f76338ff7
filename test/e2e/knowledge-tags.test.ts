import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { responseErrors, validateResponse } from '../helpers/openapi.js';

/** Contract errors of a dataset object's `tags` (the rest of the object has known nullable-field gaps in Dify's document). */
const tagErrors = (path: string, body: unknown) => responseErrors(path, 'get', 200, body).filter((e) => /\/tags/.test(e));

let s: TestServer;
let kb: ReturnType<typeof kbClient>;

beforeAll(async () => {
  s = await startServer({ env: { KNOWLEDGE_TAG_NAME_MAX_LENGTH: '12' } });
  kb = kbClient(s, await s.datasetKey());
});
afterAll(async () => {
  await s?.close();
});

const NO_SUCH = '00000000-0000-0000-0000-000000000000';

async function tag(name: string): Promise<string> {
  const r = await kb.call('POST', '/datasets/tags', { name });
  expect(r.status).toBe(200);
  return r.body.id as string;
}

describe('knowledge tags', () => {
  it('create, list with binding counts, rename, delete', async () => {
    const r = await kb.call('POST', '/datasets/tags', { name: 'Product' });
    expect(r.status).toBe(200);
    validateResponse('/datasets/tags', 'post', 200, r.body);
    expect(r.body).toEqual({ id: expect.any(String), name: 'Product', type: 'knowledge', binding_count: '0' });
    const other = await tag('Legal');

    const ds = await kb.dataset('tagged');
    expect((await kb.call('POST', '/datasets/tags/binding', { tag_ids: [r.body.id], target_id: ds })).status).toBe(204);

    const list = await kb.call('GET', '/datasets/tags');
    expect(list.status).toBe(200);
    validateResponse('/datasets/tags', 'get', 200, list.body);
    // Newest first, as Dify; binding_count is a string.
    const mine = (list.body as unknown as { id: string; name: string; binding_count: string }[]).filter((t) => t.id === r.body.id || t.id === other);
    expect(mine).toEqual([
      { id: other, name: 'Legal', type: 'knowledge', binding_count: '0' },
      { id: r.body.id, name: 'Product', type: 'knowledge', binding_count: '1' },
    ]);

    const renamed = await kb.call('PATCH', '/datasets/tags', { tag_id: r.body.id, name: 'Products' });
    expect(renamed.status).toBe(200);
    validateResponse('/datasets/tags', 'patch', 200, renamed.body);
    expect(renamed.body).toEqual({ id: r.body.id, name: 'Products', type: 'knowledge', binding_count: '1' });
    expect((await kb.call('GET', `/datasets/${ds}`)).body.tags).toEqual([{ id: r.body.id, name: 'Products', type: 'knowledge' }]);

    expect((await kb.call('DELETE', '/datasets/tags', { tag_id: r.body.id })).status).toBe(204);
    const after = (await kb.call('GET', '/datasets/tags')).body as unknown as { id: string }[];
    expect(after.map((t) => t.id)).not.toContain(r.body.id);
    // The dataset stays, untagged.
    const d = await kb.call('GET', `/datasets/${ds}`);
    expect(d.status).toBe(200);
    expect(d.body.tags).toEqual([]);
  });

  it('refuses duplicate names, bad names and unknown tags with Dify’s errors', async () => {
    const id = await tag('Dup');
    expect(await kb.call('POST', '/datasets/tags', { name: 'Dup' })).toEqual({ status: 400, body: { code: 'invalid_param', message: 'Tag name already exists', status: 400 } });
    await tag('Dup2');
    expect((await kb.call('PATCH', '/datasets/tags', { tag_id: id, name: 'Dup2' })).body).toEqual({ code: 'invalid_param', message: 'Tag name already exists', status: 400 });
    // The limit is config (12 here) and named in the message.
    expect(await kb.call('POST', '/datasets/tags', { name: 'x'.repeat(13) })).toEqual({ status: 400, body: { code: 'invalid_param', message: 'name must be between 1 and 12 characters.', status: 400 } });
    expect((await kb.call('POST', '/datasets/tags', { name: 'x'.repeat(12) })).status).toBe(200);
    expect((await kb.call('POST', '/datasets/tags', { name: '' })).body.message).toBe('name must be between 1 and 12 characters.');
    expect((await kb.call('POST', '/datasets/tags', {})).body.code).toBe('invalid_param');
    expect((await kb.call('POST', '/datasets/tags', { name: 5 })).body.code).toBe('invalid_param');

    expect(await kb.call('PATCH', '/datasets/tags', { tag_id: NO_SUCH, name: 'Fresh' })).toEqual({ status: 404, body: { code: 'not_found', message: 'Tag not found', status: 404 } });
    expect(await kb.call('DELETE', '/datasets/tags', { tag_id: NO_SUCH })).toEqual({ status: 404, body: { code: 'not_found', message: 'Tag not found', status: 404 } });
    expect(await kb.call('DELETE', '/datasets/tags', {})).toEqual({ status: 400, body: { code: 'invalid_param', message: 'tag_id is required.', status: 400 } });
  });

  it('binds and unbinds (tag_ids or legacy tag_id); unknown tags are skipped, unknown datasets are 404', async () => {
    const ds = await kb.dataset('bind-target');
    const a = await tag('Alpha');
    const b = await tag('Beta');
    // Unknown tag ids are skipped; binding twice is harmless.
    expect((await kb.call('POST', '/datasets/tags/binding', { tag_ids: [a, b, NO_SUCH], target_id: ds })).status).toBe(204);
    expect((await kb.call('POST', '/datasets/tags/binding', { tag_ids: [a], target_id: ds })).status).toBe(204);
    const bound = await kb.call('GET', `/datasets/${ds}/tags`);
    expect(bound.status).toBe(200);
    validateResponse('/datasets/{dataset_id}/tags', 'get', 200, bound.body);
    expect(bound.body).toEqual({ data: [{ id: a, name: 'Alpha' }, { id: b, name: 'Beta' }], total: 2 });

    expect((await kb.call('POST', '/datasets/tags/unbinding', { tag_id: a, target_id: ds })).status).toBe(204);
    expect((await kb.call('GET', `/datasets/${ds}/tags`)).body).toEqual({ data: [{ id: b, name: 'Beta' }], total: 1 });
    expect((await kb.call('POST', '/datasets/tags/unbinding', { tag_ids: [b], target_id: ds })).status).toBe(204);
    expect((await kb.call('GET', `/datasets/${ds}/tags`)).body).toEqual({ data: [], total: 0 });

    expect(await kb.call('POST', '/datasets/tags/binding', { tag_ids: [a], target_id: NO_SUCH })).toEqual({ status: 404, body: { code: 'not_found', message: 'Dataset not found', status: 404 } });
    expect((await kb.call('POST', '/datasets/tags/unbinding', { tag_ids: [a], target_id: NO_SUCH })).status).toBe(404);
    expect(await kb.call('POST', '/datasets/tags/binding', { tag_ids: [], target_id: ds })).toEqual({ status: 400, body: { code: 'invalid_param', message: 'Tag IDs is required.', status: 400 } });
    expect((await kb.call('POST', '/datasets/tags/binding', { tag_ids: 'x', target_id: ds })).body.message).toBe('tag_ids must be a list of strings.');
    expect((await kb.call('POST', '/datasets/tags/binding', { tag_ids: [a] })).body.message).toBe('target_id is required.');
    expect((await kb.call('POST', '/datasets/tags/unbinding', { target_id: ds })).body.message).toBe('Tag IDs is required.');
    expect(await kb.call('GET', `/datasets/${NO_SUCH}/tags`)).toEqual({ status: 404, body: { code: 'not_found', message: 'Dataset not found.', status: 404 } });
  });

  it('dataset objects report their tags, and GET /datasets filters by tag_ids (any of them)', async () => {
    const x = await kb.dataset('filter-x');
    const y = await kb.dataset('filter-y');
    await kb.dataset('filter-z');
    const t1 = await tag('T1');
    const t2 = await tag('T2');
    const t3 = await tag('T3');
    await kb.call('POST', '/datasets/tags/binding', { tag_ids: [t1, t2], target_id: x });
    await kb.call('POST', '/datasets/tags/binding', { tag_ids: [t2], target_id: y });

    const one = await kb.call('GET', `/datasets?tag_ids=${t1}`);
    expect(one.status).toBe(200);
    expect(tagErrors('/datasets', one.body)).toEqual([]);
    expect(one.body.data.map((d: { id: string }) => d.id)).toEqual([x]);
    expect(one.body.total).toBe(1);
    expect(one.body.data[0].tags).toEqual([
      { id: t1, name: 'T1', type: 'knowledge' },
      { id: t2, name: 'T2', type: 'knowledge' },
    ]);
    const both = await kb.call('GET', `/datasets?tag_ids=${t1}&tag_ids=${t2}&limit=100`);
    expect(both.body.data.map((d: { id: string }) => d.id).sort()).toEqual([x, y].sort());
    // A tag bound to nothing, or an unknown one: no dataset (as Dify), not every dataset.
    expect((await kb.call('GET', `/datasets?tag_ids=${t3}`)).body).toMatchObject({ data: [], total: 0 });
    expect((await kb.call('GET', `/datasets?tag_ids=${NO_SUCH}`)).body).toMatchObject({ data: [], total: 0 });

    const single = await kb.call('GET', `/datasets/${y}`);
    expect(tagErrors('/datasets/{dataset_id}', single.body)).toEqual([]);
    expect(single.body.tags).toEqual([{ id: t2, name: 'T2', type: 'knowledge' }]);

    // Deleting a dataset removes its bindings.
    expect((await kb.call('DELETE', `/datasets/${y}`)).status).toBe(204);
    const counts = (await kb.call('GET', '/datasets/tags')).body as unknown as { id: string; binding_count: string }[];
    expect(counts.find((t) => t.id === t2)?.binding_count).toBe('1');
  });

  it('takes more ids than one SQL statement can bind (no 500)', async () => {
    const ds = await kb.dataset('many-ids');
    const t = await tag('Many');
    const ids = [...Array.from({ length: 33_000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`), t];
    expect((await kb.call('POST', '/datasets/tags/binding', { tag_ids: ids, target_id: ds })).status).toBe(204);
    expect((await kb.call('GET', `/datasets/${ds}/tags`)).body).toEqual({ data: [{ id: t, name: 'Many' }], total: 1 });
    expect((await kb.call('POST', '/datasets/tags/unbinding', { tag_ids: ids, target_id: ds })).status).toBe(204);
    expect((await kb.call('GET', `/datasets/${ds}/tags`)).body.total).toBe(0);
  });

  it('tags belong to the workspace of the key', async () => {
    const other = kbClient(s, (await s.runtime.keys.create('dataset', 'another-workspace', null)).apiKey);
    const mine = await tag('Private');
    expect((await other.call('GET', '/datasets/tags')).body).toEqual([]);
    expect((await other.call('DELETE', '/datasets/tags', { tag_id: mine })).status).toBe(404);
    expect((await other.call('POST', '/datasets/tags', { name: 'Private' })).status).toBe(200);
  });
});
