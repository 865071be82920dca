"""The child-process side of ``run-legacy`` and ``verify``.

Started as ``python -c <bootstrap> [--seed N] [--legacy] [--capture DIR] [--user-path DIR]...
-- SCRIPT ARGS...`` (see :func:`tapeshift.migrate.legacy.run_legacy.runner_command`). It runs the
script as ``__main__`` (as a TF1 script with ``--legacy``) and, with
``--capture``, writes what ``verify`` compares:

``DIR/values.npz``
    the script's final module-level numeric values as plain numpy arrays
    (keys ``v0``, ``v1``, ...);
``DIR/meta.json``
    ``names`` and ``dtypes`` of those arrays (a dtype label such as
    ``float32``, ``bfloat16`` or ``py:float`` for a Python float), ``skipped``
    (name -> why it has no value, e.g. a graph tensor), ``random_ops`` (op name
    -> number of times the script created it), ``random_modes`` (``graph``,
    ``function`` or ``eager`` -> how many of those ran that way), ``unseeded`` (random source ->
    first ``file:line`` the script drew from it unseeded, and how often; see
    :class:`RandomnessWatcher`), ``seed`` and the TensorFlow version.

With ``--seed N``, Python's ``random``, numpy's global generator and
TensorFlow's seeds are set to ``N`` before the script starts.

Module globals that are numbers, numpy arrays or scalars, eager tensors,
constant graph tensors (``tf.constant`` and what ``tf.get_static_value`` folds),
variables (eager ones directly; graph ones with the value they had when their
session was closed, or at the end of the script if it is still open), and
lists, tuples and string-keyed dicts of those are captured. Modules,
functions, classes, strings and graph tensors are not.

stdout and stderr are not touched: the parent reads them from the pipe.
"""

from __future__ import annotations

import builtins
import functools
import json
import os
import sys
import types
import weakref
from typing import Any

from tapeshift.migrate.engine.exit_codes import ExitCode
from tapeshift.migrate.legacy.run_legacy import LegacyImports, enable_legacy_behavior, execute_script

MAX_ELEMENTS = 10_000_000
_MAX_DEPTH = 3

# gen_* modules whose op wrappers draw random numbers.
_RANDOM_MODULES = (
    "tensorflow.python.ops.gen_random_ops",
    "tensorflow.python.ops.gen_stateful_random_ops",
    "tensorflow.python.ops.gen_stateless_random_ops",
    "tensorflow.python.ops.gen_stateless_random_ops_v2",
)
# wrappers in those modules that do not draw numbers
_NOT_DRAWS = {
    "random_gamma_grad", "rng_read_and_skip", "rng_skip", "stateless_random_get_alg",
    "stateless_random_get_key_counter", "stateless_random_get_key_counter_alg",
}
_RANDOM_TYPE_WORDS = ("Random", "TruncatedNormal", "Multinomial", "StatefulStandardNormal",
                      "StatefulUniform", "Shuffle")


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def is_random_op_type(op_type: str) -> bool:
    return any(word in op_type for word in _RANDOM_TYPE_WORDS) and "Grad" not in op_type


