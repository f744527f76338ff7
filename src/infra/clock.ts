/** Time source port; tests and the engine receive it rather than calling Date directly. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Epoch seconds, as Dify puts in `created_at` fields (pure, in src/lib so the engine can use it too). */
export { toSeconds } from '../lib/seconds.js';
