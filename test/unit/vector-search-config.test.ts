import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const load = (env: Record<string, string>) => loadConfig({ DOVETAIL_CONFIG: undefined as unknown as string, ...env });

describe('pgvector HNSW settings', () => {
  it("default to pgvector's own and take what is set", () => {
    expect(load({}).knowledge.vectorSearch).toEqual({ hnswM: 16, hnswEfConstruction: 64, efSearch: 40 });
    expect(load({ PGVECTOR_HNSW_M: '32', PGVECTOR_HNSW_EF_CONSTRUCTION: '128', PGVECTOR_EF_SEARCH: '100' }).knowledge.vectorSearch).toEqual({ hnswM: 32, hnswEfConstruction: 128, efSearch: 100 });
  });

  it('refuse values pgvector would refuse, naming the setting', () => {
    expect(() => load({ PGVECTOR_HNSW_M: '101' })).toThrow(new ConfigError('PGVECTOR_HNSW_M must be at most 100, got 101'));
    expect(() => load({ PGVECTOR_HNSW_M: '1' })).toThrow(/PGVECTOR_HNSW_M must be at least 2/);
    expect(() => load({ PGVECTOR_HNSW_M: '40' })).toThrow(new ConfigError('PGVECTOR_HNSW_EF_CONSTRUCTION must be at least twice PGVECTOR_HNSW_M (80), got 64'));
    expect(() => load({ PGVECTOR_HNSW_EF_CONSTRUCTION: '1001' })).toThrow(/PGVECTOR_HNSW_EF_CONSTRUCTION must be at most 1000/);
    expect(() => load({ PGVECTOR_EF_SEARCH: '1001' })).toThrow(/PGVECTOR_EF_SEARCH must be at most 1000/);
    expect(() => load({ PGVECTOR_EF_SEARCH: 'many' })).toThrow(/PGVECTOR_EF_SEARCH must be an integer/);
  });
});
