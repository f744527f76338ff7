/**
 * `read(key)`, kept for the rest of the event-loop turn that first asked for it: every caller in
 * that turn gets the same value (a promise too: the read's result, or its failure), and the next
 * turn reads again. Kept until the turn's check phase (a ref'd immediate, so the loop does not block
 * in poll while something is kept). For a burst of requests that each check the same thing — a
 * change counter, an app's version — one read serves all of a turn's arrivals.
 */
export function perTurn<K, V>(read: (key: K) => V): (key: K) => V {
  const kept = new Map<K, V>();
  const forget = () => kept.clear();
  return (key) => {
    if (kept.has(key)) return kept.get(key) as V;
    if (kept.size === 0) setImmediate(forget);
    const value = read(key);
    kept.set(key, value);
    return value;
  };
}
