import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient } from '../helpers/kb-client.js';
import { fixtures } from '../helpers/knowledge.js';
import { example } from '../helpers/fixtures.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

/** Property names of a schema in Dify's OpenAPI document (the copy in test/fixtures/dify-openapi). */
function openapiSchema(name: string): Record<string, unknown> {
  const doc = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'dify-openapi', 'openapi_service.json'), 'utf8')) as {
    components: { schemas: Record<string, { properties: Record<string, unknown> }> };
  };
  return doc.components.schemas[name]!.properties;
}

let s: TestServer;
let kb: ReturnType<typeof kbClient>;
let key: string;

beforeAll(async () => {
  s = await startServer({ env: { QUEUE_POLL_MS: '50', UPLOAD_FILE_SIZE_LIMIT: '1' } });
  key = await s.datasetKey();
  kb = kbClient(s, key);
});
afterAll(async () => s?.close());

const DOCUMENT_FIELDS = [
  'id', 'position', 'data_source_type', 'data_source_info', 'data_source_detail_dict', 'dataset_process_rule_id', 'name',
  'created_from', 'created_by', 'created_at', 'tokens', 'indexing_status', 'error', 'enabled', 'disabled_at', 'disabled_by',
  'archived', 'display_status', 'word_count', 'hit_count', 'doc_form', 'doc_metadata', 'summary_index_status', 'need_summary',
];

describe('datasets', () => {
  it('create, get, list, patch, delete; unknown → 404 Dataset not found.', async () => {
    const c = await kb.call('POST', '/datasets', { name: 'Handbook', description: 'd', indexing_technique: 'economy', permission: 'only_me' });
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ name: 'Handbook', description: 'd', indexing_technique: 'economy', permission: 'only_me', document_count: 0 });
    for (const f of Object.keys(openapiSchema('Dataset'))) expect(c.body).toHaveProperty(f);
    const id = c.body.id as string;
    expect((await kb.call('GET', `/datasets/${id}`)).body.name).toBe('Handbook');
    const list = await kb.call('GET', '/datasets?page=1&limit=100');
    expect(list.body).toMatchObject({ page: 1, limit: 100, has_more: false });
    expect(list.body.data.map((d: { id: string }) => d.id)).toContain(id);
    const p = await kb.call('PATCH', `/datasets/${id}`, { name: 'Handbook 2' });
    expect(p.status).toBe(200);
    expect(p.body.name).toBe('Handbook 2');
    const dup = await kb.call('POST', '/datasets', { name: 'Handbook 2' });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('dataset_name_duplicate');
    expect((await kb.call('DELETE', `/datasets/${id}`)).status).toBe(204);
    const gone = await kb.call('GET', `/datasets/${id}`);
    expect(gone).toEqual({ status: 404, body: { code: 'not_found', message: 'Dataset not found.', status: 404 } });
  });

  it('a keyword matches names case-insensitively, with % and _ matching themselves', async () => {
    for (const name of ['Keyword 100% Sure', 'keyword 100 sure', 'kw_under', 'kwXunder']) expect((await kb.call('POST', '/datasets', { name })).status).toBe(200);
    const names = async (keyword: string) =>
      ((await kb.call('GET', `/datasets?limit=100&keyword=${encodeURIComponent(keyword)}`)).body.data as { name: string }[]).map((d) => d.name).sort();
    expect(await names('KEYWORD 100')).toEqual(['Keyword 100% Sure', 'keyword 100 sure']);
    expect(await names('100%')).toEqual(['Keyword 100% Sure']);
    expect(await names('kw_')).toEqual(['kw_under']);
  });

  it('bad input is a 400 naming the field', async () => {
    expect((await kb.call('POST', '/datasets', { name: '' })).body).toMatchObject({ code: 'invalid_param', message: 'Name must be between 1 to 40 characters.' });
    expect((await kb.call('POST', '/datasets', { name: 'x', indexing_technique: 'fast' })).body.message).toMatch(/indexing_technique/);
    expect((await kb.call('GET', '/datasets?limit=1000')).body).toMatchObject({ status: 400, message: 'limit must be an integer between 1 and 100.' });
  });

  it('an app key is refused on knowledge endpoints (401)', async () => {
    const { apiKey } = await s.importApp(example('completion-writer.yml'));
    const r = await fetch(`${s.api}/datasets`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(r.status).toBe(401);
  });
});

