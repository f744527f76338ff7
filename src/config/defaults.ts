/**
 * The defaults the loader shares with modules that run without a loaded config: the constants are
 * in src/lib/setting-defaults.ts (the layers below the loader import them from there), the document
 * parsing limits beside their type (src/knowledge/ingest/parse/limits.ts).
 */
export * from '../lib/setting-defaults.js';
export { DEFAULT_PARSE_LIMITS } from '../knowledge/ingest/parse/limits.js';
