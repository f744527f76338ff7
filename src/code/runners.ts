/**
 * The programs a code node's child process runs. Both read `{"code", "inputs"}` as JSON on stdin,
 * run the node's `main` with the inputs and write `{"result": …}` or `{"error": …}` as JSON on the
 * real stdout; anything the node's code prints goes to stderr instead.
 */

/**
 * `_dovetail_run(code, inputs)`: runs a python3 code node's `main(**inputs)` in a fresh namespace
 * and returns `{"result": …}` or `{"error": …}` as JSON text. Shared by the child process
 * (PYTHON_RUNNER) and the Pyodide sandbox (sandbox/pyodide-harness.ts), so both report the same
 * results and the same error texts.
 */
export const PYTHON_RUN_MAIN = `
def _dovetail_run(code, inputs, dumps=__import__("json").dumps, traceback=__import__("traceback")):
    try:
        scope = {"__name__": "__dovetail_code__"}
        exec(compile(code, "<code>", "exec"), scope)
        main = scope.get("main")
        if not callable(main):
            raise Exception("the code must define a function main")
        res = {"result": main(**inputs)}
    except BaseException as e:
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == "<code>"]
        lines = traceback.format_list(frames[-1:]) + traceback.format_exception_only(type(e), e)
        res = {"error": "".join(lines).strip()}
    try:
        return dumps(res, allow_nan=False, ensure_ascii=False)
    except Exception as e:
        return dumps({"error": "the result of main is not JSON: " + str(e)})
`;

/** `python3 -I -c PYTHON_RUNNER`: reads the request on stdin, calls `main(**inputs)`. */
export const PYTHON_RUNNER = `${PYTHON_RUN_MAIN}
import json, sys
out = sys.stdout
sys.stdout = sys.stderr
try:
    req = json.load(sys.stdin)
    text = _dovetail_run(req["code"], req["inputs"])
except BaseException as e:
    text = json.dumps({"error": type(e).__name__ + ": " + str(e)})
out.write(text)
out.flush()
`;

/** `node -e JS_RUNNER`: evaluates the code with node:vm and calls `main(inputs)` (awaited). */
export const JS_RUNNER = `
const vm = require('node:vm');
const write = (o) => process.stdout.write(JSON.stringify(o));
let raw = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (c) => (raw += c));
process.stdin.on('end', async () => {
  const log = (...a) => process.stderr.write(a.map(String).join(' ') + '\\n');
  try {
    const req = JSON.parse(raw);
    const sandbox = { console: { log, info: log, warn: log, error: log, debug: log } };
    vm.createContext(sandbox);
    vm.runInContext(req.code + '\\n;globalThis.__main = typeof main === "function" ? main : undefined;', sandbox, { filename: 'code.js' });
    if (typeof sandbox.__main !== 'function') throw new Error('the code must define a function main');
    const result = await sandbox.__main(req.inputs);
    const text = JSON.stringify({ result: result === undefined ? null : result });
    process.stdout.write(text);
  } catch (e) {
    const lines = e && e.stack ? String(e.stack).split('\\n').filter((l) => !l.includes('[eval]') && !l.includes('node:')) : [String(e)];
    write({ error: lines.slice(0, 3).join('\\n') });
  }
});
`;
