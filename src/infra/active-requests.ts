import { tooManyRequests } from './errors.js';

/** Gives back a slot taken with `acquire`; calling it twice is harmless. */
export type Release = () => void;

/** Per-app count of generations in flight (Dify's `max_active_requests`). */
export interface ActiveRequestLimiter {
  /**
   * Takes a slot for `key` (an app id) or throws 429 `too_many_requests` naming the limit.
   * `limit` ≤ 0 means unlimited (the slot is still counted).
   */
  acquire(key: string, limit: number, holder?: string): Promise<Release>;
  /**
   * Frees the slot `holder` (the id given to `acquire`) took for `key` in a process that died
   * (its generation was found orphaned). Slots of this process are given back by their Release.
   */
  releaseOrphan(key: string, holder: string): Promise<void>;
  /** Slots currently held for `key` (by every instance that shares the limiter). */
  count(key: string): Promise<number>;
  close(): Promise<void>;
}

/** The limiter of a single instance: counts in memory. `redis-active-requests.ts` shares one. */
export class ActiveRequests implements ActiveRequestLimiter {
  readonly #active = new Map<string, number>();

  async acquire(key: string, limit: number): Promise<Release> {
    const n = this.#active.get(key) ?? 0;
    if (limit > 0 && n >= limit) throw tooManyRequests(key, limit);
    this.#active.set(key, n + 1);
    return once(() => {
      const left = (this.#active.get(key) ?? 1) - 1;
      if (left <= 0) this.#active.delete(key);
      else this.#active.set(key, left);
    });
  }

  async count(key: string): Promise<number> {
    return this.#active.get(key) ?? 0;
  }

  /** A dead process's slots died with it: nothing is counted here for them. */
  async releaseOrphan(): Promise<void> {}

  async close(): Promise<void> {}
}

/** `fn` wrapped so that only its first call does anything. */
export function once(fn: () => void): Release {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

/** Dify's rule: the smallest positive of the app's own limit and the instance limit; 0 = unlimited. */
export function effectiveLimit(appLimit: number | null, instanceLimit: number): number {
  const positive = [appLimit ?? 0, instanceLimit].filter((n) => n > 0);
  return positive.length ? Math.min(...positive) : 0;
}