describe('documents', () => {
  it('create-by-text answers {document, batch} at once, then indexes to completed with every stage stamped', async () => {
    const ds = await kb.dataset('by-text');
    const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name: 'Policy', text: 'Vacation policy: twenty days a year.\nRemote work is allowed on Fridays.' });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['batch', 'document']);
    expect(r.body.batch).toMatch(/^\d{20}$/);
    // Exactly the fields of the spec's table (= Dify's OpenAPI `Document` schema).
    expect(Object.keys(r.body.document).sort()).toEqual([...DOCUMENT_FIELDS].sort());
    expect(Object.keys(r.body.document).sort()).toEqual(Object.keys(openapiSchema('Document')).sort());
    expect(r.body.document).toMatchObject({ name: 'Policy', created_from: 'api', data_source_type: 'upload_file', doc_form: 'text_model', enabled: true });
    expect(r.body.document.data_source_detail_dict.upload_file).toMatchObject({ name: 'Policy.txt', extension: 'txt', mime_type: 'text/plain' });
    const st = await kb.settle(ds, r.body.batch);
    expect(st).toMatchObject({ id: r.body.document.id, indexing_status: 'completed', error: null, completed_segments: 2, total_segments: 2 });
    for (const k of ['processing_started_at', 'parsing_completed_at', 'cleaning_completed_at', 'splitting_completed_at', 'completed_at']) expect(typeof st[k]).toBe('number');
    const doc = await kb.call('GET', `/datasets/${ds}/documents/${r.body.document.id}`);
    expect(doc.body).toMatchObject({ indexing_status: 'completed', display_status: 'available' });
    expect(doc.body.tokens).toBeGreaterThan(5);
    expect(doc.body.word_count).toBe('Vacation policy: twenty days a year.'.length + 'Remote work is allowed on Fridays.'.length);
    expect(await kb.retrieve(ds, 'remote fridays')).toEqual(['Remote work is allowed on Fridays.']);
    // The underscore alias the SDKs use.
    const alias = await kb.call('POST', `/datasets/${ds}/document/create_by_text`, { name: 'Other', text: 'x y z' });
    expect(alias.status).toBe(200);
  });

  it('create-by-file parses every supported type (encoding detected); a broken file ends in error saying why', async () => {
    const ds = await kb.dataset('by-file');
    const files = await fixtures();
    const accepted = [];
    for (const f of files) {
      const r = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, f, { process_rule: { mode: 'automatic' } });
      expect(r.status, f.name).toBe(200);
      expect(r.body.document.name).toBe(f.name);
      accepted.push({ f, batch: r.body.batch as string });
    }
    for (const { f, batch } of accepted) expect((await kb.settle(ds, batch)).indexing_status, f.name).toBe('completed');
    for (const f of files) {
      const hits = await kb.retrieve(ds, f.word);
      expect(hits.length, f.word).toBeGreaterThan(0);
      expect(hits[0]!.toLowerCase()).toContain(f.word);
    }
    expect((await kb.retrieve(ds, 'zanzibar'))[0]).toContain('Café notes from zanzibar: naïve façade');
    expect(await kb.retrieve(ds, 'scriptword')).toEqual([]);
    expect((await kb.retrieve(ds, 'okapi'))[0]).toBe('animal: okapi;habitat: forest');

    const broken = await kb.form('POST', `/datasets/${ds}/document/create_by_file`, { name: 'broken.pdf', bytes: Buffer.from('%PDF-1.4 this is not really a pdf'), mime: 'application/pdf' });
    expect(broken.status).toBe(200);
    const st = await kb.settle(ds, broken.body.batch);
    expect(st.indexing_status).toBe('error');
    expect(st.error).toMatch(/PDF/);
    const doc = await kb.call('GET', `/datasets/${ds}/documents/${broken.body.document.id}`);
    expect(doc.body).toMatchObject({ indexing_status: 'error', display_status: 'error' });
    const badJson = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name: 'b.json', bytes: Buffer.from('{"a": '), mime: 'application/json' });
    expect((await kb.settle(ds, badJson.body.batch)).error).toMatch(/JSON/);
  });

  it('custom process rules split by separator and max_tokens, and clean URLs and e-mails', async () => {
    const ds = await kb.dataset('custom-rule');
    const text = 'alpha one. mail me at a@b.com or see https://x.y/z\n***\nbeta two\n***\n' + 'gamma '.repeat(400);
    const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, {
      name: 'Rules',
      text,
      process_rule: {
        mode: 'custom',
        rules: {
          pre_processing_rules: [{ id: 'remove_extra_spaces', enabled: true }, { id: 'remove_urls_emails', enabled: true }],
          segmentation: { separator: '***', max_tokens: 100, chunk_overlap: 10 },
        },
      },
    });
    expect(r.status).toBe(200);
    const st = await kb.settle(ds, r.body.batch);
    expect(st.total_segments).toBeGreaterThan(3);
    const alpha = await kb.retrieve(ds, 'alpha');
    // Dify's order: extra spaces are squeezed before URLs and e-mails are removed.
    expect(alpha[0]).toBe('alpha one. mail me at  or see');
  });

  it('lists documents with paging and a keyword filter; deletes', async () => {
    const ds = await kb.dataset('listing');
    const ids: string[] = [];
    for (const name of ['apple notes', 'banana Notes', 'cherry', 'date_pie']) {
      const r = await kb.call('POST', `/datasets/${ds}/document/create-by-text`, { name, text: `${name} text` });
      ids.push(r.body.document.id);
    }
    const page = await kb.call('GET', `/datasets/${ds}/documents?page=1&limit=2`);
    expect(page.body).toMatchObject({ total: 4, limit: 2, page: 1, has_more: true });
    expect(page.body.data).toHaveLength(2);
    const kw = await kb.call('GET', `/datasets/${ds}/documents?keyword=notes`);
    // case-insensitive; % and _ match themselves
    expect(kw.body.data.map((d: { name: string }) => d.name).sort()).toEqual(['apple notes', 'banana Notes']);
    expect((await kb.call('GET', `/datasets/${ds}/documents?keyword=e_p`)).body.data.map((d: { name: string }) => d.name)).toEqual(['date_pie']);
    expect((await kb.call('GET', `/datasets/${ds}/documents?keyword=e_n`)).body.data).toEqual([]);
    expect((await kb.call('GET', `/datasets/${ds}/documents?keyword=${encodeURIComponent('%')}`)).body.data).toEqual([]);
    expect((await kb.call('GET', `/datasets/${ds}/documents?keyword=${encodeURIComponent('_')}`)).body.data.map((d: { name: string }) => d.name)).toEqual(['date_pie']);
    expect((await kb.call('DELETE', `/datasets/${ds}/documents/${ids[2]}`)).status).toBe(204);
    expect((await kb.call('GET', `/datasets/${ds}/documents/${ids[2]}`)).body).toEqual({ code: 'not_found', message: 'Document not found.', status: 404 });
    expect(await kb.retrieve(ds, 'cherry')).toEqual([]);
  });
});

