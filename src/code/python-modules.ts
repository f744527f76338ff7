import type { CodeExecutor } from '../engine/types.js';

/** Asks the code node Python which of `names` it cannot import (without importing them). */
const FIND_MISSING = `
import importlib.util
def main(names):
    missing = []
    for n in names:
        try:
            if importlib.util.find_spec(n) is None:
                missing.append(n)
        except Exception:
            missing.append(n)
    return {"missing": missing}
`;

/** For `python3 -I` child processes (`CODE_EXECUTION_MODE=process`). */
export function processModuleAdvice(module: string): string {
  return `python module ${module} is not installed: install it, or set CODE_PYTHON_COMMAND to a Python that has it`;
}

/** For the Pyodide sandbox. */
export function sandboxModuleAdvice(module: string): string {
  return `python module ${module} is not available in the code sandbox: put its pure-Python wheel in CODE_PYTHON_PACKAGES_DIR (native modules need CODE_EXECUTION_MODE=process)`;
}

/**
 * The top-level modules among `names` that Python code nodes cannot import: the executor's own
 * answer when it has one (the sandbox reads its module index), otherwise by running a program with
 * the same executor (and so the same Python, `CODE_PYTHON_COMMAND`) code nodes use. Rejects when
 * Python cannot run.
 */
export async function missingPythonModules(executor: CodeExecutor, names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  if (executor.missingModules) return executor.missingModules(names);
  const r = (await executor.run({ language: 'python3', code: FIND_MISSING, inputs: { names: [...names] } }, new AbortController().signal)) as { missing?: unknown };
  return Array.isArray(r?.missing) ? r.missing.filter((x): x is string => typeof x === 'string') : [];
}