class RandomOpWatcher:
    """Counts the TF random ops a script creates (graph mode) or runs (eager mode).

    It wraps the generated op functions in ``gen_*random_ops``, which every
    public random API (``tf.random.*``, initialisers, dropout, Keras' seeded
    draws) calls through the module attribute.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        # how they ran: "graph" (a TF1 graph), "function" (a tf.function's graph), "eager"
        self.modes: dict[str, int] = {}
        self.installed = False

    def install(self) -> None:
        if self.installed:
            return
        import importlib

        self.installed = True
        for modname in _RANDOM_MODULES:
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                continue
            for attr, fn in list(vars(mod).items()):
                if (attr.startswith("_") or attr[:1].isupper() or attr.endswith("_eager_fallback")
                        or attr in _NOT_DRAWS or not isinstance(fn, types.FunctionType)):
                    continue
                setattr(mod, attr, self._wrap(fn, _camel(attr)))

    def _wrap(self, fn, op_name: str):
        counts, modes = self.counts, self.modes

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            counts[op_name] = counts.get(op_name, 0) + 1
            mode = _execution_mode()
            modes[mode] = modes.get(mode, 0) + 1
            return fn(*args, **kwargs)

        return wrapper


# Python's random and numpy's global generator: the module-level functions that
# draw (bound methods of the hidden generator), and those that (re)seed it.
_SEEDING = {"seed", "setstate", "set_state"}
_NOT_A_DRAW = {"getstate", "get_state"}


class RandomnessWatcher:
    """Seeds the script's random sources (``--seed N``) and records unseeded draws.

    With a seed, Python's ``random``, numpy's global generator and TensorFlow
    (the eager global seed, and the graph seed of the default graph and of
    every graph created later) start from ``N`` before the script runs, in the
    legacy and in the new run alike. Either way, the module-level functions of
    ``random`` and ``numpy.random`` are wrapped, and a draw the script's own
    code makes while the generator is unseeded (not seeded by ``--seed`` nor
    by the script since it was last reseeded from the OS) is recorded with its
    first ``file:line``; so is ``np.random.default_rng()`` without a seed. As a
    backstop, a change of numpy's global state while unseeded that no wrapped
    call made (library code holding the functions themselves) is recorded too.
    """

    def __init__(self, seed, scope) -> None:
        self.seed = seed
        self.scope = scope                     # LegacyImports, for its is_user_globals test
        self.unseeded: dict[str, dict] = {}    # source -> {"calls", "first", "call"}
        self.seeded = {"python": seed is not None, "numpy": seed is not None}
        self._np = None
        self._np_get_state = None
        self._np_mark = None

    # -- seeding -------------------------------------------------------------
    def seed_python_and_numpy(self) -> None:
        import random

        if self.seed is not None:
            random.seed(self.seed)
        try:
            import numpy as np
        except ImportError:
            return
        self._np = np
        self._np_get_state = np.random.get_state
        if self.seed is not None:
            np.random.seed(self.seed)
        self._np_mark = self._np_state()

    def seed_tensorflow(self) -> None:
        """Graph seed ``N`` for the default graph and every later one; eager seed ``N``."""
        if self.seed is None:
            return
        tf = sys.modules.get("tensorflow")
        if tf is None:
            return
        from tensorflow.python.framework import ops

        seed = self.seed
        original = ops.Graph.__init__
        if not getattr(original, "_tapeshift_seeded", False):
            @functools.wraps(original)
            def __init__(graph, *args, **kwargs):
                original(graph, *args, **kwargs)
                graph._seed = seed   # a FuncGraph then takes its outer graph's seed, as TF does

            __init__._tapeshift_seeded = True
            ops.Graph.__init__ = __init__
        tf.random.set_seed(seed)  # the eager seed, or the default graph's in graph mode
        tf.compat.v1.get_default_graph().seed = seed

    # -- watching ------------------------------------------------------------
    def install(self) -> None:
        import random

        self._wrap_module(random, random._inst, "python", "random")
        np = self._np
        if np is None:
            return
        self._wrap_module(np.random, np.random.mtrand._rand, "numpy", "np.random")
        default_rng = getattr(np.random, "default_rng", None)
        if default_rng is not None:
            watcher = self

            @functools.wraps(default_rng)
            def wrapped_default_rng(seed=None, *args, **kwargs):
                if seed is None and watcher._user_caller():
                    watcher._record("numpy default_rng", "np.random.default_rng()")
                return default_rng(seed, *args, **kwargs)

            np.random.default_rng = wrapped_default_rng

    def _user_caller(self) -> bool:
        try:
            return self.scope.is_user_globals(sys._getframe(2).f_globals)
        except ValueError:
            return False

    def _record(self, source: str, call: str) -> None:
        entry = self.unseeded.get(source)
        if entry is None:
            frame = sys._getframe(2)
            entry = self.unseeded[source] = {"calls": 0, "call": call,
                                             "first": f"{frame.f_code.co_filename}:{frame.f_lineno}"}
        entry["calls"] += 1

    def _wrap_module(self, module, generator, source: str, prefix: str) -> None:
        watcher = self
        for attr in dir(module):
            fn = getattr(module, attr, None)
            if attr.startswith("_") or attr in _NOT_A_DRAW or not callable(fn):
                continue
            if getattr(fn, "__self__", None) is not generator and attr not in _SEEDING:
                continue  # numpy's seed() is a module function, not a bound method
            if attr in _SEEDING:
                def wrapper(*args, _fn=fn, _attr=attr, **kwargs):
                    watcher._before_seed(source)
                    result = _fn(*args, **kwargs)
                    watcher._after_seed(source, _attr, args, kwargs)
                    return result
            else:
                def wrapper(*args, _fn=fn, _attr=attr, **kwargs):
                    if not watcher.seeded[source] and watcher._user_caller():
                        watcher._record(source, f"{prefix}.{_attr}")
                    return _fn(*args, **kwargs)
            functools.update_wrapper(wrapper, fn)
            setattr(module, attr, wrapper)

    def _before_seed(self, source: str) -> None:
        if source == "numpy":
            self._numpy_backstop()

    def _after_seed(self, source: str, attr: str, args, kwargs) -> None:
        if attr == "seed":
            given = args[0] if args else kwargs.get("seed", kwargs.get("a"))
            self.seeded[source] = given is not None
        else:  # setstate / set_state: a state the script chose
            self.seeded[source] = True
        if source == "numpy" and self._np is not None:
            self._np_mark = self._np_state()

    def _np_state(self):
        state = self._np_get_state()
        return (state[0], state[1].tobytes(), *state[2:])

    def _numpy_backstop(self) -> None:
        """Record a change of numpy's global state while unseeded that no wrapped call explains."""
        if self._np is None:
            return
        state = self._np_state()
        if (self._np_mark is not None and state != self._np_mark and not self.seeded["numpy"]
                and "numpy" not in self.unseeded):
            self.unseeded["numpy"] = {"calls": 1, "call": "numpy's global generator, by library code",
                                      "first": ""}
        self._np_mark = state

    def finish(self) -> dict:
        """``{source: {"calls", "first", "call"}}`` of the unseeded draws seen."""
        if self._np is not None and self._np_mark is not None:
            self._numpy_backstop()
        return self.unseeded


