import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CodeConfig } from '../config.js';
import type { CodeExecutor, CodeRequest } from '../engine/types.js';
import { processModuleAdvice } from './python-modules.js';
import { JS_RUNNER, PYTHON_RUNNER } from './runners.js';

import { CodeExecutionError } from './code-execution-error.js';

export { CodeExecutionError };

/**
 * Runs code nodes in a child process: the machine's python3 (or this Node.js with node:vm for
 * javascript), a fresh temporary working directory, a minimal environment, a wall-time limit and
 * output limits. NOT a security sandbox (see docs/decisions.md): code runs with the server's user.
 */
export class ProcessCodeExecutor implements CodeExecutor {
  constructor(private readonly config: CodeConfig) {}

  missingModuleAdvice(module: string): string {
    return processModuleAdvice(module);
  }

  async run(req: CodeRequest, signal: AbortSignal): Promise<unknown> {
    const [command, args] =
      req.language === 'python3' ? [this.config.pythonCommand, ['-I', '-c', PYTHON_RUNNER]] : [process.execPath, ['-e', JS_RUNNER]];
    const cwd = await mkdtemp(path.join(tmpdir(), 'dovetail-code-'));
    try {
      return await this.#spawn(req, command, args, cwd, signal);
    } finally {
      await rm(cwd, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  #spawn(req: CodeRequest, command: string, args: string[], cwd: string, signal: AbortSignal): Promise<unknown> {
    const { timeoutSeconds, maxOutputBytes } = this.config;
    return new Promise((resolve, reject) => {
      const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: cwd, PYTHONIOENCODING: 'utf-8' };
      // Its own process group, so a timeout or stop also ends processes the code started.
      const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let outBytes = 0;
      let errBytes = 0;
      let failure: string | undefined;
      const kill = (why: string) => {
        failure ??= why;
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
        // A descendant that escaped the group may still hold the pipes: stop waiting for them.
        child.stdout.destroy();
        child.stderr.destroy();
      };
      const timer = setTimeout(() => kill(`Code execution timed out after ${timeoutSeconds}s (CODE_EXECUTION_TIMEOUT).`), timeoutSeconds * 1000);
      const onAbort = () => kill('Code execution was stopped.');
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      child.stdout.on('data', (c: Buffer) => {
        outBytes += c.length;
        if (outBytes > maxOutputBytes) kill(`Code output exceeds ${maxOutputBytes} bytes (CODE_MAX_OUTPUT_BYTES).`);
        else out.push(c);
      });
      child.stderr.on('data', (c: Buffer) => {
        errBytes += c.length;
        if (errBytes <= maxOutputBytes) err.push(c);
      });
      child.stdin.on('error', () => undefined);
      child.on('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (e.code === 'ENOENT') {
          const what = req.language === 'python3' ? `python3 ("${command}", CODE_PYTHON_COMMAND) is not installed on this server` : `"${command}" cannot be started`;
          reject(new CodeExecutionError(`Code execution failed: ${what}.`));
        } else reject(new CodeExecutionError(`Code execution failed: ${e.message}`));
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (failure) return reject(new CodeExecutionError(failure));
        const text = Buffer.concat(out).toString('utf8');
        let parsed: { result?: unknown; error?: string };
        try {
          parsed = JSON.parse(text) as typeof parsed;
        } catch {
          const stderr = Buffer.concat(err).toString('utf8').trim().split('\n').slice(-3).join('\n');
          return reject(new CodeExecutionError(`Code execution failed (exit code ${code}): ${stderr || 'no result'}`));
        }
        if (typeof parsed.error === 'string') return reject(new CodeExecutionError(`Code execution failed: ${parsed.error}`));
        resolve(parsed.result);
      });
      child.stdin.end(JSON.stringify({ code: req.code, inputs: req.inputs }));
    });
  }
}
