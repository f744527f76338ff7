import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A bench helper process (a `.ts` script run through tsx) and the first message it sent. */
export interface Child<T> {
  readonly info: T;
  stop(): void;
}

/**
 * Forks `bench/<script>` with `arg` (JSON) and waits for its first IPC message. Benchmarks put the
 * upstream and the server in their own processes so none shares an event loop with the client.
 */
export async function startChild<T>(script: string, arg: unknown): Promise<Child<T>> {
  const child: ChildProcess = fork(fileURLToPath(new URL(`./${script}`, import.meta.url)), [JSON.stringify(arg)], { execArgv: ['--import', 'tsx', ...(process.env.BENCH_CHILD_ARGS ? process.env.BENCH_CHILD_ARGS.split(' ') : [])] });
  const info = await new Promise<T>((resolve, reject) => {
    child.once('message', (m) => resolve(m as T));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { info, stop: () => child.connected && child.disconnect() };
}