def _execution_mode() -> str:
    """``eager``, ``function`` (building a tf.function) or ``graph`` (a TF1 graph)."""
    try:
        from tensorflow.python.eager import context
        from tensorflow.python.framework import ops

        if context.executing_eagerly():
            return "eager"
        graph = ops.get_default_graph()
        return "function" if getattr(graph, "outer_graph", None) is not None or \
            type(graph).__name__ == "FuncGraph" else "graph"
    except Exception:
        return "unknown"


class SessionTracker:
    """Remembers the values graph variables had when their session closed.

    A legacy script's ``tf.Variable`` globals have no value outside a session;
    ``verify`` compares them with the value they had when the script's
    session was closed (``with tf.Session()`` exit or ``sess.close()``) or, for
    a session still open when the script ends, their final value.
    """

    def __init__(self) -> None:
        self.values: dict[int, tuple[Any, Any]] = {}  # id(variable) -> (variable, ndarray)
        self.sessions: "weakref.WeakSet" = weakref.WeakSet()
        self.graphs: "weakref.WeakSet" = weakref.WeakSet()
        self.active = False

    def install(self) -> None:
        if self.active:
            return
        from tensorflow.python.client import session as session_lib

        base = session_lib.BaseSession
        original_init, original_close = base.__init__, base.close
        tracker = self

        @functools.wraps(original_init)
        def __init__(sess, *args, **kwargs):
            original_init(sess, *args, **kwargs)
            try:
                tracker.sessions.add(sess)
                tracker.graphs.add(sess.graph)
            except TypeError:
                pass

        @functools.wraps(original_close)
        def close(sess):
            if tracker.active and not getattr(sess, "_closed", True):
                tracker.snapshot(sess)
            return original_close(sess)

        base.__init__ = __init__
        base.close = close
        self.active = True

    def snapshot(self, sess) -> None:
        import numpy as np

        try:
            graph = sess.graph
            seen, variables = set(), []
            for key in ("variables", "local_variables"):
                for v in graph.get_collection(key):
                    if id(v) not in seen:
                        seen.add(id(v))
                        variables.append(v)
        except Exception:
            return
        if not variables:
            return
        try:
            fetched = list(zip(variables, sess.run(variables), strict=True))
        except Exception:  # some uninitialised: read them one by one
            fetched = []
            for v in variables:
                try:
                    fetched.append((v, sess.run(v)))
                except Exception:
                    pass
        for v, value in fetched:
            self.values[id(v)] = (v, np.asarray(value))

    def finish(self) -> None:
        """Snapshot sessions still open at the end of the script; stop tracking."""
        if not self.active:
            return
        for sess in list(self.sessions):
            if not getattr(sess, "_closed", True):
                self.snapshot(sess)
        self.active = False

    def value_of(self, variable):
        entry = self.values.get(id(variable))
        if entry is not None and entry[0] is variable:
            return entry[1]
        return None


