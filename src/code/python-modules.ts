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

/**
 * The top-level modules among `names` that Python code nodes cannot import, checked by running a
 * program with the same executor (and so the same Python, `CODE_PYTHON_COMMAND`) code nodes use.
 * Rejects when Python cannot run.
 */
export async function missingPythonModules(executor: CodeExecutor, names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const r = (await executor.run({ language: 'python3', code: FIND_MISSING, inputs: { names: [...names] } }, new AbortController().signal)) as { missing?: unknown };
  return Array.isArray(r?.missing) ? r.missing.filter((x): x is string => typeof x === 'string') : [];
}
