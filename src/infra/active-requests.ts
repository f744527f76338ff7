import { tooManyRequests } from './errors.js';

/** Gives back a slot taken with `acquire`; calling it twice is harmless. */
export type Release = () => void;

/**
 * Per-app count of generations in flight (Dify's `max_active_requests`). In-process: with several
 * API instances each enforces the limit on its own share.
 */
export class ActiveRequests {
  readonly #active = new Map<string, number>();

  /**
   * Takes a slot for `key` (an app id) or throws 429 `too_many_requests` naming the limit.
   * `limit` ≤ 0 means unlimited (the slot is still counted).
   */
  acquire(key: string, limit: number): Release {
    const n = this.#active.get(key) ?? 0;
    if (limit > 0 && n >= limit) throw tooManyRequests(key, limit);
    this.#active.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#active.get(key) ?? 1) - 1;
      if (left <= 0) this.#active.delete(key);
      else this.#active.set(key, left);
    };
  }

  /** Slots currently held for `key`. */
  count(key: string): number {
    return this.#active.get(key) ?? 0;
  }
}

/** Dify's rule: the smallest positive of the app's own limit and the instance limit; 0 = unlimited. */
export function effectiveLimit(appLimit: number | null, instanceLimit: number): number {
  const positive = [appLimit ?? 0, instanceLimit].filter((n) => n > 0);
  return positive.length ? Math.min(...positive) : 0;
}
