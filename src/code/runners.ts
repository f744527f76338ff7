/**
 * The programs a code node's child process runs. Both read `{"code", "inputs"}` as JSON on stdin,
 * run the node's `main` with the inputs and write `{"result": …}` or `{"error": …}` as JSON on the
 * real stdout; anything the node's code prints goes to stderr instead.
 */

/** `python3 -I -c PYTHON_RUNNER`: calls `main(**inputs)`. */
export const PYTHON_RUNNER = `
import json, sys, traceback
out = sys.stdout
sys.stdout = sys.stderr
try:
    req = json.load(sys.stdin)
    scope = {"__name__": "__dovetail_code__"}
    exec(compile(req["code"], "<code>", "exec"), scope)
    main = scope.get("main")
    if not callable(main):
        raise Exception("the code must define a function main")
    res = {"result": main(**req["inputs"])}
except BaseException as e:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == "<code>"]
    lines = traceback.format_list(frames[-1:]) + traceback.format_exception_only(type(e), e)
    res = {"error": "".join(lines).strip()}
try:
    text = json.dumps(res, allow_nan=False, ensure_ascii=False)
except Exception as e:
    text = json.dumps({"error": "the result of main is not JSON: " + str(e)})
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
