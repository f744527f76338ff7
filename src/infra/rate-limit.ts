/** Fixed-window request counting per key (a client address). */
export interface RateLimiter {
  /** Counts one hit; true while the key is within `max` hits of its current `windowMs` window. */
  hit(key: string, max: number, windowMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** One process's counters; the map is swept of finished windows as it is used, so it stays bounded by the active keys. */
export class MemoryRateLimiter implements RateLimiter {
  readonly #windows = new Map<string, { until: number; count: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async hit(key: string, max: number, windowMs: number): Promise<boolean> {
    const now = this.#now();
    if (this.#windows.size > 10_000) for (const [k, w] of this.#windows) if (w.until <= now) this.#windows.delete(k);
    let w = this.#windows.get(key);
    if (!w || w.until <= now) this.#windows.set(key, (w = { until: now + windowMs, count: 0 }));
    w.count++;
    return w.count <= max;
  }

  async close(): Promise<void> {
    this.#windows.clear();
  }
}
