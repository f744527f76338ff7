import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuickJsSandbox } from '../../src/code/sandbox/quickjs-sandbox.js';
import { contractCodeConfig } from '../code/code-executor.contract.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

/** javascript code nodes in QuickJS: attempts to break out, each of which must fail. */
let js: QuickJsSandbox;
const never = () => new AbortController().signal;
const run = (code: string, inputs: Record<string, unknown> = {}) => js.runJavaScript({ language: 'javascript', code, inputs }, never());

beforeAll(async () => {
  js = new QuickJsSandbox(contractCodeConfig({ CODE_MAX_MEMORY_MB: '32', CODE_MAX_OUTPUT_BYTES: String(1 << 20) }));
  await js.ready();
});
afterAll(async () => {
  await js?.close();
});

describe('javascript sandbox', () => {
  it('this.constructor.constructor reaches the sandbox realm, which has no process, require, fetch or timers', async () => {
    expect(await run('function main() { return { r: this.constructor.constructor("return [typeof process, typeof require, typeof fetch, typeof setTimeout, typeof WebAssembly].join()")() }; }')).toEqual({
      r: 'undefined,undefined,undefined,undefined,undefined',
    });
    await expect(run('function main() { return { r: this.constructor.constructor("return process")().env }; }')).rejects.toThrow(/^Code execution failed: ReferenceError: process is not defined/);
  });

  it('console output goes nowhere and import() finds no module', async () => {
    expect(await run('function main() { console.log("x"); return { ok: 1 }; }')).toEqual({ ok: 1 });
    await expect(run('async function main() { const fs = await import("fs"); return { r: typeof fs }; }')).rejects.toThrow(/^Code execution failed: /);
  });

  it('no state survives from one run to the next', async () => {
    expect(await run('function main() { globalThis.leak = 1; Object.prototype.leak2 = 2; return { r: 1 }; }')).toEqual({ r: 1 });
    expect(await run('function main() { return { r: typeof leak + typeof ({}).leak2 }; }')).toEqual({ r: 'undefinedundefined' });
  });

  it('a memory bomb ends at CODE_MAX_MEMORY_MB and the next run works', async () => {
    // Growing a fresh worker's WebAssembly memory is slow on a loaded machine (no interrupt check
    // runs meanwhile), so the worker may be terminated at the timeout before QuickJS reports the
    // limit: either way the node ends with the setting's message and the host heap stays small.
    await expect(run('function main() { const a = []; for (;;) a.push(("x" + a.length).repeat(1 << 18)); }')).rejects.toThrow(
      /^(Code execution ran out of memory: more than 32 MB \(CODE_MAX_MEMORY_MB\)|Code execution timed out after 3s \(CODE_EXECUTION_TIMEOUT\))\.$/,
    );
    expect(await run('function main({x}) { return { r: x }; }', { x: 7 })).toEqual({ r: 7 });
  });

  it('deep recursion is a stack overflow error, not a crash', async () => {
    await expect(run('function f(n) { return f(n + 1) + 1; }\nfunction main() { return { r: f(0) }; }')).rejects.toThrow(/^Code execution failed: InternalError: stack overflow/);
    expect(await run('function main() { return { r: 1 }; }')).toEqual({ r: 1 });
  });

  it('a promise that never settles fails instead of hanging', async () => {
    await expect(run('function main() { return new Promise(() => {}); }')).rejects.toThrow(/^Code execution failed: Error: main returned a promise that never settles/);
  });
});

describe('javascript code nodes on a server: CODE_MAX_MEMORY_MB counts every allocation', () => {
  let s: TestServer;
  beforeAll(async () => {
    // A long time limit: the node must end at the memory limit, not the clock.
    s = await startServer({ env: { CODE_MAX_MEMORY_MB: '128', CODE_EXECUTION_TIMEOUT: '30' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function runCode(code: string): Promise<{ status: string; outputs: Record<string, unknown> | null; error: string | null }> {
    const dsl = workflowDsl(
      [startNode(), { id: 'code', type: 'code', code_language: 'javascript', code, outputs: { n: { type: 'number', children: null } }, variables: [] }, endNode({ n: ['code', 'n'] })],
      [
        ['start', 'code'],
        ['code', 'end'],
      ],
    );
    const { apiKey } = await s.importApp(dsl);
    const r = await fetch(`${s.api}/workflows/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: {}, response_mode: 'blocking', user: 'u' }),
    });
    expect(r.status).toBe(200);
    return ((await r.json()) as { data: { status: string; outputs: Record<string, unknown> | null; error: string | null } }).data;
  }

  it('a hundred 10 MB strings (1 GB) fail the node with the memory error, caught or not, and the next run works', async () => {
    const bomb = await runCode('function main() { const a = []; for (let i = 0; i < 100; i++) a.push(("x" + i).repeat(10 * 1024 * 1024)); return { n: a.length }; }');
    expect(bomb).toMatchObject({ status: 'failed', error: 'Code execution ran out of memory: more than 128 MB (CODE_MAX_MEMORY_MB).' });
    // A program that catches the out-of-memory error is still ended by the limit.
    const caught = await runCode('function main() { const a = []; try { for (let i = 0; i < 100; i++) a.push(new Array(1310720).fill(i)); } catch (e) { return { n: -1 }; } return { n: a.length }; }');
    expect(caught).toMatchObject({ status: 'failed', error: 'Code execution ran out of memory: more than 128 MB (CODE_MAX_MEMORY_MB).' });
    expect(await runCode('function main() { return { n: 7 }; }')).toMatchObject({ status: 'succeeded', outputs: { n: 7 } });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  }, 60_000);
});
