import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { kbClient, retrieveContractErrors } from '../helpers/kb-client.js';
import { startEmbeddings, type EmbeddingsServer } from '../helpers/knowledge.js';

let s: TestServer;
let emb: EmbeddingsServer;
let kb: ReturnType<typeof kbClient>;

beforeAll(async () => {
  emb = await startEmbeddings();
  s = await startServer({ env: { QUEUE_POLL_MS: '50', EMBEDDINGS_BASE_URL: emb.baseUrl, EMBEDDINGS_MODEL: 'test-embed' } });
  kb = kbClient(s, await s.datasetKey());
});
afterAll(async () => {
  await s?.close();
  await emb?.close();
});

/** A dataset with documents A, B, C and fields author (string) and year (number); C has no values. */
const fixture = async (name: string, technique: 'economy' | 'high_quality') => (await kb.metadataLibrary(name, technique)).ds;

type Cond = { name: string; comparison_operator: string; value?: unknown };

async function found(ds: string, conditions: Cond[] | null, extra: Record<string, unknown> = {}, logical = 'and'): Promise<string[]> {
  const model = { top_k: 10, ...extra, metadata_filtering_conditions: conditions === null ? null : { logical_operator: logical, conditions } };
  const r = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'remote work policy', retrieval_model: model });
  if (r.status !== 200) throw new Error(`retrieve: ${r.status} ${JSON.stringify(r.body)}`);
  expect(retrieveContractErrors(r.body)).toEqual([]);
  return (r.body.records as { segment: { document: { name: string } } }[]).map((x) => x.segment.document.name).sort();
}

describe('retrieve with metadata_filtering_conditions', () => {
  it('applies Dify’s string, number and list operators, and and/or (keyword search)', async () => {
    const ds = await fixture('filter-economy', 'economy');
    expect(await found(ds, null)).toEqual(['A', 'B', 'C']);
    expect(await found(ds, [])).toEqual(['A', 'B', 'C']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'is', value: 'Bob' }])).toEqual(['B']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'is not', value: 'Bob' }])).toEqual(['A']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'contains', value: 'Lee' }])).toEqual(['A']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'not contains', value: 'Lee' }])).toEqual(['B']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'start with', value: 'Ann' }])).toEqual(['A']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'end with', value: 'ob' }])).toEqual(['B']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'empty' }])).toEqual(['C']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'not empty' }])).toEqual(['A', 'B']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'in', value: ['Bob', 'Zed'] }])).toEqual(['B']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'in', value: 'Ann Lee, Bob' }])).toEqual(['A', 'B']);
    expect(await found(ds, [{ name: 'author', comparison_operator: 'not in', value: ['Bob'] }])).toEqual(['A']);
    expect(await found(ds, [{ name: 'year', comparison_operator: '>', value: 2021 }])).toEqual(['B']);
    expect(await found(ds, [{ name: 'year', comparison_operator: '<', value: 2021 }])).toEqual(['A']);
    expect(await found(ds, [{ name: 'year', comparison_operator: '≥', value: 2020 }])).toEqual(['A', 'B']);
    expect(await found(ds, [{ name: 'year', comparison_operator: '≤', value: 2020 }])).toEqual(['A']);
    expect(await found(ds, [{ name: 'year', comparison_operator: '=', value: 2024 }])).toEqual(['B']);
    expect(await found(ds, [{ name: 'year', comparison_operator: '≠', value: 2024 }])).toEqual(['A']);

    const both = [
      { name: 'author', comparison_operator: 'is', value: 'Bob' },
      { name: 'year', comparison_operator: '<', value: 2021 },
    ];
    expect(await found(ds, both, {}, 'and')).toEqual([]);
    expect(await found(ds, both, {}, 'or')).toEqual(['A', 'B']);
    // A condition without a value is dropped, as Dify drops it.
    expect(await found(ds, [{ name: 'author', comparison_operator: 'is', value: null }])).toEqual(['A', 'B', 'C']);
    // An unknown field matches only `empty`.
    expect(await found(ds, [{ name: 'nope', comparison_operator: 'is', value: 'x' }])).toEqual([]);
  });

  it('filters on built-in fields when they are enabled', async () => {
    const ds = await fixture('filter-builtin', 'economy');
    const cond = [{ name: 'document_name', comparison_operator: 'is', value: 'C' }];
    expect(await found(ds, cond)).toEqual([]);
    await kb.call('POST', `/datasets/${ds}/metadata/built-in/enable`);
    expect(await found(ds, cond)).toEqual(['C']);
    const future = Math.floor(Date.now() / 1000) + 3600;
    expect(await found(ds, [{ name: 'upload_date', comparison_operator: 'before', value: future }])).toEqual(['A', 'B', 'C']);
    expect(await found(ds, [{ name: 'upload_date', comparison_operator: 'after', value: future }])).toEqual([]);
    expect(await found(ds, [{ name: 'source', comparison_operator: 'is', value: 'file_upload' }])).toEqual(['A', 'B', 'C']);
  });

  it('narrows semantic and hybrid search to the matching documents, before top_k', async () => {
    const ds = await fixture('filter-semantic', 'high_quality');
    const onlyB = [{ name: 'author', comparison_operator: 'is', value: 'Bob' }];
    for (const search_method of ['semantic_search', 'hybrid_search', 'keyword_search']) {
      // top_k 1: the single answer must be B's even if another document ranks higher unfiltered.
      expect(await found(ds, onlyB, { search_method, top_k: 1 })).toEqual(['B']);
      expect(await found(ds, [{ name: 'year', comparison_operator: '>', value: 3000 }], { search_method })).toEqual([]);
    }
    // Records report the document's metadata, as Dify's `doc_metadata` column.
    const r = await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'remote', retrieval_model: { search_method: 'semantic_search', top_k: 10, metadata_filtering_conditions: { conditions: onlyB } } });
    expect(r.body.records[0].segment.document.doc_metadata).toEqual({ author: 'Bob', year: 2024 });
  });

  it('refuses malformed conditions, naming the field', async () => {
    const ds = await kb.dataset('filter-errors');
    const bad = async (mfc: unknown) => (await kb.call('POST', `/datasets/${ds}/retrieve`, { query: 'remote', retrieval_model: { metadata_filtering_conditions: mfc } })).body;
    const at = 'retrieval_model.metadata_filtering_conditions';
    expect(await bad({ logical_operator: 'xor', conditions: [] })).toEqual({ code: 'invalid_param', message: `${at}.logical_operator must be one of and, or.`, status: 400 });
    expect((await bad({ conditions: [{ name: 'a', comparison_operator: 'like', value: 'x' }] })).message).toMatch(new RegExp(`^${at.replace(/\./g, '\\.')}\\.conditions\\[0\\]\\.comparison_operator must be one of contains, `));
    expect((await bad({ conditions: [{ comparison_operator: 'is', value: 'x' }] })).message).toBe(`${at}.conditions[0].name is required.`);
    expect((await bad({ conditions: [{ name: 'a', comparison_operator: 'is', value: { x: 1 } }] })).message).toBe(`${at}.conditions[0].value must be a string, a number or a list of strings.`);
    expect((await bad({ conditions: [{ name: 'a', comparison_operator: '>', value: 'soon' }] })).message).toBe(`${at}.conditions[0].value must be a number for >.`);
    expect((await bad({ conditions: 'x' })).message).toBe(`${at}.conditions must be a list.`);
    expect((await bad('x')).message).toBe(`${at} must be an object.`);
  });
});