describe('replacing a document file (PATCH)', () => {
  async function created(ds: string, name: string, content: string, explicitName?: string) {
    const r = await kb.form('POST', `/datasets/${ds}/document/create-by-file`, { name, bytes: Buffer.from(content), mime: 'text/plain' }, explicitName ? { name: explicitName } : undefined);
    expect(r.status).toBe(200);
    await kb.settle(ds, r.body.batch);
    return r.body.document.id as string;
  }

  it('keeps the id, indexes the new file to completed, and retrieval returns the new content only', async () => {
    const ds = await kb.dataset('patch');
    const id = await created(ds, 'v1.txt', 'The old launch date is March.\nOld budget is small.');
    expect(await kb.retrieve(ds, 'launch')).toEqual(['The old launch date is March.']);
    const r = await kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: 'v2.md', bytes: Buffer.from('# Plan\n\nThe new launch date is June.'), mime: 'text/markdown' }, { doc_form: 'text_model', doc_language: 'English', process_rule: { mode: 'automatic' } });
    expect(r.status).toBe(200);
    expect(r.body.document.id).toBe(id);
    expect(r.body.document.data_source_detail_dict.upload_file.name).toBe('v2.md');
    expect(r.body.document.name).toBe('v2.md');
    const st = await kb.settle(ds, r.body.batch);
    expect(st).toMatchObject({ id, indexing_status: 'completed', total_segments: 2, completed_segments: 2 });
    const hits = await kb.retrieve(ds, 'launch date budget');
    expect(hits).toEqual(['The new launch date is June.']);
    const list = await kb.call('GET', `/datasets/${ds}/documents`);
    expect(list.body.total).toBe(1);
    // The update's batch keeps working, and so does the create's.
    expect((await kb.call('GET', `/datasets/${ds}/documents/${r.body.batch}/indexing-status`)).status).toBe(200);
  });

  it('keeps an explicit name; the deprecated POST aliases work', async () => {
    const ds = await kb.dataset('patch-name');
    const id = await created(ds, 'file.txt', 'first text', 'Employee Handbook');
    const a = await kb.form('POST', `/datasets/${ds}/documents/${id}/update-by-file`, { name: 'handbook-2026.txt', bytes: Buffer.from('second text'), mime: 'text/plain' }, {});
    expect(a.status).toBe(200);
    expect(a.body.document.name).toBe('Employee Handbook');
    await kb.settle(ds, a.body.batch);
    const b = await kb.form('POST', `/datasets/${ds}/documents/${id}/update_by_file`, { name: 'x.txt', bytes: Buffer.from('third text'), mime: 'text/plain' }, { name: 'Renamed' });
    expect(b.body.document.name).toBe('Renamed');
    await kb.settle(ds, b.body.batch);
    expect((await kb.call('GET', `/datasets/${ds}/documents/${id}`)).body.name).toBe('Renamed');
    expect(await kb.retrieve(ds, 'text')).toEqual(['third text']);
  });

  it('two racing updates: exactly the accepted ones count, and the last accepted wins everywhere', async () => {
    const ds = await kb.dataset('race');
    const id = await created(ds, 'r.txt', 'original ranking text');
    const send = (word: string) => kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: `${word}.txt`, bytes: Buffer.from(`${word} ranking text`), mime: 'text/plain' }, {});
    const results = await Promise.all([send('alpha'), send('bravo')]);
    const accepted = results.filter((r) => r.status === 200);
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    for (const r of results.filter((x) => x.status !== 200)) expect(r.body).toEqual({ code: 'invalid_param', message: 'Document is not available', status: 400 });
    for (const r of accepted) await kb.settle(ds, r.body.batch);
    const doc = await kb.call('GET', `/datasets/${ds}/documents/${id}`);
    const winner = (doc.body.data_source_detail_dict.upload_file.name as string).replace('.txt', '');
    expect(accepted.map((r) => r.body.document.data_source_detail_dict.upload_file.name)).toContain(`${winner}.txt`);
    expect(doc.body.indexing_status).toBe('completed');
    expect(await kb.retrieve(ds, 'ranking')).toEqual([`${winner} ranking text`]);
  });

  it('errors: 404 document, 413 too large, 415 unsupported type, 400 bad data JSON and bad process_rule naming the field', async () => {
    const ds = await kb.dataset('patch-errors');
    const id = await created(ds, 'e.txt', 'error cases');
    const missing = await kb.form('PATCH', `/datasets/${ds}/documents/00000000-0000-0000-0000-000000000000`, { name: 'a.txt', bytes: Buffer.from('x') }, {});
    expect(missing.body).toEqual({ code: 'not_found', message: 'Document not found.', status: 404 });
    const noDs = await kb.form('PATCH', `/datasets/00000000-0000-0000-0000-000000000000/documents/${id}`, { name: 'a.txt', bytes: Buffer.from('x') }, {});
    expect(noDs.body).toEqual({ code: 'not_found', message: 'Dataset not found.', status: 404 });
    const big = await kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: 'big.txt', bytes: Buffer.alloc(1024 * 1024 + 10, 'a') }, {});
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('file_too_large');
    expect(big.body.message).toContain('1 MB');
    const png = await kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: 'image.png', bytes: Buffer.from('png'), mime: 'image/png' }, {});
    expect(png.status).toBe(415);
    expect(png.body.code).toBe('unsupported_file_type');
    const badData = await kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: 'a.txt', bytes: Buffer.from('x') }, '{not json');
    expect(badData.status).toBe(400);
    expect(badData.body.code).toBe('invalid_param');
    expect(badData.body.message).toMatch(/^data must be a JSON string/);
    const badRule = await kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: 'a.txt', bytes: Buffer.from('x') }, { process_rule: { mode: 'custom', rules: { segmentation: { max_tokens: 5 } } } });
    expect(badRule.body).toEqual({ code: 'invalid_param', message: 'process_rule.rules.segmentation.max_tokens must be between 50 and 4000.', status: 400 });
    const badForm = await kb.form('PATCH', `/datasets/${ds}/documents/${id}`, { name: 'a.txt', bytes: Buffer.from('x') }, { doc_form: 'nope' });
    expect(badForm.body.message).toBe('Invalid doc_form.');
    const unknownBatch = await kb.call('GET', `/datasets/${ds}/documents/12345/indexing-status`);
    expect(unknownBatch.body).toEqual({ code: 'not_found', message: 'Documents not found.', status: 404 });
    const longQuery = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'q'.repeat(251) });
    expect(longQuery.body).toEqual({ code: 'invalid_param', message: 'query must be at most 250 characters.', status: 400 });
    expect((await kb.call('POST', `/datasets/${ds}/retrieve`, {})).body.message).toBe('query is required.');
    const topK = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'x', retrieval_model: { search_method: 'keyword_search', top_k: 1000 } });
    expect(topK.body.message).toBe('retrieval_model.top_k must be an integer between 1 and 100.');
    const method = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'x', retrieval_model: { search_method: 'magic' } });
    expect(method.body.message).toMatch(/^retrieval_model.search_method must be one of/);
    // Nothing above changed the document.
    expect(await kb.retrieve(ds, 'error cases')).toEqual(['error cases']);
  });

  it('create without a technique on a dataset that has none → indexing_technique is required.', async () => {
    const c = await kb.call('POST', '/datasets', { name: 'no-technique' });
    const r = await kb.call('POST', `/datasets/${c.body.id}/document/create-by-text`, { name: 'n', text: 't' });
    expect(r.body).toEqual({ code: 'invalid_param', message: 'indexing_technique is required.', status: 400 });
    const ok = await kb.call('POST', `/datasets/${c.body.id}/document/create-by-text`, { name: 'n', text: 't', indexing_technique: 'economy' });
    expect(ok.status).toBe(200);
    expect((await kb.call('GET', `/datasets/${c.body.id}`)).body.indexing_technique).toBe('economy');
  });
});
