import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { noteArrival, noteWaiting } from '../infra/after-arrivals.js';

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
    noteWaiting(-1);
    noteArrival();
    done();
  };

  return (done) => {
    noteArrival();
    if (waiting === 0 && inSlice()) return done();
    waiting++;
    noteWaiting(1);
    onHeld();
    setImmediate(release, done);
  };
}

/** How long each held request waited for its slice (ms), for the requests that waited. */
const waited = new WeakMap<IncomingMessage, number>();

/** How long `req` waited before it was handled (ms; 0 if it went on at once). */
export function admissionWaitMs(req: IncomingMessage): number {
  return waited.get(req) ?? 0;
}

/**
 * Puts `admit` in front of the server's request handlers (Fastify's router): a held request is
 * only parsed by Node until its slice comes — not routed, no request or reply objects, no hooks —
 * so reading a burst costs little before the first slice's model requests can leave.
 */
export function admitRequests(server: Server, admit: (done: () => void) => void): void {
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let arrivedAt = -1;
    admit(() => {
      if (arrivedAt >= 0) {
        // a client that went away while its request waited gets nothing started for it
        if (req.socket.destroyed) return;
        waited.set(req, performance.now() - arrivedAt);
      }
      for (const handler of handlers) handler.call(server, req, res);
    });
    // set after `admit`: still -1 when the request went on at once
    arrivedAt = performance.now();
  });
}
