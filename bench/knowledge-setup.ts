import type { BenchServer } from './lib.js';

/** Deterministic lines of words from a 3,000-word vocabulary (Zipf-like), one line per segment. */
export function segmentLines(n: number, seed = 11): string[] {
  let x = seed;
  // 32-bit integer arithmetic: in doubles, x * 1103515245 loses its low bits past 2^53 and the
  // sequence falls into a short cycle (10,000 lines were 538 distinct ones).
  const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff);
  const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'se', 'di', 'pa', 'ge', 'zu', 'ho', 'bi', 'fe', 'wa'];
  const vocab = Array.from({ length: 3000 }, (_, i) => {
    let w = '';
    for (let m = i + 1; m > 0; m = Math.floor(m / 16)) w += syll[m % 16];
    return w;
  });
  const word = () => vocab[Math.floor(Math.pow(rnd(), 2.5) * vocab.length)]!;
  return Array.from({ length: n }, () => Array.from({ length: 15 + Math.floor(rnd() * 30) }, word).join(' ') + '.');
}

/** Queries of three words taken from the lines, one per timed call. */
export function segmentQueries(segs: readonly string[], n: number): string[] {
  return Array.from({ length: n }, (_, i) => segs[(i * 37) % segs.length]!.split(' ').slice(3, 6).join(' '));
}

/** A workspace dataset key for the bench server's Knowledge API. */
export async function datasetKey(s: BenchServer): Promise<string> {
  return (await s.runtime.keys.create('dataset', await s.runtime.apps.workspaceId(), null)).apiKey;
}

/**
 * An economy (keyword-indexed) dataset made through the Knowledge API with one document whose
 * segments are `segs` (a line each), returned once its indexing is `completed`.
 */
export async function economyDataset(s: BenchServer, key: string, name: string, segs: readonly string[], pollMs = 10): Promise<string> {
  const api = `${s.url}/v1`;
  const j = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const ds = ((await (await fetch(`${api}/datasets`, { method: 'POST', headers: j, body: JSON.stringify({ name, indexing_technique: 'economy' }) })).json()) as { id: string }).id;
  const created = (await (
    await fetch(`${api}/datasets/${ds}/document/create-by-text`, {
      method: 'POST',
      headers: j,
      body: JSON.stringify({ name: 'bench', text: segs.join('\n'), process_rule: { mode: 'custom', rules: { segmentation: { separator: '\n', max_tokens: 500 } } } }),
    })
  ).json()) as { batch: string };
  for (;;) {
    const st = (await (await fetch(`${api}/datasets/${ds}/documents/${created.batch}/indexing-status`, { headers: j })).json()) as { data: { indexing_status: string }[] };
    if (st.data[0]!.indexing_status === 'completed') return ds;
    if (st.data[0]!.indexing_status === 'error') throw new Error('indexing failed');
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
