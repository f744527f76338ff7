/**
 * Defaults of the settings that a module outside the config loader also needs before (or without)
 * a loaded config: tests and tools open a store or count tokens without one. The loader reads these
 * same constants (through src/config/defaults.ts), so each default is written once. They live in
 * src/lib so that the storage, model and text layers below the config loader may import them
 * (docs/architecture.md, "Layers"). Every other default lives only in its loader
 * (src/config/*-config.ts); the engine receives its values through its ports.
 */

/** `DATABASE_POOL_SIZE`: PostgreSQL connections at most. */
export const DEFAULT_DATABASE_POOL_SIZE = 10;

/**
 * `SQLITE_MMAP_MB`: how much of the SQLite file is read through a memory map. Mapped pages count in
 * the process's RSS; the default is a thirty-second of the machine's memory, between 16 and 256 MB
 * (64 MB on a 2 GB machine, 256 MB from 8 GB).
 */
export function defaultSqliteMmapMb(totalMemoryBytes: number): number {
  return Math.max(16, Math.min(256, Math.floor(totalMemoryBytes / 32 / (1024 * 1024))));
}

/** `TOKENIZER_MAX_PIECE_CHARS`: the longest run of characters the tokenizer counts as one piece. */
export const DEFAULT_TOKENIZER_MAX_PIECE_CHARS = 128;

/**
 * `SSE_PING_INTERVAL_MS`: keep-alive interval of generation streams (Dify: 10 s). Workflow event
 * streams, which the setting does not cover, ping at this same interval.
 */
export const DEFAULT_SSE_PING_INTERVAL_MS = 10_000;

/**
 * `MODEL_HTTP_KEEPALIVE_SECONDS`: how long an idle connection to a model server is kept for the next
 * request (as nginx keeps its upstream connections); the model HTTP client falls back to it when a
 * caller gives none.
 */
export const DEFAULT_MODEL_HTTP_KEEPALIVE_SECONDS = 60;

/**
 * `SSE_MAX_BUFFERED_BYTES`: most bytes a stream holds unsent for a client that does not read (1 MiB):
 * a run stream stops reading the run's log until they are taken, a generation stream drops the
 * client. A normal reader never comes near it: models write far slower than a network reads.
 */
export const DEFAULT_SSE_MAX_BUFFERED_BYTES = 1024 * 1024;
