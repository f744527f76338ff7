import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from './fixtures.js';
import type { TestServer } from './server.js';

/** A real server in a process of its own (test/helpers/child-server.mjs), on the data of a stopped test server. */
export interface ServerProcess {
  /** The process (to signal it: SIGKILL, SIGSTOP, SIGCONT). */
  readonly child: ChildProcess;
  readonly url: string;
  readonly api: string;
  /** Its stdout so far (the JSON log lines, with CHILD_LOG_LEVEL). */
  output(): string;
  /** True while the process has not exited. */
  alive(): boolean;
  /** The exit code or signal, once it has exited. */
  readonly exit: Promise<string>;
  /** SIGTERM, then waits for the exit. */
  close(): Promise<void>;
}

/**
 * Starts `test/helpers/child-server.mjs` on the data dir / schema of `prepared` (which must be
 * stopped: `prepared.stop()`), with `env` on top of this process's environment. A server that
 * crashes shows as `alive() === false`, which a test in the same process could not observe.
 */
export async function spawnServer(prepared: TestServer, env: Record<string, string> = {}): Promise<ServerProcess> {
  const childEnv: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DOVETAIL_DATA_DIR: prepared.dataDir,
    ...(prepared.config.databaseUrl ? { DATABASE_URL: prepared.config.databaseUrl, DATABASE_SCHEMA: prepared.config.databaseSchema! } : {}),
    ...env,
  };
  delete childEnv.DOVETAIL_CONFIG;
  const child: ChildProcess = spawn(process.execPath, [path.join(PROJECT_ROOT, 'test/helpers/child-server.mjs')], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let exited = false;
  const exit = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = true;
      resolve(signal ?? String(code));
    }),
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      // the line child-server prints (a JSON log line may say "Server listening at …")
      const m = /^listening (http\S+)$/m.exec(out);
      if (m) resolve(m[1]!);
    });
    void exit.then((how) => reject(new Error(`server process exited (${how}) before listening`)));
  });
  return {
    child,
    url,
    api: `${url}/v1`,
    output: () => out,
    alive: () => !exited,
    exit,
    async close() {
      if (!exited) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exit;
      clearTimeout(t);
    },
  };
}
