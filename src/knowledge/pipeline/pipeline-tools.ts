import type { Tool, ToolRef, ToolResultMessage, ToolRuntime } from '../../engine/ports.js';
import { ServiceError } from '../../infra/errors.js';
import { isObject } from '../../infra/objects.js';
import { chunkDocument, cleanText } from '../ingest/chunk.js';
import { parseProcessRule, type ProcessRule } from '../ingest/process-rule.js';

/** What the built-in pipeline tools need from the server. */
export interface PipelineToolDeps {
  /** The text of a Dify File mapping, read with the knowledge parsers; rejects naming the file. */
  extractText(file: unknown, signal: AbortSignal): Promise<string>;
  /** `INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH`: the longest chunk a chunker may be asked for. */
  readonly maxSegmentationTokens: number;
  /** `KNOWLEDGE_FULL_DOC_MAX_TOKENS`: what a `full_doc` parent keeps. */
  readonly fullDocMaxTokens: number;
  /** `PIPELINE_CHUNK_INPUT_MAX_CHARS`: the longest text a chunker takes. */
  readonly inputMaxChars: number;
}

/** A tool failure as the tool node reports it (`type` is Dify's error type). */
function toolError(message: string, type = 'ToolParameterError'): Error {
  return Object.assign(new Error(message), { type });
}

const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : v === undefined || v === null ? fallback : String(v));
/** Dify's form values: a checkbox arrives as a boolean, or as the text a template rendered. */
const bool = (v: unknown): boolean => v === true || v === 'true' || v === 1 || v === '1';
function int(v: unknown, name: string, fallback: number | undefined): number | undefined {
  if (v === undefined || v === null || v === '') return fallback;
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isFinite(n) || !Number.isInteger(n)) throw toolError(`${name} must be a whole number, got ${JSON.stringify(v)}`);
  return n;
}

/** `\n` typed into a form means a line break (Dify's console escapes separators). */
const unescapeSeparator = (s: string): string => s.replace(/\\n/g, '\n').replace(/\\t/g, '\t');

/** The knowledge rule a chunker's parameters make (Dify's `process_rule`), its errors naming the tool's parameters. */
function ruleOf(raw: Record<string, unknown>, names: Readonly<Record<string, string>>, maxTokens: number): ProcessRule {
  try {
    return parseProcessRule(raw, maxTokens);
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    let m = err.message;
    for (const [from, to] of Object.entries(names)) m = m.split(from).join(to);
    throw toolError(`${m.replace(/\.$/, '')} (at most INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH = ${maxTokens} tokens)`);
  }
}

function inputText(p: Readonly<Record<string, unknown>>, name: string, max: number): string {
  const text = str(p[name]);
  if (text.length > max) throw toolError(`${name} is ${text.length} characters, more than PIPELINE_CHUNK_INPUT_MAX_CHARS (${max})`);
  return text;
}

const preRules = (spaces: boolean, urls: boolean) => [
  { id: 'remove_extra_spaces', enabled: spaces },
  { id: 'remove_urls_emails', enabled: urls },
];

/** Dify's first-party `general_chunker` plugin (older templates: `general_chunk`): `result.general_chunks`. */
function generalChunker(name: string, d: PipelineToolDeps): Tool {
  return {
    name,
    description: 'Splits text into general chunks (the chunks retrieved are the chunks recalled).',
    parameters: [
      { name: 'input_variable', type: 'string', form: 'llm', required: true },
      { name: 'delimiter', type: 'string', form: 'llm', required: true },
      { name: 'max_chunk_length', type: 'number', form: 'llm', required: true },
      { name: 'chunk_overlap_length', type: 'number', form: 'llm', required: false },
      { name: 'replace_consecutive_spaces_newlines_tabs', type: 'boolean', form: 'llm', required: false },
      { name: 'delete_all_urls_and_email_addresses', type: 'boolean', form: 'llm', required: false },
    ],
    async invoke(p) {
      const text = inputText(p, 'input_variable', d.inputMaxChars);
      const rule = ruleOf(
        {
          mode: 'custom',
          rules: {
            pre_processing_rules: preRules(bool(p.replace_consecutive_spaces_newlines_tabs), bool(p.delete_all_urls_and_email_addresses)),
            segmentation: { separator: unescapeSeparator(str(p.delimiter, '\n\n')) || '\n\n', max_tokens: int(p.max_chunk_length, 'max_chunk_length', undefined), chunk_overlap: int(p.chunk_overlap_length, 'chunk_overlap_length', 0) },
          },
        },
        { 'process_rule.rules.segmentation.max_tokens': 'max_chunk_length', 'process_rule.rules.segmentation.chunk_overlap': 'chunk_overlap_length', 'process_rule.rules.segmentation': 'the chunker' },
        d.maxSegmentationTokens,
      );
      const split = chunkDocument(cleanText(text, rule), rule, d.fullDocMaxTokens);
      const chunks = split.kind === 'flat' ? split.chunks.map((c) => c.content) : [];
      return [{ type: 'variable', name: 'result', value: { general_chunks: chunks } }];
    },
  };
}

