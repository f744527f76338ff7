/** Epoch seconds, as Dify puts in `created_at` fields. */
export function toSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
