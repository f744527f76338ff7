/**
 * Node flags a server process (`serve`, `worker`) is meant to run with: `npm start` passes them,
 * and docs/deployment.md gives them for every process. They are V8 flags, which Node takes only on
 * its command line (not in `NODE_OPTIONS`, and too late once the heap exists).
 *
 * `--no-memory-reducer`: after about 8 s without allocation V8 collects and shrinks the heap; in
 * that collection the objects that only quiet-time garbage still referred to die, and the optimized
 * code of the whole request path that embedded them is thrown away at once (~150 functions: Node's
 * HTTP server and streams, Fastify, undici, ours). The next burst of requests then runs unoptimized
 * code while V8 compiles it again, for ~20 s. Measured under a burst of 200 streaming completions:
 * first-token overhead p50 11–21 ms with the flag, 22–39 ms without (docs/decisions.md,
 * "Servers run with `--no-memory-reducer`").
 * The cost: an idle process keeps the heap it grew to until its next ordinary collection.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--no-memory-reducer'];

/** The server flags `execArgv` (a process's Node flags) lacks. */
export function missingServerFlags(execArgv: readonly string[] = process.execArgv): string[] {
  return SERVER_NODE_FLAGS.filter((f) => !execArgv.includes(f));
}
