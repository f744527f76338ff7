import type { TestServer } from './server.js';
import { responseErrors } from './openapi.js';

/**
 * Errors of a retrieve response against Dify's OpenAPI, less one known defect of the document:
 * it types `segment.answer` as a plain string, while Dify sends `null` for every segment that is
 * not a Q&A pair (the column is NULL).
 */
export function retrieveContractErrors(body: unknown): string[] {
  return responseErrors('/datasets/{dataset_id}/retrieve', 'post', 200, body).filter((e) => !/^\/records\/\d+\/segment\/answer must be string/.test(e));
}

/** A small client for the knowledge API of a test server. */
export function kbClient(s: TestServer, key: string) {
  const auth = { authorization: `Bearer ${key}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${s.api}${path}`, { method, headers: body === undefined ? auth : json, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: (text ? JSON.parse(text) : null) as Record<string, any> };
  };
  const form = async (method: string, path: string, file: { name: string; bytes: Buffer; mime?: string } | undefined, data?: unknown) => {
    const fd = new FormData();
    if (data !== undefined) fd.append('data', typeof data === 'string' ? data : JSON.stringify(data));
    if (file) fd.append('file', new Blob([new Uint8Array(file.bytes)], { type: file.mime ?? 'application/octet-stream' }), file.name);
    const r = await fetch(`${s.api}${path}`, { method, headers: auth, body: fd });
    const text = await r.text();
    return { status: r.status, body: (text ? JSON.parse(text) : null) as Record<string, any> };
  };
  return {
    call,
    form,
    async dataset(name: string, technique: 'economy' | 'high_quality' = 'economy'): Promise<string> {
      const r = await call('POST', '/datasets', { name, indexing_technique: technique });
      if (r.status !== 200) throw new Error(`dataset create: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id as string;
    },
    /**
     * A dataset of three documents named A, B and C ("Remote work policy for the Alpha / Beta /
     * Gamma team.") with metadata fields `author` (string) and `year` (number): A is Ann Lee's of
     * 2020, B Bob's of 2024, C has no values.
     */
    async metadataLibrary(name: string, technique: 'economy' | 'high_quality' = 'economy'): Promise<{ ds: string; ids: Record<'A' | 'B' | 'C', string> }> {
      const ds = await this.dataset(name, technique);
      const ids: Record<string, string> = {};
      for (const [k, team] of [['A', 'Alpha'], ['B', 'Beta'], ['C', 'Gamma']] as const) {
        const r = await call('POST', `/datasets/${ds}/document/create-by-text`, { name: k, text: `Remote work policy for the ${team} team.`, indexing_technique: technique, process_rule: { mode: 'automatic' } });
        if (r.status !== 200) throw new Error(`document create: ${r.status} ${JSON.stringify(r.body)}`);
        const done = await this.settle(ds, r.body.batch);
        if (done.indexing_status !== 'completed') throw new Error(`document ${k} did not index: ${JSON.stringify(done)}`);
        ids[k] = r.body.document.id;
      }
      const author = (await call('POST', `/datasets/${ds}/metadata`, { type: 'string', name: 'author' })).body.id;
      const year = (await call('POST', `/datasets/${ds}/metadata`, { type: 'number', name: 'year' })).body.id;
      const set = await call('POST', `/datasets/${ds}/documents/metadata`, {
        operation_data: [
          { document_id: ids.A, metadata_list: [{ id: author, name: 'author', value: 'Ann Lee' }, { id: year, name: 'year', value: 2020 }] },
          { document_id: ids.B, metadata_list: [{ id: author, name: 'author', value: 'Bob' }, { id: year, name: 'year', value: 2024 }] },
        ],
      });
      if (set.status !== 200) throw new Error(`metadata: ${set.status} ${JSON.stringify(set.body)}`);
      return { ds, ids: ids as Record<'A' | 'B' | 'C', string> };
    },
    /** Polls indexing-status until every document of the batch is completed or error. */
    async settle(datasetId: string, batch: string, timeoutMs = 20_000): Promise<Record<string, any>> {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const r = await call('GET', `/datasets/${datasetId}/documents/${batch}/indexing-status`);
        const d = r.body.data?.[0];
        if (d && (d.indexing_status === 'completed' || d.indexing_status === 'error')) return d;
        if (Date.now() > end) throw new Error(`batch ${batch} did not settle: ${JSON.stringify(r.body)}`);
        await new Promise((res) => setTimeout(res, 40));
      }
    },
    async waitStatus(datasetId: string, batch: string, status: string, timeoutMs = 20_000): Promise<void> {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const r = await call('GET', `/datasets/${datasetId}/documents/${batch}/indexing-status`);
        if (r.body.data?.[0]?.indexing_status === status) return;
        if (Date.now() > end) throw new Error(`batch ${batch} never reached ${status}: ${JSON.stringify(r.body)}`);
        await new Promise((res) => setTimeout(res, 30));
      }
    },
    async retrieve(datasetId: string, query: string, retrievalModel?: Record<string, unknown>): Promise<string[]> {
      const r = await call('POST', `/datasets/${datasetId}/retrieve`, { query, ...(retrievalModel ? { retrieval_model: retrievalModel } : {}) });
      if (r.status !== 200) throw new Error(`retrieve: ${r.status} ${JSON.stringify(r.body)}`);
      return (r.body.records as { segment: { content: string } }[]).map((x) => x.segment.content);
    },
  };
}
