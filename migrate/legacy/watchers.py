"""What the child watches as a script runs: TF random ops, unseeded numpy/Python draws (``--seed``), sessions."""

from __future__ import annotations

import builtins
import functools
import sys
import types
import weakref
from typing import Any

from tapeshift.migrate.legacy.run_legacy import LegacyImports

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


class TensorFlowHooks:
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
