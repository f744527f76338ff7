/** Time source port; tests and the engine receive it rather than calling Date directly. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Epoch seconds, as Dify puts in `created_at` fields. */
export function toSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
