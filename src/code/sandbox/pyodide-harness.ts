import { PYTHON_RUN_MAIN } from '../runners.js';

/**
 * Modules a python3 code node cannot import in the sandbox: Pyodide's bridges to the JavaScript
 * realm (`js`, `pyodide`, …), the ones that reach below Python (`ctypes`, CPython's test modules)
 * and `gc` (which finds any object, including the interpreter's own state). docs/compatibility.md
 * lists them.
 */
export const BLOCKED_PYTHON_MODULES = [
  'js',
  'pyodide',
  'pyodide_js',
  '_pyodide',
  '_pyodide_core',
  'micropip',
  'ctypes',
  '_ctypes',
  'gc',
  '_testcapi',
  '_testinternalcapi',
  '_testlimitedcapi',
  '_testbuffer',
  '_testclinic',
  '_testclinic_limited',
  '_testmultiphase',
  '_xxtestfuzz',
  '_remote_debugging',
  '_lsprof',
] as const;

/**
 * Python run once in each interpreter after Pyodide has loaded (and the packages of
 * CODE_PYTHON_PACKAGES_DIR are unpacked). It defines `_dovetail_run` (shared with the process
 * executor), hardens the interpreter and returns `run` and `reset` (see below):
 *
 * - hardening: an import blocker for BLOCKED_PYTHON_MODULES, the blocked modules dropped from
 *   `sys.modules` and from every module that imported them, Pyodide's `js` import hook removed,
 *   every other builtin module imported now and `_imp.create_builtin` / `create_dynamic` replaced
 *   by a refusal that keeps no reference to them
 *   (so a blocked builtin cannot be created even after the blocker is removed), hooks that would
 *   outlive a run (`sys.addaudithook`, `sys.monitoring`, `codecs.register`) removed;
 * - `run(code, inputs_json, max_bytes)` calls `main` in a fresh namespace and returns the JSON text
 *   (or an output-limit marker);
 * - `reset()` (called after sys.settrace/setprofile(None) from JavaScript, so no hook of the run
 *   sees its frame) puts back what a run may have changed: modules added or removed, every module's
 *   globals, one level of the dicts, lists and sets they hold, class attributes, function code,
 *   defaults and attributes, `os.environ`, trace/profile hooks, the SIGINT handler, the recursion
 *   limit, `random`'s seed, and the virtual filesystem (new files deleted; a changed or deleted
 *   file returns 0, and the worker is replaced). `reset(dict_ids, class_ids, function_ids)`: the
 *   worker watches the kept dicts, classes and functions with CPython's watchers
 *   (pyodide-worker.ts) and passes the ids of those they saw change (comma-separated); only those
 *   are compared and put back, plus what no watcher covers (lists, sets, closure cells, the class
 *   of modules and kept instances, the __dict__ of kept instances), a few hundred objects instead of ~60,000; if one of the latter
 *   changed, everything is compared. Returns 0 (cannot be restored: the worker is replaced, as
 *   for a module or instance whose class a run replaced), 1 (clean) or 2 (something was put back:
 *   the worker resets again with what changed since).
 *
 * - `intact()` (called before each run): True when builtins (`exec`, `__import__`, …) are the same
 *   objects as after set-up, no trace or profile hook is set and what no watcher sees is unchanged.
 * - Pyodide's event loop cannot schedule (its `scheduleCallback` refuses): a callback would run from
 *   a JavaScript timer between runs, after the reset. Every signal's handler is put back too.
 *
 * Returns `(run, reset, settrace, setprofile, dict_ids, class_ids, intact)`: dict_ids and
 * class_ids are the addresses (`id`) of the dicts and classes the worker watches.
 */
