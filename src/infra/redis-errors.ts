import type { Logger } from './logger.js';

/** How often one error message of a Redis client (or BullMQ worker) is logged at most during an outage. */
const LOG_EVERY_MS = 10_000;

interface ErrorSource {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** Distinct error messages remembered per source (beyond, the memory starts again). */
const MAX_MESSAGES = 100;

/**
 * Logs the `error` events of a Redis client (ioredis, a BullMQ queue or worker) through the JSON
 * logger: each distinct message at most once per 10 s, with a count of the repeats left out. An
 * ioredis client without an `error` listener prints raw "[ioredis] Unhandled error event" stacks
 * on stderr instead, at every reconnection attempt while Redis is unreachable. Without a logger the
 * errors are dropped (the failing commands still reject where they were sent).
 */
export function logRedisErrors(source: ErrorSource, logger: Logger | undefined, what: string, fields: Record<string, unknown> = {}, now: () => number = Date.now): void {
  const seen = new Map<string, { last: number; skipped: number }>();
  source.on('error', (err: Error) => {
    const t = now();
    const key = String(err?.message);
    const s = seen.get(key);
    if (s && t - s.last < LOG_EVERY_MS) {
      s.skipped++;
      return;
    }
    if (!s && seen.size >= MAX_MESSAGES) seen.clear();
    logger?.warn({ ...fields, err: key, code: (err as NodeJS.ErrnoException)?.code, ...(s?.skipped ? { suppressed: s.skipped } : {}) }, `${what} error`);
    seen.set(key, { last: t, skipped: 0 });
  });
}
