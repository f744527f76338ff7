/**
 * One citation of an answer: Dify's `RetrievalSourceMetadata` (`core/rag/entities/citation_metadata.py`),
 * the items of `metadata.retriever_resources` in `message_end` and blocking answers, in its field order.
 */
export interface RetrieverResource {
  position: number;
  readonly dataset_id: string | null;
  readonly dataset_name: string | null;
  readonly document_id: string | null;
  readonly document_name: string | null;
  readonly data_source_type: string | null;
  readonly segment_id: string | null;
  readonly retriever_from: string | null;
  readonly score: number | null;
  readonly hit_count: number | null;
  readonly word_count: number | null;
  readonly segment_position: number | null;
  readonly index_node_hash: string | null;
  readonly content: string | null;
  readonly page: number | null;
  readonly doc_metadata: Readonly<Record<string, unknown>> | null;
  readonly title: string | null;
  readonly files: readonly unknown[] | null;
  readonly summary: string | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const obj = (v: unknown): Record<string, unknown> | null => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null);

/**
 * A knowledge-retrieval result object (`{metadata: {_source: "knowledge", …}, title, content}`) as
 * a citation, as Dify's LLM node converts its context items (`_convert_to_original_retriever_resource`);
 * undefined for anything else.
 */
export function resourceOfResult(item: Readonly<Record<string, unknown>>): RetrieverResource | undefined {
  const m = obj(item.metadata);
  if (!m || m._source !== 'knowledge') return undefined;
  return {
    position: num(m.position) ?? 0,
    dataset_id: str(m.dataset_id),
    dataset_name: str(m.dataset_name),
    document_id: str(m.document_id),
    document_name: str(m.document_name),
    data_source_type: str(m.data_source_type),
    segment_id: str(m.segment_id),
    retriever_from: str(m.retriever_from),
    score: num(m.score),
    hit_count: num(m.segment_hit_count),
    word_count: num(m.segment_word_count),
    segment_position: num(m.segment_position),
    index_node_hash: str(m.segment_index_node_hash),
    content: str(item.content),
    page: num(m.page),
    doc_metadata: obj(m.doc_metadata),
    title: null,
    files: Array.isArray(item.files) ? item.files : null,
    summary: str(item.summary),
  };
}

/**
 * The answer's citations after another retrieval reached a model: Dify's message cycle manager
 * (`handle_retriever_resources`) keeps what it has, adds each new resource whose (dataset,
 * document) pair it does not have yet, and numbers them all from 1.
 */
export function mergeResources(have: readonly RetrieverResource[], more: readonly RetrieverResource[]): RetrieverResource[] {
  const merged = [...have];
  const pair = (r: RetrieverResource) => (r.dataset_id && r.document_id ? `${r.dataset_id}\u0000${r.document_id}` : undefined);
  const seen = new Set(merged.map(pair).filter((k) => k !== undefined));
  for (const r of more) {
    const k = pair(r);
    if (k !== undefined && seen.has(k)) continue;
    merged.push(r);
  }
  return merged.map((r, i) => ({ ...r, position: i + 1 }));
}

/**
 * An LLM node's context, as Dify's `_fetch_context` reads the variable its `context.variable_selector`
 * names: a string is the context; a list joins its strings and its items' `content` (one a line),
 * its knowledge results becoming the citations; anything else gives no context. An item that is
 * neither a string nor has `content` throws.
 */
export function contextOf(value: unknown): { readonly context: string; readonly resources: RetrieverResource[] } | undefined {
  if (typeof value === 'string') return { context: value, resources: [] };
  if (!Array.isArray(value)) return undefined;
  let context = '';
  const resources: RetrieverResource[] = [];
  for (const item of value) {
    if (typeof item === 'string') {
      context += `${item}\n`;
      continue;
    }
    const o = obj(item);
    if (!o || !('content' in o)) throw new InvalidContextStructure(`Invalid context structure: ${JSON.stringify(item)?.slice(0, 200) ?? String(item)}`);
    context += `${typeof o.content === 'string' ? o.content : JSON.stringify(o.content)}\n`;
    const r = resourceOfResult(o);
    if (r) resources.push(r);
  }
  return { context: context.trim(), resources };
}

/** Dify's `InvalidContextStructureError`. */
export class InvalidContextStructure extends Error {
  override name = 'InvalidContextStructureError';
}