class _TensorFlowHooks:
    """Installs the random-op watcher and session tracker once TensorFlow is loaded.

    In ``--legacy`` mode TensorFlow is imported before the script starts; for
    a TF2 script the hooks go in when user code first imports something and
    TensorFlow is then fully loaded (scripts that never import TensorFlow do
    not pay for it).
    """

    def __init__(self, watcher: RandomOpWatcher, sessions: SessionTracker, roots) -> None:
        self.watcher, self.sessions = watcher, sessions
        self.scope = LegacyImports(roots)  # used only for its is_user_file test
        self._original = None

    def try_install(self) -> bool:
        tf = sys.modules.get("tensorflow")
        spec = getattr(tf, "__spec__", None)
        if tf is None or getattr(spec, "_initializing", False):
            return False
        try:
            self.watcher.install()
            self.sessions.install()
        except Exception as exc:  # never break the user's script over this
            print(f"tapeshift: could not watch TensorFlow ops: {exc}", file=sys.stderr)
        return True

    def install_lazily(self) -> None:
        if self.try_install():
            return
        self._original = builtins.__import__
        builtins.__import__ = self

    def __call__(self, name, globals=None, locals=None, fromlist=(), level=0):
        original = self._original
        module = original(name, globals, locals, fromlist, level)
        if (self._original is not None and "tensorflow" in sys.modules
                and self.scope.is_user_globals(globals) and self.try_install()):
            if builtins.__import__ is self:
                builtins.__import__ = original
            self._original = None
        return module


# -- converting globals ------------------------------------------------------

class _Skip(Exception):
    """This value has no comparable number; the message says why."""


class _Ignore(Exception):
    """Not a numeric value at all (module, function, string...): say nothing."""


_PY_LABELS = {bool: "py:bool", int: "py:int", float: "py:float", complex: "py:complex"}


def _plain(arr):
    """A numpy array in a dtype ``np.load`` reads without pickle, and its dtype label."""
    import numpy as np

    label = arr.dtype.name
    if arr.dtype.kind in "biufc":
        return np.array(arr, copy=True), label
    if arr.dtype.kind == "V" or label.startswith(("bfloat16", "float8", "float4", "int4", "uint4")):
        try:  # ml_dtypes (bfloat16, float8...) -> float32
            return np.asarray(arr, dtype=np.float32), label
        except (TypeError, ValueError):
            pass
    raise _Skip(f"non-numeric array (dtype {label})")


