/**
 * Work that can wait while requests are arriving: a request's way to the model comes first.
 *
 * In a burst (200 streaming requests within a few milliseconds) every arrival's bookkeeping — its
 * message row, its response headers — done between two arrivals delays the next request's model
 * call, and the first tokens of all the later ones. `afterArrivals(fn)` runs `fn` in the first
 * turn of the event loop that brought no new request, and at the latest `AFTER_ARRIVALS_MAX_WAIT_MS`
 * after it was queued; on a quiet server that is the next turn (what `setImmediate` gives).
 *
 * The HTTP server calls `noteArrival()` for each request it routes.
 */
let arrivals = 0;
/** Arrivals counted when the queue was last checked. */
let seen = 0;
let queue: (() => void)[] = [];
/** When the oldest queued task was queued (ms, `performance.now()`). */
let oldest = 0;
let armed = false;

/** Requests read and waiting to be handled (held for a later slice of the event loop). */
let waiting = 0;

/** How long a task waits at most for arrivals to pause (ms). */
export const AFTER_ARRIVALS_MAX_WAIT_MS = 50;
/** The same while requests are waiting to be handled: they come first, up to this long. */
export const AFTER_ARRIVALS_MAX_WAIT_HELD_MS = 1000;

export function noteArrival(): void {
  arrivals++;
}

/** A request now waits to be handled (`+1`) or no longer waits (`-1`). */
export function noteWaiting(delta: 1 | -1): void {
  waiting += delta;
}

export function afterArrivals(fn: () => void): void {
  queue.push(fn);
  if (armed) return;
  armed = true;
  seen = arrivals;
  oldest = performance.now();
  setImmediate(check);
}

function check(): void {
  if (arrivals !== seen && performance.now() - oldest < (waiting > 0 ? AFTER_ARRIVALS_MAX_WAIT_HELD_MS : AFTER_ARRIVALS_MAX_WAIT_MS)) {
    seen = arrivals;
    setImmediate(check);
    return;
  }
  armed = false;
  const tasks = queue;
  queue = [];
  // one task's failure neither stops the others nor goes unseen (thrown after them, as an immediate's would)
  let failure: { err: unknown } | undefined;
  for (const task of tasks) {
    try {
      task();
    } catch (err) {
      failure ??= { err };
    }
  }
  if (failure) throw failure.err;
}