export const PYODIDE_HARNESS = `${PYTHON_RUN_MAIN}
def _dovetail_setup(blocked, max_bytes_marker):
    import sys, os, builtins, importlib, importlib.machinery, signal, random, _random, functools, json, _imp, codecs, _codecs
    import gc as _gc
    BLOCKED = frozenset(blocked)
    _EMPTY = object()

    def _filled(cell):
        try:
            cell.cell_contents
            return True
        except ValueError:
            return False

    def is_blocked(name):
        return name.partition(".")[0] in BLOCKED

    class _DovetailImportBlocker:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if is_blocked(name):
                raise ModuleNotFoundError("No module named %r" % name, name=name)
            return None

    # Every builtin module that code may import is imported now: once create_builtin is gone,
    # no other can be made (the blocked ones in particular).
    for name in sys.builtin_module_names:
        if not is_blocked(name) and name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:
                pass
    # asyncio's event loop here is Pyodide's WebLoop, which runs every callback (call_soon,
    # call_later, call_at, tasks) from a JavaScript timer: one would fire between runs, outside
    # any run's limits and after the reset. Its scheduler refuses instead.
    try:
        webloop = importlib.import_module("pyodide.webloop")
    except Exception:
        webloop = None
    if webloop is not None:
        def _no_schedule(*args, **kwargs):
            raise RuntimeError("event loop callbacks (call_soon, call_later, call_at, tasks) are not available in the code sandbox")
        webloop.__dict__["scheduleCallback"] = _no_schedule
    sys.meta_path[:] = [f for f in sys.meta_path if "pyodide" not in getattr(f, "__module__", "") and "Js" not in getattr(f, "__name__", type(f).__name__)]
    sys.meta_path.insert(0, _DovetailImportBlocker)
    blocked_mods = {id(m) for n, m in sys.modules.items() if is_blocked(n)}
    for n in [n for n in sys.modules if is_blocked(n)]:
        del sys.modules[n]
    for m in list(sys.modules.values()):
        d = getattr(m, "__dict__", None)
        if type(d) is dict:
            for k in [k for k, v in d.items() if id(v) in blocked_mods]:
                del d[k]
    def _no_create(spec, *args):
        raise ModuleNotFoundError("No module named %r" % getattr(spec, "name", spec), name=getattr(spec, "name", None))
    for name in ("create_builtin", "create_dynamic"):
        _imp.__dict__[name] = _no_create
    for name in ("addaudithook", "monitoring", "remote_exec", "_current_frames", "_current_exceptions"):
        sys.__dict__.pop(name, None)
    def _no_register(search_function):
        raise RuntimeError("codecs.register is not available in the code sandbox")
    codecs.register = _codecs.register = _no_register
    os.environ.clear()
    os.environ.update({"HOME": "/home/pyodide", "LANG": "C.UTF-8", "PATH": "/", "USER": "web_user"})

    settrace, setprofile, setrecursionlimit = sys.settrace, sys.setprofile, sys.setrecursionlimit
    recursion_limit = sys.getrecursionlimit()
    sigint, int_handler = signal.SIGINT, signal.default_int_handler
    set_signal, get_signal = signal.signal, signal.getsignal
    # Every signal's handler as it is now (SIGINT's is put back to int_handler, for the interrupt).
    handlers = [(s, h) for s in signal.valid_signals() if s != sigint for h in (get_signal(s),) if h is not None]
    gettrace, getprofile = sys.gettrace, sys.getprofile
    environ, env_copy = os.environ, dict(os.environ)
    # The C part of random.seed(): Random.seed() also assigns gauss_next, a change the dict watcher
    # would report after every run (a gauss_next the run left is restored with the other state).
    rng = random._inst
    rng_seed = functools.partial(_random.Random.seed, rng, None)
    collect = _gc.collect
    del _gc
    mod_type, fn_type = type(sys), type(is_blocked)
    IMMUTABLE = 1 << 8

    saved_modules = dict(sys.modules)
    dicts, classes, functions, instances, instance_dicts, seen = [], [], [], [], [], set()

    # Compared by identity only (no hash, no __eq__), so nothing a run left behind runs here.
    def keep_dict(d):
        if id(d) not in seen:
            seen.add(id(d))
            dicts.append((d, dict(d), list(d.items())))

    def keep_value(v):
        t = type(v)
        if t is dict:
            keep_dict(v)
        elif t is list or t is set:
            if id(v) not in seen:
                seen.add(id(v))
                dicts.append((v, t(v), list(v) if t is list else {id(x) for x in v}))
        elif t is fn_type:
            if id(v) not in seen:
                seen.add(id(v))
                cells = tuple(c.cell_contents if _filled(c) else _EMPTY for c in (v.__closure__ or ()))
                functions.append((v, v.__code__, v.__defaults__, v.__kwdefaults__, cells))
                keep_dict(v.__dict__)
        elif isinstance(v, type):
            if not (v.__flags__ & IMMUTABLE) and id(v) not in seen:
                seen.add(id(v))
                classes.append((v, dict(v.__dict__)))
                for a in list(v.__dict__.values()):
                    f = getattr(a, "__func__", a)
                    if type(f) is fn_type:
                        keep_value(f)
        elif t is not mod_type:
            d = getattr(v, "__dict__", None)
            if type(d) is dict:
                if id(d) not in seen:
                    instances.append(v)
                    instance_dicts.append(d)
                keep_dict(d)

    for m in saved_modules.values():
        d = getattr(m, "__dict__", None)
        if type(d) is dict:
            keep_dict(d)
            for v in list(d.values()):
                keep_value(v)

    def files():
        out = {}
        todo = ["/"]
        while todo:
            top = todo.pop()
            for e in os.scandir(top):
                if e.path in ("/dev", "/proc"):
                    continue
                st = e.stat(follow_symlinks=False)
                out[e.path] = (st.st_mode, st.st_size, st.st_mtime_ns)
                if e.is_dir(follow_symlinks=False):
                    todo.append(e.path)
        return out

    saved_files = files()

    def restore(dicts=dicts, classes=classes, functions=functions):
        changed = False
        for d, copy, items in dicts:
            t = type(d)
            if t is dict:
                if len(d) != len(items) or any(a[0] is not b[0] or a[1] is not b[1] for a, b in zip(d.items(), items)):
                    d.clear()
                    d.update(copy)
                    changed = True
            elif len(d) != len(copy) or (t is list and any(a is not b for a, b in zip(d, items))) or (t is set and any(id(x) not in items for x in d)):
                d.clear()
                d.update(copy) if t is set else d.extend(copy)
                changed = True
        for cls, copy in classes:
            cur = cls.__dict__
            for k in [k for k in cur if k not in copy]:
                delattr(cls, k)
                changed = True
            for k, v in copy.items():
                if cur.get(k, _EMPTY) is not v:
                    setattr(cls, k, v)
                    changed = True
        for f, code, defaults, kwdefaults, cells in functions:
            if f.__code__ is not code or f.__defaults__ is not defaults or f.__kwdefaults__ is not kwdefaults:
                f.__code__, f.__defaults__, f.__kwdefaults__ = code, defaults, kwdefaults
                changed = True
            for c, v in zip(f.__closure__ or (), cells):
                if v is _EMPTY or not _filled(c) or c.cell_contents is not v:
                    if v is not _EMPTY:
                        c.cell_contents = v
                    changed = True
        return changed

    # The common case, nothing changed, is checked at C speed: flat lists compared by identity.
    from itertools import chain
    from operator import attrgetter, is_, methodcaller
    flat = chain.from_iterable
    D = [d for d, _, _ in dicts if type(d) is dict]
    L = [d for d, _, _ in dicts if type(d) is not dict]
    C = [c.__dict__ for c, _ in classes]
    F = [f for f, *_ in functions]
    cells = [c for f, *_ in functions for c in (f.__closure__ or ()) if _filled(c)]
    values, get_code, get_defaults, get_kwdefaults, get_contents = methodcaller("values"), attrgetter("__code__"), attrgetter("__defaults__"), attrgetter("__kwdefaults__"), attrgetter("cell_contents")
    get_dict = attrgetter("__dict__")

    # The modules and the instances whose __dict__ is kept: a run could assign their __class__.
    O = []

    def picture():
        return (list(map(len, D)), list(flat(D)), list(flat(map(values, D))), list(map(len, L)), list(flat(L)), list(map(len, C)), list(flat(C)), list(flat(map(values, C))),
                list(map(get_code, F)), list(map(get_defaults, F)), list(map(get_kwdefaults, F)), list(map(get_contents, cells)), list(map(type, O)))

    # What the interpreter's watchers do not see (the worker watches every dict of D, every class
    # of C and every function): lists and sets, closure cells and the objects' classes.
    def small_picture():
        return (list(map(len, L)), list(chain(flat(L), map(get_contents, cells), map(type, O))))

    def unchanged():
        try:
            now = picture()
        except Exception:
            return False
        return len(now) == len(before) and all(a == b if i in (0, 3, 5) else len(a) == len(b) and all(map(is_, a, b)) for i, (a, b) in enumerate(zip(now, before)))

    def small_unchanged():
        try:
            lens, objs = small_picture()
        except Exception:
            return False
        return lens == small_before[0] and len(objs) == len(small_before[1]) and all(map(is_, objs, small_before[1]))

    def ids(text):
        return [int(i) for i in text.split(",") if i]

    # 0: cannot be restored (the worker is replaced); 1: clean; 2: something was put back (the
    # worker calls reset again with what changed since, until a pass finds nothing to do).
    def reset(dict_ids, class_ids, function_ids):
        settrace(None)
        setprofile(None)
        setrecursionlimit(recursion_limit)
        set_signal(sigint, int_handler)
        for s, h in handlers:
            if get_signal(s) is not h:
                try:
                    set_signal(s, h)
                except Exception:
                    return 0
        collect(0)
        status = 1
        if not small_unchanged():
            # What no watcher sees changed: the full comparison.
            if not unchanged():
                # A finalizer may change state again while the restore drops the run's objects: repeat.
                for _ in range(3):
                    if not restore():
                        break
                else:
                    return 0
                collect(0)
                if not unchanged():
                    return 0
        elif dict_ids or class_ids or function_ids:
            # Only what the watchers saw change (a watcher does not fire for what it did not see change).
            if restore([by_dict[i] for i in ids(dict_ids) if i in by_dict], [by_class[i] for i in ids(class_ids) if i in by_class],
                       [by_function[i] for i in ids(function_ids) if i in by_function]):
                status = 2
                collect(0)
        # A kept instance given a new __dict__ (obj.__dict__ = {...}): its kept dict is no longer
        # the one it reads, so nothing above would see the change; the worker is replaced.
        try:
            if not all(map(is_, map(get_dict, instances), instance_dicts)):
                return 0
        except Exception:
            return 0
        if dict(environ) != env_copy:
            environ.clear()
            environ.update(env_copy)
        rng_seed()
        now = files()
        for path in sorted((p for p in now if p not in saved_files), reverse=True):
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        for path, (mode, size, mtime) in saved_files.items():
            cur = now.get(path)
            if cur is None or cur[0] != mode:
                return 0
            if (mode & 0o170000) != 0o040000 and cur != (mode, size, mtime):
                return 0
        return status

    # Checked before each run (the worker also asks its watchers): nothing changed the interpreter
    # since the reset after the last run. builtins (exec, __import__, …) by identity, no trace or
    # profile hook, and what no watcher sees.
    builtins_dict = builtins.__dict__

    def intact():
        try:
            if gettrace() is not None or getprofile() is not None:
                return False
            if len(builtins_dict) != len(builtins_items) or not all(a[0] is b[0] and a[1] is b[1] for a, b in zip(builtins_dict.items(), builtins_items)):
                return False
            return small_unchanged()
        except BaseException:
            return False

    dumps, encode = json.dumps, str.encode
    run_main = _dovetail_run

    def run(code, inputs_json, max_bytes):
        text = run_main(code, json.loads(inputs_json))
        if type(text) is not str or len(encode(text)) > max_bytes:
            return max_bytes_marker
        return text

    # What a run can reach through its frames: this module's globals and run's closure cells.
    keep_dict(globals())
    keep_value(run_main)
    keep_value(run)
    D[:] = [d for d, _, _ in dicts if type(d) is dict]
    L[:] = [d for d, _, _ in dicts if type(d) is not dict]
    C[:] = [c.__dict__ for c, _ in classes]
    F[:] = [f for f, *_ in functions]
    cells[:] = [c for f, *_ in functions for c in (f.__closure__ or ()) if _filled(c)]
    O[:] = [*saved_modules.values(), *instances]
    # The snapshot entries by the address of what they keep (what the watchers report).
    by_dict, by_class, by_function = ({id(e[0]): e for e in kept} for kept in (dicts, classes, functions))
    before = picture()
    small_before = small_picture()
    builtins_items = list(builtins_dict.items())
    # For the worker's watchers: the addresses (id) of the dicts and classes to watch; the harness
    # keeps them alive, so the addresses stay valid.
    return run, reset, settrace, setprofile, [id(d) for d in D], [id(c) for c, _ in classes], intact
`;