def _convert(value, tf, sessions: SessionTracker):
    """``(ndarray, dtype label)`` for a numeric value; raise _Skip/_Ignore otherwise."""
    import numpy as np

    kind = type(value)
    if kind in _PY_LABELS:
        arr = np.asarray(value)
        if arr.dtype.kind == "O":
            raise _Skip("integer too large for int64")
        return arr, _PY_LABELS[kind]
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.size > MAX_ELEMENTS:
            raise _Skip(f"too large ({arr.size} elements)")
        return _plain(arr)
    if tf is not None:
        if isinstance(value, tf.Variable):
            try:
                return _plain(np.asarray(value.numpy()))
            except Exception:
                pass
            arr = sessions.value_of(value)
            if arr is None:
                raise _Skip("graph variable never read from a session")
            return _plain(arr)
        if isinstance(value, tf.Tensor):
            numpy = getattr(value, "numpy", None)
            if numpy is not None:
                try:
                    return _plain(np.asarray(numpy()))
                except _Skip:
                    raise
                except Exception:
                    pass
            # a graph tensor: only a constant one (tf.constant, a shape...) has a value
            try:
                static = tf.get_static_value(value)
            except Exception:
                static = None
            if static is None:
                raise _Skip("graph tensor (no value outside a session)")
            return _plain(np.asarray(static))
    raise _Ignore()


def _common_label(labels: list[str], stacked) -> str:
    if len(set(labels)) == 1:
        return labels[0]
    if all(lb.startswith("py:") for lb in labels):
        return {"b": "py:bool", "i": "py:int", "u": "py:int", "c": "py:complex"}.get(
            stacked.dtype.kind, "py:float")
    return stacked.dtype.name


def _collect(name: str, value, tf, sessions, out: dict, skipped: dict, depth: int = 0) -> None:
    """Add ``name`` (or its elements ``name[i]`` / ``name['k']``) to ``out``."""
    import numpy as np

    if isinstance(value, (list, tuple)) and depth < _MAX_DEPTH:
        if not value:
            return
        parts, labels, ok = [], [], True
        for item in value:
            try:
                arr, label = _convert(item, tf, sessions)
            except (_Skip, _Ignore):
                ok = False
                break
            parts.append(arr)
            labels.append(label)
        if ok and len({a.shape for a in parts}) == 1:
            try:
                stacked = np.stack(parts)
            except (TypeError, ValueError):
                stacked = None
            if stacked is not None and stacked.dtype.kind in "biufc" and stacked.size <= MAX_ELEMENTS:
                out[name] = (stacked, _common_label(labels, stacked))
                return
        for i, item in enumerate(value):
            _collect(f"{name}[{i}]", item, tf, sessions, out, skipped, depth + 1)
        return
    if isinstance(value, dict) and depth < _MAX_DEPTH:
        for key, item in value.items():
            if isinstance(key, (str, int)):
                _collect(f"{name}[{key!r}]", item, tf, sessions, out, skipped, depth + 1)
        return
    try:
        out[name] = _convert(value, tf, sessions)
    except _Skip as reason:
        skipped[name] = str(reason)
    except _Ignore:
        pass