/** Dify's first-party `parentchild_chunker` plugin: `result.parent_child_chunks` and `parent_mode`. */
function parentChildChunker(name: string, d: PipelineToolDeps): Tool {
  return {
    name,
    description: 'Splits text into parent chunks (the context recalled) each split into child chunks (what retrieval matches).',
    parameters: [
      { name: 'input_text', type: 'string', form: 'llm', required: true },
      { name: 'parent_mode', type: 'string', form: 'llm', required: false },
      { name: 'separator', type: 'string', form: 'llm', required: false },
      { name: 'max_length', type: 'number', form: 'llm', required: false },
      { name: 'subchunk_separator', type: 'string', form: 'llm', required: false },
      { name: 'subchunk_max_length', type: 'number', form: 'llm', required: false },
      { name: 'remove_extra_spaces', type: 'boolean', form: 'llm', required: false },
      { name: 'remove_urls_emails', type: 'boolean', form: 'llm', required: false },
    ],
    async invoke(p) {
      const text = inputText(p, 'input_text', d.inputMaxChars);
      const mode = str(p.parent_mode, 'paragraph') || 'paragraph';
      if (mode !== 'paragraph' && mode !== 'full_doc' && mode !== 'full-doc') throw toolError(`parent_mode must be paragraph or full_doc, got ${JSON.stringify(mode)}`);
      const fullDoc = mode !== 'paragraph';
      const rule = ruleOf(
        {
          mode: 'hierarchical',
          rules: {
            pre_processing_rules: preRules(bool(p.remove_extra_spaces), bool(p.remove_urls_emails)),
            parent_mode: fullDoc ? 'full-doc' : 'paragraph',
            segmentation: { separator: unescapeSeparator(str(p.separator, '\n\n')) || '\n\n', max_tokens: int(p.max_length, 'max_length', Math.min(1024, d.maxSegmentationTokens)) },
            subchunk_segmentation: { separator: unescapeSeparator(str(p.subchunk_separator, '\n')) || '\n', max_tokens: int(p.subchunk_max_length, 'subchunk_max_length', Math.min(512, d.maxSegmentationTokens)) },
          },
        },
        { 'process_rule.rules.subchunk_segmentation.max_tokens': 'subchunk_max_length', 'process_rule.rules.segmentation.max_tokens': 'max_length' },
        d.maxSegmentationTokens,
      );
      const split = chunkDocument(cleanText(text, rule), rule, d.fullDocMaxTokens);
      const groups = split.kind === 'hierarchical' ? split.groups : [];
      return [{ type: 'variable', name: 'result', value: { parent_child_chunks: groups.map((g) => ({ parent_content: g.content, child_contents: g.children.map((c) => c.content) })), parent_mode: fullDoc ? 'full_doc' : 'paragraph' } }];
    },
  };
}

/** One CSV line's fields (quotes as RFC 4180). */
function csvFields(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    }
    else cur += c;
  }
  out.push(cur);
  return out;
}

/**
 * Dify's first-party `qa_chunker` plugin: question-answer pairs from a table of two columns (the
 * text of a CSV file, or lines `question,answer`); `result.qa_chunks`.
 */
function qaChunker(name: string, d: PipelineToolDeps): Tool {
  return {
    name,
    description: 'Reads question-answer pairs from a two-column table (question, answer).',
    parameters: [
      { name: 'input_text', type: 'string', form: 'llm', required: true },
      { name: 'question_column', type: 'number', form: 'llm', required: false },
      { name: 'answer_column', type: 'number', form: 'llm', required: false },
    ],
    async invoke(p) {
      const text = inputText(p, 'input_text', d.inputMaxChars);
      const q = int(p.question_column, 'question_column', 1)!;
      const a = int(p.answer_column, 'answer_column', 2)!;
      if (q < 1 || a < 1) throw toolError('question_column and answer_column count from 1');
      const pairs = text
        .split(/\r?\n/)
        .filter((l) => l.trim() !== '')
        .map(csvFields)
        .map((f) => ({ question: (f[q - 1] ?? '').trim(), answer: (f[a - 1] ?? '').trim() }))
        .filter((x) => x.question !== '' && x.answer !== '');
      return [{ type: 'variable', name: 'result', value: { qa_chunks: pairs } }];
    },
  };
}

