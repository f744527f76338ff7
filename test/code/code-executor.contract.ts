import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type CodeConfig } from '../../src/config.js';
import type { CodeExecutor, CodeRequest } from '../../src/engine/types.js';

/** Code settings for a contract run: a short timeout and a small output limit. */
export function contractCodeConfig(env: Record<string, string> = {}): CodeConfig {
  const snapshots = process.env.CODE_PYTHON_SNAPSHOT_DIR ? { CODE_PYTHON_SNAPSHOT_DIR: process.env.CODE_PYTHON_SNAPSHOT_DIR } : {};
  return loadConfig({ DOVETAIL_CONFIG: undefined as unknown as string, CODE_EXECUTION_TIMEOUT: '3', CODE_MAX_OUTPUT_BYTES: '4096', ...snapshots, ...env }, {}).code;
}

const never = () => new AbortController().signal;

const PROGRAMS = {
  python3: {
    echo: 'def main(x: int, s: str) -> dict:\n    return {"double": x * 2, "s": s.upper(), "list": [x, None, True]}\n',
    raise: 'def main():\n    raise ValueError("bad input")\n',
    loop: 'def main():\n    while True:\n        pass\n',
    big: 'def main():\n    return {"r": "x" * 100000}\n',
    noMain: 'x = 1\n',
  },
  javascript: {
    echo: 'function main({x, s}) {\n  return { double: x * 2, s: s.toUpperCase(), list: [x, null, true] };\n}\n',
    raise: 'function main() {\n  throw new RangeError("bad input");\n}\n',
    loop: 'function main() {\n  for (;;) {}\n}\n',
    big: 'function main() {\n  return { r: "x".repeat(100000) };\n}\n',
    noMain: 'const x = 1;\n',
  },
} as const;

/**
 * The contract every CodeExecutor meets, for both languages: results, Dify-style errors
 * (`Code execution failed: …`), CODE_EXECUTION_TIMEOUT, stop, CODE_MAX_OUTPUT_BYTES, and an
 * executor that keeps working after each failure. `create` gets the settings above.
 */
export function describeCodeExecutorContract(name: string, create: (config: CodeConfig) => Promise<CodeExecutor>, destroy: (e: CodeExecutor) => Promise<void>, startTimeoutMs = 30_000): void {
  describe(`CodeExecutor contract: ${name}`, () => {
    let ex: CodeExecutor;
    beforeAll(async () => {
      ex = await create(contractCodeConfig());
    }, startTimeoutMs);
    afterAll(async () => {
      if (ex) await destroy(ex);
    });
    const req = (language: CodeRequest['language'], code: string, inputs: Record<string, unknown> = {}): CodeRequest => ({ language, code, inputs });

    describe.each(['python3', 'javascript'] as const)('%s', (language) => {
      const p = PROGRAMS[language];

      it('calls main with the inputs and resolves with its result', async () => {
        expect(await ex.run(req(language, p.echo, { x: 21, s: 'ab' }), never())).toEqual({ double: 42, s: 'AB', list: [21, null, true] });
      });

      it('rejects a program error as a CodeExecutionError naming the exception', async () => {
        const err = (await ex.run(req(language, p.raise), never()).catch((e: unknown) => e)) as Error;
        expect(err).toBeInstanceOf(Error);
        expect(err.name).toBe('CodeExecutionError');
        expect(err.message).toMatch(new RegExp(`^Code execution failed: [\\s\\S]*${language === 'python3' ? 'ValueError' : 'RangeError'}: bad input`));
      });

      it('rejects a program without main', async () => {
        await expect(ex.run(req(language, p.noMain), never())).rejects.toThrow(/^Code execution failed: [\s\S]*must define a function main/);
      });

      it('ends a runaway program at CODE_EXECUTION_TIMEOUT and runs the next one', async () => {
        await expect(ex.run(req(language, p.loop), never())).rejects.toThrow(/^Code execution timed out after 3s \(CODE_EXECUTION_TIMEOUT\)\.$/);
        expect(await ex.run(req(language, p.echo, { x: 1, s: 'c' }), never())).toMatchObject({ double: 2 });
      });

      it('ends the program when the run is stopped', async () => {
        const ctl = new AbortController();
        const running = ex.run(req(language, p.loop), ctl.signal);
        setTimeout(() => ctl.abort(), 200);
        await expect(running).rejects.toThrow(/^Code execution was stopped\.$/);
        const stopped = new AbortController();
        stopped.abort();
        await expect(ex.run(req(language, p.echo, { x: 1, s: 'c' }), stopped.signal)).rejects.toThrow(/^Code execution was stopped\.$/);
        expect(await ex.run(req(language, p.echo, { x: 1, s: 'c' }), never())).toMatchObject({ double: 2 });
      });

      it('rejects a result larger than CODE_MAX_OUTPUT_BYTES naming the setting', async () => {
        await expect(ex.run(req(language, p.big), never())).rejects.toThrow(/^Code output exceeds 4096 bytes \(CODE_MAX_OUTPUT_BYTES\)\.$/);
      });
    });
  });
}