def capture_globals(globs: dict, sessions: SessionTracker | None = None):
    """``({name: (ndarray, dtype label)}, {name: reason skipped})`` for a script's globals."""
    tf = sys.modules.get("tensorflow")
    if tf is not None and not hasattr(tf, "Tensor"):
        tf = None
    sessions = sessions or SessionTracker()
    out: dict = {}
    skipped: dict = {}
    for name, value in list(globs.items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
            continue
        try:
            _collect(name, value, tf, sessions, out, skipped)
        except Exception as exc:  # a strange object must not lose the whole capture
            skipped[name] = f"could not read ({type(exc).__name__}: {exc})"
    return out, skipped


def graph_random_ops() -> dict[str, int]:
    """Random op types in the default graph (legacy mode), as a backstop to the watcher."""
    tf = sys.modules.get("tensorflow")
    counts: dict[str, int] = {}
    try:
        graph = tf.compat.v1.get_default_graph()
        for op in graph.get_operations():
            if is_random_op_type(op.type):
                counts[op.type] = counts.get(op.type, 0) + 1
    except Exception:
        pass
    return counts


def write_capture(directory: str, values: dict, skipped: dict, random_ops: dict, legacy: bool,
                  unseeded: dict | None = None, seed: int | None = None,
                  random_modes: dict | None = None) -> None:
    import numpy as np

    os.makedirs(directory, exist_ok=True)
    names = list(values)
    arrays = {f"v{i}": values[n][0] for i, n in enumerate(names)}
    np.savez(os.path.join(directory, "values.npz"), **arrays)
    tf = sys.modules.get("tensorflow")
    meta = {
        "mode": "legacy" if legacy else "tf2",
        "names": names,
        "dtypes": [values[n][1] for n in names],
        "skipped": skipped,
        "random_ops": random_ops,
        "unseeded": unseeded or {},
        "random_modes": random_modes or {},
        "seed": seed,
        "tensorflow": getattr(tf, "__version__", None),
    }
    with open(os.path.join(directory, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f)


# -- entry point ------------------------------------------------------------

def _parse(argv: list[str]):
    legacy, capture, user_paths, seed = False, None, [], None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg == "--legacy":
            legacy = True
        elif arg == "--capture":
            i += 1
            capture = argv[i]
        elif arg == "--user-path":
            i += 1
            user_paths.append(argv[i])
        elif arg == "--seed":
            i += 1
            seed = int(argv[i])
        else:
            break
        i += 1
    if i >= len(argv):
        raise SystemExit("tapeshift runner: no script given")
    return legacy, capture, user_paths, seed, argv[i], argv[i + 1:]


def _tensorflow_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def main(argv: list[str]) -> int:
    legacy, capture, user_paths, seed, script, script_args = _parse(argv)
    script_dir = os.path.dirname(os.path.realpath(script))
    roots = [script_dir, *user_paths]
    watcher, sessions = RandomOpWatcher(), SessionTracker()
    hooks = _TensorFlowHooks(watcher, sessions, roots)
    randomness = RandomnessWatcher(seed, hooks.scope)
    if legacy:
        try:
            import tensorflow  # noqa: F401 - must be loaded before its behaviour is changed
        except ImportError as exc:
            print(f"tapeshift run-legacy: TensorFlow is not installed ({exc}); "
                  "install it with: pip install 'tapeshift[tf]'", file=sys.stderr)
            return ExitCode.ERROR
        enable_legacy_behavior()
        if capture is not None:
            hooks.try_install()
        randomness.seed_tensorflow()
        LegacyImports(roots).install()
    elif seed is not None and _tensorflow_installed():
        # Seeded: TensorFlow is loaded first, as in the legacy run, so that what its
        # import draws from Python's random (rich, under Keras) happens before the seed.
        import tensorflow  # noqa: F401
        if capture is not None:
            hooks.try_install()
        randomness.seed_tensorflow()
    elif capture is not None:
        hooks.install_lazily()
    if capture is not None or seed is not None:
        randomness.seed_python_and_numpy()
    if capture is not None:
        randomness.install()

    code, globs = execute_script(script, [script, *script_args])

    if capture is not None and code == 0:
        sessions.finish()
        values, skipped = capture_globals(globs, sessions)
        random_ops = dict(watcher.counts)
        random_modes = dict(watcher.modes)
        if legacy:
            for op_type, n in graph_random_ops().items():
                if op_type not in random_ops:
                    random_ops[op_type] = n
                    random_modes["graph"] = random_modes.get("graph", 0) + n
        write_capture(capture, values, skipped, random_ops, legacy,
                      unseeded=randomness.finish(), seed=seed, random_modes=random_modes)
    try:
        sys.stdout.flush()
    except Exception:
        pass
    return code