/** Dify's first-party `dify_extractor` plugin: the text of a file (the knowledge parsers), as `text` and `documents`. */
function difyExtractor(d: PipelineToolDeps): Tool {
  return {
    name: 'dify_extractor',
    description: 'Extracts the text of a file (pdf, docx, html, markdown, csv, xlsx, …).',
    parameters: [{ name: 'file', type: 'file', form: 'llm', required: true }],
    async invoke(p, ctx) {
      if (!isObject(p.file)) throw toolError('file is required (a file variable)');
      let text: string;
      try {
        text = await d.extractText(p.file, ctx.signal);
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        throw toolError(`dify_extractor: ${(err as Error).message}`, 'ToolInvokeError');
      }
      const name = str(p.file.filename);
      return [
        { type: 'text', text },
        { type: 'variable', name: 'documents', value: [{ page_content: text, metadata: { source: name } }] },
        { type: 'variable', name: 'images', value: [] },
      ];
    },
  };
}

/** Provider name (the last part of `langgenius/NAME/NAME`) → its tools by name. */
function providers(d: PipelineToolDeps): Map<string, Map<string, Tool>> {
  const m = new Map<string, Map<string, Tool>>();
  const add = (provider: string, tools: Tool[]) => m.set(provider, new Map(tools.map((t) => [t.name, t])));
  add('dify_extractor', [difyExtractor(d)]);
  add('general_chunker', [generalChunker('general_chunker', d), generalChunker('general_chunk', d)]);
  add('general_chunk', [generalChunker('general_chunk', d), generalChunker('general_chunker', d)]);
  add('parentchild_chunker', [parentChildChunker('parentchild_chunker', d), parentChildChunker('parentchild_chunk', d)]);
  add('parentchild_chunk', [parentChildChunker('parentchild_chunk', d), parentChildChunker('parentchild_chunker', d)]);
  add('qa_chunker', [qaChunker('qa_chunker', d), qaChunker('qa_chunk', d)]);
  add('qa_chunk', [qaChunker('qa_chunk', d), qaChunker('qa_chunker', d)]);
  return m;
}

/** `langgenius/general_chunker/general_chunker` → `general_chunker`; a plain name stays. */
function providerOf(ref: ToolRef): string {
  const m = /^[\w.-]+\/([\w.-]+)\/([\w.-]+)$/.exec(ref.providerId);
  return m ? m[2]! : ref.providerId;
}

/**
 * The tools of a knowledge pipeline run: Dify's first-party processing plugins (the extractor and
 * the general, parent-child and Q&A chunkers) built in over the knowledge parsers and chunking,
 * every other tool from the server's registry.
 */
export class PipelineTools implements ToolRuntime {
  readonly #own: Map<string, Map<string, Tool>>;
  readonly #ownTools: Set<Tool>;
  readonly #inner: ToolRuntime | undefined;

  constructor(inner: ToolRuntime | undefined, deps: PipelineToolDeps) {
    this.#inner = inner;
    this.#own = providers(deps);
    this.#ownTools = new Set([...this.#own.values()].flatMap((m) => [...m.values()]));
  }

  #find(ref: ToolRef): { tool: Tool } | { error: string; errorType: string } | undefined {
    const p = this.#own.get(providerOf(ref));
    if (!p) return undefined;
    const tool = p.get(ref.toolName);
    return tool ? { tool } : { error: `tool "${ref.toolName}" of provider "${ref.providerId}": the provider has no such tool (its tools: ${[...p.keys()].join(', ')})`, errorType: 'ToolNotFoundError' };
  }

  async resolve(ref: ToolRef) {
    return this.#find(ref) ?? (this.#inner ? this.#inner.resolve(ref) : { error: `tool "${ref.toolName}" of provider "${ref.providerId}": no tools are configured`, errorType: 'ToolProviderNotFoundError' });
  }

  async check(ref: ToolRef) {
    return this.#find(ref) ?? (this.#inner ? this.#inner.check(ref) : { error: `tool "${ref.toolName}" of provider "${ref.providerId}": no tools are configured`, errorType: 'ToolProviderNotFoundError' });
  }

  async invoke(tool: Tool, params: Readonly<Record<string, unknown>>, ctx: Parameters<ToolRuntime['invoke']>[2]): Promise<ToolResultMessage[]> {
    if (this.#ownTools.has(tool)) return (await tool.invoke(params, ctx)) as ToolResultMessage[];
    if (!this.#inner) throw toolError(`tool "${tool.name}" cannot run here`, 'ToolInvokeError');
    return this.#inner.invoke(tool, params, ctx);
  }
}
