/** Ids (or value rows) per statement: SQLite binds at most 32,766 parameters, and a request may carry more. */
export const IDS_PER_STATEMENT = 500;

/** `list` in consecutive slices of at most `size`, one statement each. */
export function inBatches<T>(list: readonly T[], size = IDS_PER_STATEMENT): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}
