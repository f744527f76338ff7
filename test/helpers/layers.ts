/**
 * The layers of src/, lowest first (docs/architecture.md, "Layers"): a part may import parts of its
 * own layer (one way) and of the layers below, never one above. A part is a top-level folder of
 * src/; of the files at the top, `config.ts` belongs to `config/` (the loader of its parts) and
 * `cli.ts` to `cli/` (the command table of its actions).
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['lib', 'types', 'config-error.ts'],
  ['infra'],
  ['store'],
  ['llm', 'text', 'accounts'],
  ['engine'],
  ['code'],
  ['apps'],
  ['files'],
  ['knowledge'],
  ['tools', 'outbound', 'annotations', 'forms'],
  ['web', 'moderation'],
  ['mail', 'messages'],
  ['feedback', 'audio'],
  ['runs'],
  ['publish', 'triggers'],
  ['console'],
  ['config'],
  ['composition'],
  ['runtime.ts'],
  ['http', 'seed.ts'],
  ['cli'],
];

/** The part of src/ a path relative to src/ belongs to. */
export function srcUnit(relative: string): string {
  const [first, ...rest] = relative.split('/');
  if (rest.length > 0) return first!;
  if (first === 'config.ts') return 'config';
  if (first === 'cli.ts') return 'cli';
  return first!;
}

/**
 * Today's upward imports, each with why it is there and what removes it. A ratchet: the test fails
 * on an upward import not listed here and on an entry that no longer happens, so the list only
 * shrinks. Do not add to it; invert the dependency instead (a port in the lower layer, or the
 * helper moved down).
 */
export const ALLOWED_UPWARD: Readonly<Record<string, string>> = {
  'infra → store': 'the embedded queue (infra/queue/db-queue.ts) keeps its jobs in the main database and names the schema type; the runners would move beside the store, or the queue tables into infra',
  'infra → llm': 'infra/metrics.ts wraps the model-provider registry to time every call; the wrapper belongs to llm/ (or a port in infra)',
  'store → knowledge': 'the dialects implement the search ports declared in knowledge/index/ (search-dialect.ts); the implementations would move beside their ports',
  'text → knowledge': 'text/offload-ops.ts runs knowledge/ingest/chunk.ts (cleaning, chunking) off the main thread; the chunker (with its process-rule types) would move to text/',
  'engine → apps': 'engine/ports.ts re-exports the DSL document type from apps/dsl.ts (type only, allowed by the engine purity rule); the DSL types would move below the engine',
  'engine → forms': 'engine/ports.ts re-exports the Human Input gateway port from forms/human-input-port.ts (type only); the port would move into the engine',
  'engine → tools': 'engine/ports.ts re-exports the Tool port from tools/tool.ts (type only); the port would move into the engine',
  'apps → messages': 'apps/import-check.ts reads the agent-chat settings (messages/agent-mode.ts) for import warnings; each domain would register its warnings through a hook',
  'apps → moderation': 'apps/import-check.ts asks moderation for its import warnings (as above)',
  'apps → tools': 'apps/import-check.ts asks the tool runtime for import warnings (as above)',
  'files → knowledge': 'files/run-files.ts parses documents for the document-extractor node with the knowledge parser; the parser would be handed in (a port) or move below files',
  'files → tools': 'files/tool-files.ts implements the ToolFiles port declared in tools/tool.ts; the port would move to files/ or the implementation to tools/',
  'apps → config': 'takes the settings type from src/config.ts; each domain would own its settings type and config/ import it (as knowledge/ingest/embedder.ts does for the embeddings settings)',
  'audio → config': 'takes the settings type from src/config.ts (as above)',
  'code → config': 'takes the settings type from src/config.ts, and pyodide-sandbox.ts a value from it (as above)',
  'files → config': 'takes the settings type from src/config.ts; blobs/open-blobs.ts also reads a value (as above)',
  'forms → config': 'takes the settings type from src/config.ts (as above)',
  'messages → config': 'takes the settings type from src/config.ts (as above)',
  'runs → config': 'takes the settings type from src/config.ts (as above)',
};

/** Today's pairs of parts that import each other, each with the upward side that makes it (a ratchet, as above). */
export const ALLOWED_TWO_WAY: Readonly<Record<string, string>> = {
  'infra ↔ store': 'infra → store (the embedded queue\'s schema type)',
  'infra ↔ llm': 'infra → llm (the metrics wrapper of model calls)',
  'knowledge ↔ store': 'store → knowledge (dialects implement the knowledge search ports)',
  'knowledge ↔ text': 'text → knowledge (the offloaded chunker)',
  'apps ↔ engine': 'engine → apps (the DSL type in engine/ports.ts)',
  'apps ↔ messages': 'apps → messages (import warnings)',
  'apps ↔ moderation': 'apps → moderation (import warnings)',
  'apps ↔ tools': 'apps → tools (import warnings)',
  'files ↔ knowledge': 'files → knowledge (the document parser of run files)',
  'files ↔ tools': 'files → tools (the ToolFiles port)',
  'config ↔ files': 'files → config (the settings type)',
  'config ↔ messages': 'messages → config (the settings type)',
};
