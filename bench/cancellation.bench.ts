/**
 * A generation's cancellation as Dovetail makes it (`src/lib/cancellation.ts`: a `Cancellation`,
 * the model request listening with `onAbort` and letting go when its answer ends) beside the
 * baseline of the same with an `AbortController` (its signal made, an `abort` listener added and
 * removed), in this process: 200 kept at a time, as a burst's generations are. Prints µs per
 * generation; both are made on every model request's way out.
 */
import { Cancellation } from '../src/lib/cancellation.js';
import { fmt, median } from './lib.js';

const GENERATIONS = 200_000;
const AT_ONCE = 200;
const onAbort = (): void => undefined;

/** µs per generation's cancellation: made, listened to, let go (kept until `AT_ONCE` are made). */
function perGeneration(web: boolean): number {
  let kept: unknown[] = [];
  const t0 = performance.now();
  for (let i = 0; i < GENERATIONS; i++) {
    if (web) {
      const controller = new AbortController();
      controller.signal.addEventListener('abort', onAbort, { once: true });
      controller.signal.removeEventListener('abort', onAbort);
      kept.push(controller);
    } else {
      const cancel = new Cancellation();
      cancel.onAbort(onAbort)();
      kept.push(cancel);
    }
    if (kept.length === AT_ONCE) kept = [];
  }
  return ((performance.now() - t0) / GENERATIONS) * 1000;
}

export function run(): Promise<void> {
  const light: number[] = [];
  const web: number[] = [];
  for (let round = 0; round < 5; round++) {
    web.push(perGeneration(true));
    light.push(perGeneration(false));
  }
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out(`a generation's cancellation (made, listened to, let go; ${AT_ONCE} kept at a time), median of 5 rounds of ${GENERATIONS}:`);
  out(`  Cancellation (onAbort)                   ${fmt(median(light), 2)} µs per generation`);
  out(`  baseline: AbortController (its signal)   ${fmt(median(web), 2)} µs per generation`);
  return Promise.resolve();
}
