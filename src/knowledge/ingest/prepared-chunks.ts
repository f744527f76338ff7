import { countTokens } from '../../text/tokenizer.js';
import { isObject } from '../../infra/objects.js';

/** The process rule of a document whose chunks were made before indexing (by a knowledge pipeline's chunker). */
export const PREPARED_RULE = { mode: 'pipeline' } as const;

/** Chunks made before indexing: flat segments (with an answer for Q&A pairs), or parents with their children. */
export type PreparedChunks =
  | { readonly kind: 'flat'; readonly chunks: readonly { readonly content: string; readonly answer: string | null }[] }
  | { readonly kind: 'hierarchical'; readonly groups: readonly { readonly content: string; readonly children: readonly string[] }[] };

/** Dify's doc form of each chunk structure. */
export const DOC_FORM_OF: Readonly<Record<string, string>> = { text_model: 'text_model', hierarchical_model: 'hierarchical_model', qa_model: 'qa_model' };

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : isObject(v) && typeof v.content === 'string' ? v.content : undefined);

/**
 * A chunker's `result` in Dify's shapes — `{general_chunks: [text]}`, `{parent_child_chunks:
 * [{parent_content, child_contents}]}`, `{qa_chunks: [{question, answer}]}` — as the chunks of
 * `structure` (the knowledge-index node's `chunk_structure`). Throws a message naming what does not
 * fit; empty chunks are dropped.
 */
export function preparedChunksOf(structure: string, result: unknown, maxChars: number): PreparedChunks {
  const r = Array.isArray(result) && structure === 'text_model' ? { general_chunks: result } : result;
  if (!isObject(r)) throw new Error(`the chunks must be a chunker's result (an object), got ${Array.isArray(result) ? 'a list' : typeof result}`);
  const long = (s: string, what: string) => {
    if (s.length > maxChars) throw new Error(`${what} is ${s.length} characters, more than KNOWLEDGE_SEGMENT_MAX_CHARS (${maxChars})`);
    return s;
  };
  if (structure === 'text_model') {
    if (!Array.isArray(r.general_chunks)) throw new Error('chunk_structure text_model needs general_chunks (a list of texts) from a general chunker');
    const chunks = r.general_chunks.map((c, i) => {
      const t = text(c);
      if (t === undefined) throw new Error(`general_chunks[${i}] must be a text`);
      return { content: long(t.trim(), `general_chunks[${i}]`), answer: null };
    });
    return { kind: 'flat', chunks: chunks.filter((c) => c.content !== '') };
  }
  if (structure === 'qa_model') {
    if (!Array.isArray(r.qa_chunks)) throw new Error('chunk_structure qa_model needs qa_chunks (a list of {question, answer}) from a Q&A chunker');
    const chunks = r.qa_chunks.map((c, i) => {
      if (!isObject(c) || typeof c.question !== 'string' || typeof c.answer !== 'string') throw new Error(`qa_chunks[${i}] must have a question and an answer (texts)`);
      return { content: long(c.question.trim(), `qa_chunks[${i}].question`), answer: long(c.answer.trim(), `qa_chunks[${i}].answer`) };
    });
    return { kind: 'flat', chunks: chunks.filter((c) => c.content !== '' && c.answer !== '') };
  }
  if (structure === 'hierarchical_model') {
    if (!Array.isArray(r.parent_child_chunks)) throw new Error('chunk_structure hierarchical_model needs parent_child_chunks (a list of {parent_content, child_contents}) from a parent-child chunker');
    const groups = r.parent_child_chunks.map((g, i) => {
      if (!isObject(g) || typeof g.parent_content !== 'string' || !Array.isArray(g.child_contents)) throw new Error(`parent_child_chunks[${i}] must have parent_content (a text) and child_contents (a list of texts)`);
      const children = g.child_contents.map((c, j) => {
        if (typeof c !== 'string') throw new Error(`parent_child_chunks[${i}].child_contents[${j}] must be a text`);
        return long(c.trim(), `parent_child_chunks[${i}].child_contents[${j}]`);
      });
      return { content: long(g.parent_content.trim(), `parent_child_chunks[${i}].parent_content`), children: children.filter((c) => c !== '') };
    });
    return { kind: 'hierarchical', groups: groups.filter((g) => g.content !== '' && g.children.length > 0) };
  }
  throw new Error(`chunk_structure must be text_model, hierarchical_model or qa_model, got ${JSON.stringify(structure)}`);
}

/** How prepared chunks are stored as the document's file (JSON, read back by the indexer). */
export function encodePreparedChunks(chunks: PreparedChunks): Buffer {
  return Buffer.from(JSON.stringify(chunks), 'utf8');
}

/** The stored chunks with their token counts, in the indexer's shapes. */
export function decodePreparedChunks(bytes: Buffer):
  | { readonly kind: 'flat'; readonly units: { content: string; answer: string | null; tokens?: number }[] }
  | { readonly kind: 'hierarchical'; readonly groups: { content: string; tokens: number; children: { content: string; tokens: number }[] }[] } {
  const raw = JSON.parse(bytes.toString('utf8')) as PreparedChunks;
  if (raw.kind === 'hierarchical') {
    return { kind: 'hierarchical', groups: raw.groups.map((g) => ({ content: g.content, tokens: countTokens(g.content), children: g.children.map((c) => ({ content: c, tokens: countTokens(c) })) })) };
  }
  return { kind: 'flat', units: raw.chunks.map((c) => (c.answer === null ? { content: c.content, answer: null, tokens: countTokens(c.content) } : { content: c.content, answer: c.answer })) };
}
