import { noteArrival } from '../infra/after-arrivals.js';

/**
 * Requests admitted in slices of event-loop time, so that what the first ones sent leaves before
 * the last ones are handled.
 *
 * A burst of requests that arrives faster than it is handled is read in one poll phase of the event
 * loop. undici writes a request on a kept-alive connection only in the next check phase (it first
 * lets the loop read anything the server sent on the idle connection: GHSA-35p6-xmwp-9g52), so
 * without slices every model request of a 200-request burst leaves after the last one was handled.
 * With slices, once `sliceMs` of a turn has gone to requests, the next ones wait for that turn's
 * check phase: the model requests made so far are written, then the waiting requests are handled, again
 * for at most `sliceMs`, and so on, in arrival order. A request on a quiet server goes on at once.
 *
 * `sliceMs` 0 admits every request at once (one slice per poll phase, as Node does). `onHeld` is
 * called for each request that waits.
 */
export function requestAdmission(sliceMs: number, onHeld: () => void = () => undefined): (done: () => void) => void {
  if (sliceMs <= 0) {
    return (done) => {
      noteArrival();
      done();
    };
  }
  /** When the current slice began (`performance.now()`), or -1 when none is open. */
  let sliceStart = -1;
  /** Requests waiting for a later slice. */
  let waiting = 0;

  const closeSlice = (): void => {
    sliceStart = -1;
  };
  /** Whether a request may go on in the current slice (opening one, closed in the next check phase). */
  const inSlice = (): boolean => {
    const now = performance.now();
    if (sliceStart < 0) {
      sliceStart = now;
      setImmediate(closeSlice);
      return true;
    }
    return now - sliceStart < sliceMs;
  };
  const release = (done: () => void): void => {
    if (!inSlice()) return void setImmediate(release, done);
    waiting--;
    noteArrival();
    done();
  };

  return (done) => {
    noteArrival();
    if (waiting === 0 && inSlice()) return done();
    waiting++;
    onHeld();
    setImmediate(release, done);
  };
}
