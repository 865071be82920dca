"""``verify --align-random``: TensorFlow's random draws come from one stateless stream in both runs.

The child process of either run (legacy or new) installs a :class:`RandomAligner`
before the script starts. It replaces the stateful TF1 random ops (the op
wrappers in ``gen_random_ops``, which ``tf.random.*``, ``tf.random_*``,
initialisers and dropout all call) by their stateless counterparts, with a key
``[seed, k]`` (int64) chosen so that the two runs draw the same numbers:

* a draw made while a layer creates a weight (``add_weight`` of tf_keras'
  ``Layer``, which both ``tf.layers.*`` in the legacy run and
  ``tf_keras.layers.*`` in the new run go through) has ``k = name_key(name, i)``:
  the weight's full variable name (``Net/l1/kernel``) and the index of the
  draw within that weight's initial value;
* every other draw has ``k = n``, the count of such draws before it: in a TF1
  graph (the legacy run, or a new run in graph mode) the n-th random op
  *created*; eagerly and inside a ``tf.function`` of a TF2 program, the n-th
  draw *run* (inside a function the count is a variable the function
  increments as it runs, so each call draws new numbers, in program order).

The stateless op gives ``[0, 1)`` uniforms, standard normals... and the
unchanged TensorFlow code around the wrapper scales them, so the values are
exactly ``tf.random.stateless_uniform(shape, [seed, k], minval, maxval)``,
``stateless_normal``, ``stateless_truncated_normal``... (the table
:data:`~tapeshift.migrate.legacy.align_ops.ALIGNED`).
tf_keras' ``RandomGenerator`` (Keras 2 initialisers, ``Dropout``) is made to
draw through ``tf.random.*`` ("legacy stateful") instead of its own stateless
seeds, so Keras 2 draws are aligned the same way.

Not aligned, and recorded by op name: ``tf.random.Generator`` ops, candidate
samplers, ``sample_distorted_bounding_box``, fractional pooling, tf.data's
shuffle (:data:`~tapeshift.migrate.legacy.align_ops.UNALIGNED`); stateless ops
the script (or Keras 3) calls itself are left as they are and counted.

A random op in a TF1 graph becomes stateless with its key fixed when it was
created, so each time a session runs it, it draws the same numbers; the record
says which ran in more than one ``Session.run``, which sit in a ``while_loop``
and which were created in function graphs, and the report compares the counts.

This module imports TensorFlow only in :meth:`RandomAligner.install`; the
parent process reads :data:`DEFAULT_SEED` and :func:`name_key` from it.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import threading
import weakref

from tapeshift.migrate.legacy.align_ops import (
    ALIGNED,
    NOT_DRAWS,
    STATELESS_MODULES,
    UNALIGNED,
    Raw,
    camel,
)

DEFAULT_SEED = 0
NAME_KEY_BASE = 1 << 62   # name keys are in [2**62, 2**63): never an order count

_SHOWN = 20   # op names kept per list in the record


def name_key(name: str, index: int = 0) -> int:
    """The key's second half for the ``index``-th draw of the weight ``name`` (``Net/l1/kernel``).

    ``2**62 | (the first 8 bytes of SHA-256(name) >> 2)`` (of ``name#index``
    when ``index`` > 0): the same in both runs, never a draw count.
    """
    text = name if index == 0 else f"{name}#{index}"
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return NAME_KEY_BASE | (int.from_bytes(digest[:8], "big") >> 2)


class _Weight:
    """The weight whose initial value is being computed (inside ``add_weight``)."""

    __slots__ = ("name", "draws")

    def __init__(self, name: str) -> None:
        self.name, self.draws = name, 0


def _name_scope() -> str:
    from tensorflow.python.eager import context
    from tensorflow.python.framework import ops

    if context.executing_eagerly():
        return context.context().scope_name or ""
    return ops.get_default_graph().get_name_scope()


class RandomAligner:
    """Makes the child's TF random draws come from the stream ``[seed, k]`` (module docstring)."""

    def __init__(self, seed: int, legacy: bool) -> None:
        self.seed = int(seed)
        self.legacy = legacy
        self.installed = False
        self.order_draws = 0        # order-keyed draws keyed from Python (created, or run eagerly)
        self.created = 0            # order-keyed draws keyed when created in a graph
        self.by_op: dict[str, int] = {}          # aligned draws by op type (weights included)
        self.weights: dict[str, int] = {}        # weight name -> draws keyed by it
        self.unaligned: dict[str, int] = {}      # op type -> draws left unaligned (UNALIGNED)
        self.failed: dict[str, str] = {}         # op type -> why it could not be made stateless
        self.stateless: dict[str, int] = {}      # stateless draws the script (or a library) made
        self.traced = 0             # draws created in tf.function graphs, keyed as they run
        self.in_loops: list[str] = []      # TF1 graph random ops inside a while_loop
        self.in_functions: list[str] = []  # TF1-run random ops created in function graphs
        self.renamed: list[list[str]] = []  # [keyed by, variable's name] when they differ
        self.own_types: set[str] = set()    # op types this module created in graphs
        self._runs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # graph -> {op: runs}
        self._reached: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # graph -> {run: ops}
        self._local = threading.local()
        self._counter = None        # new run: int64 variable counting order-keyed draws run
        self._raw: Raw | None = None

    # -- installing ---------------------------------------------------------
    def install(self) -> None:
        """Wrap the random ops, tf_keras' weight creation and RandomGenerator, and Session.run."""
        if self.installed:
            return
        import importlib

        self.installed = True
        self._raw = Raw()
        for op_type, (modname, attr) in ALIGNED.items():
            mod = importlib.import_module(f"tensorflow.python.ops.{modname}")
            setattr(mod, attr, self._aligned(op_type, getattr(mod, attr)))
        for modname, attrs in UNALIGNED.items():
            try:
                mod = importlib.import_module(f"tensorflow.python.ops.{modname}")
            except ImportError:
                continue
            for attr in attrs:
                fn = getattr(mod, attr, None)
                if fn is not None:
                    setattr(mod, attr, self._counted(self.unaligned, camel(attr), fn))
        for modname in STATELESS_MODULES:
            mod = importlib.import_module(f"tensorflow.python.ops.{modname}")
            for attr in dir(mod):
                if attr.startswith("stateless_") and attr not in NOT_DRAWS:
                    setattr(mod, attr, self._counted(self.stateless, camel(attr), getattr(mod, attr)))
        # tf.random.Generator: RngReadAndSkip takes a key from the generator's state, then a
        # stateless op draws with it; that draw is counted as the generator's (unaligned)
        stateful = importlib.import_module("tensorflow.python.ops.gen_stateful_random_ops")
        read_and_skip = stateful.rng_read_and_skip

        @functools.wraps(read_and_skip)
        def rng_read_and_skip(*args, **kwargs):
            self._local.generator = True
            return read_and_skip(*args, **kwargs)

        stateful.rng_read_and_skip = rng_read_and_skip
        self._install_keras()
        self._install_session_run()
        if not self.legacy:
            self._make_counter()

    def _make_counter(self) -> None:
        from tensorflow.python.eager import context
        from tensorflow.python.framework import dtypes
        from tensorflow.python.ops import resource_variable_ops

        if not context.executing_eagerly():
            return
        self._counter = resource_variable_ops.ResourceVariable(
            0, dtype=dtypes.int64, trainable=False, name="tapeshift_align_counter")

    def _install_keras(self) -> None:
        """tf_keras: weights' draws keyed by name; RandomGenerator through tf.random.* (if installed)."""
        import importlib

        try:
            backend = importlib.import_module("tf_keras.src.backend")
            layers = [importlib.import_module(f"tf_keras.src.engine.{m}").Layer
                      for m in ("base_layer", "base_layer_v1")]
        except ImportError:
            return
        generator = backend.RandomGenerator
        original_init = generator._maybe_init
        if not getattr(original_init, "_tapeshift_align", False):
            @functools.wraps(original_init)
            def _maybe_init(gen):
                if not gen._built:  # "legacy stateful": tf.random.uniform(...), aligned here
                    gen._rng_type = generator.RNG_LEGACY_STATEFUL
                return original_init(gen)

            _maybe_init._tapeshift_align = True
            generator._maybe_init = _maybe_init
        for cls in layers:
            original = cls.__dict__.get("add_weight")
            if original is None or getattr(original, "_tapeshift_align", False):
                continue
            cls.add_weight = self._add_weight(original)

    def _add_weight(self, original):
        aligner = self

        @functools.wraps(original)
        def add_weight(layer, *args, **kwargs):
            if getattr(aligner._local, "in_add_weight", False):
                return original(layer, *args, **kwargs)
            from tensorflow.python.ops import variable_scope

            aligner._local.in_add_weight = True
            try:
                with variable_scope.variable_creator_scope(aligner._weight_creator):
                    return original(layer, *args, **kwargs)
            finally:
                aligner._local.in_add_weight = False

        add_weight._tapeshift_align = True
        return add_weight

    def _weight_creator(self, next_creator, **kwargs):
        """Key the draws of the weight's initial value by its full variable name."""
        init = kwargs.get("initial_value")
        try:
            from tensorflow.python.trackable.base import CheckpointInitialValueCallable
        except ImportError:  # pragma: no cover - older TensorFlow
            CheckpointInitialValueCallable = ()
        if not callable(init) or isinstance(init, CheckpointInitialValueCallable):
            return next_creator(**kwargs)
        scope = _name_scope().rstrip("/")
        short = kwargs.get("name") or "Variable"
        weight = _Weight(f"{scope}/{short}" if scope else short)
        stack = self._weight_stack()

        def initial_value():
            stack.append(weight)
            try:
                return init()
            finally:
                stack.pop()

        kwargs["initial_value"] = initial_value
        variable = next_creator(**kwargs)
        if weight.draws:
            try:
                actual = variable.name.split(":")[0]
            except Exception:
                actual = weight.name
            if actual != weight.name:
                self.renamed.append([weight.name, actual])
        return variable

    def _weight_stack(self) -> list:
        stack = getattr(self._local, "weights", None)
        if stack is None:
            stack = self._local.weights = []
        return stack

    def _install_session_run(self) -> None:
        from tensorflow.python.client import session as session_lib

        base = session_lib.BaseSession
        original = base.run
        if getattr(original, "_tapeshift_align", False):
            return
        aligner = self

        @functools.wraps(original)
        def run(sess, fetches, feed_dict=None, options=None, run_metadata=None):
            try:
                aligner._note_run(sess.graph, fetches, feed_dict)
            except Exception:  # never break the script over this record
                pass
            return original(sess, fetches, feed_dict, options, run_metadata)

        run._tapeshift_align = True
        base.run = run

    # -- drawing ------------------------------------------------------------
    def _counted(self, table: dict, op_type: str, fn):
        aligner = self

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            local = aligner._local
            if getattr(local, "generator", False):  # a tf.random.Generator's draw
                local.generator = False
                label = f"{op_type} (tf.random.Generator)"
                aligner.unaligned[label] = aligner.unaligned.get(label, 0) + 1
            elif not getattr(local, "busy", False):
                table[op_type] = table.get(op_type, 0) + 1
            return fn(*args, **kwargs)

        return wrapper

    def _aligned(self, op_type: str, original):
        aligner = self
        signature = inspect.signature(original)
        adapter = getattr(self._raw, op_type)

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            local = aligner._local
            if getattr(local, "busy", False):
                return original(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            local.busy = True
            try:
                key, how = aligner._key(op_type)
                out = adapter(a, key, a.get("name") or op_type)
            except Exception as exc:  # not made stateless: drawn as usual, and said so
                aligner.failed.setdefault(op_type, f"{type(exc).__name__}: {exc}"[:300])
                aligner.unaligned[op_type] = aligner.unaligned.get(op_type, 0) + 1
                out = None
            finally:
                local.busy = False
            if out is None:
                return original(*args, **kwargs)
            aligner.by_op[op_type] = aligner.by_op.get(op_type, 0) + 1
            aligner._created(out, how)
            return out

        wrapper._tapeshift_align = True
        return wrapper

    def _key(self, op_type: str):
        """The key tensor of the next draw and how it was keyed (``weight``, ``graph``, ...)."""
        from tensorflow.python.eager import context
        from tensorflow.python.framework import constant_op, dtypes, ops

        def constant(k):
            return constant_op.constant([self.seed, k], dtype=dtypes.int64, name="tapeshift_align_key")

        stack = self._weight_stack()
        if stack:
            weight = stack[-1]
            index, weight.draws = weight.draws, weight.draws + 1
            self.weights[weight.name] = self.weights.get(weight.name, 0) + 1
            return constant(name_key(weight.name, index)), "weight"
        if context.executing_eagerly():
            return constant(self._next_run()), "eager"
        graph = ops.get_default_graph()
        in_function = bool(getattr(graph, "building_function", False))
        if (in_function and self._counter is not None
                and ops.executing_eagerly_outside_functions()):
            # a tf.function of a TF2 program: the count is read as it runs
            self.traced += 1
            one = constant_op.constant(1, dtype=dtypes.int64)
            n = self._counter.assign_add(one) - one
            seed = constant_op.constant(self.seed, dtype=dtypes.int64)
            return self._raw.stack([seed, n], name="tapeshift_align_key"), "traced"
        n = self._next_created()
        self.created += 1
        return constant(n), "function" if in_function else "graph"

    def _next_run(self) -> int:
        """The next order count, for a draw run now (eagerly)."""
        if self._counter is None:
            n, self.order_draws = self.order_draws, self.order_draws + 1
            return n
        return int(self._counter.assign_add(1).numpy()) - 1

    def _next_created(self) -> int:
        """The next order count, for a draw created in a graph (keyed once, when created)."""
        if self._counter is not None:
            from tensorflow.python.eager import context

            try:
                with context.eager_mode():
                    return self._next_run()
            except Exception:
                pass
        n, self.order_draws = self.order_draws, self.order_draws + 1
        return n

    def _created(self, out, how: str) -> None:
        """Bookkeeping for an aligned draw made in a graph: op names for the record."""
        if how in ("eager", "traced"):
            return
        self.own_types.update(_own_types(out))
        if how == "weight":
            return
        op = out.op
        if how == "function":
            _keep(self.in_functions, op.name)
            return
        try:
            from tensorflow.python.ops import control_flow_util

            if control_flow_util.GetContainingWhileContext(op._control_flow_context) is not None:
                _keep(self.in_loops, op.name)
        except Exception:
            pass
        self._runs.setdefault(op.graph, {})[op.name] = 0

    # -- sessions -----------------------------------------------------------
    def _note_run(self, graph, fetches, feed_dict) -> None:
        """Count, per aligned graph random op, the session runs that ran it."""
        runs = self._runs.get(graph)
        if not runs:
            return
        from tensorflow.python.client import session as session_lib
        from tensorflow.python.framework import tensor as tensor_lib

        handler = session_lib._FetchHandler(graph, fetches, {})
        roots = [t.op for t in handler.fetches()] + list(handler.targets())
        fed = set()
        for k in feed_dict or ():
            if isinstance(k, tensor_lib.Tensor):
                fed.add(k.name)
            elif isinstance(k, str):
                try:
                    fed.add(graph.as_graph_element(k).name)
                except Exception:
                    pass
        cache = self._reached.setdefault(graph, {})
        key = (graph.version, tuple(sorted(op.name for op in roots)), tuple(sorted(fed)))
        reached = cache.get(key)
        if reached is None:
            reached = cache[key] = _reached_ops(roots, fed, set(runs))
        for name in reached:
            runs[name] += 1

    # -- the record -----------------------------------------------------------
    def total_order_draws(self) -> int:
        if self._counter is None:
            return self.order_draws
        from tensorflow.python.eager import context

        try:
            with context.eager_mode():
                return max(self.order_draws, int(self._counter.numpy()))
        except Exception:
            return self.order_draws

    def record(self) -> dict:
        """What goes into meta.json's ``align`` (see docs/verify.md, '--align-random')."""
        repeated = {}
        for runs in list(self._runs.values()):
            for name, n in runs.items():
                if n > 1:
                    repeated[name] = n
        return {
            "seed": self.seed,
            "role": "legacy" if self.legacy else "new",
            "order_draws": self.total_order_draws(),
            "created": self.created,
            "by_op": dict(sorted(self.by_op.items())),
            "weights": dict(self.weights),
            "unaligned": dict(sorted(self.unaligned.items())),
            "failed": dict(self.failed),
            "stateless": dict(sorted(self.stateless.items())),
            "traced": self.traced,
            "repeated": dict(sorted(repeated.items(), key=lambda kv: -kv[1])[:_SHOWN]),
            "in_loops": self.in_loops,
            "in_functions": self.in_functions,
            "renamed": self.renamed[:_SHOWN],
        }


def _keep(names: list, name: str) -> None:
    if len(names) < _SHOWN:
        names.append(name)


def _own_types(out) -> set:
    """The op types of ``out``'s op and its inputs' (key, key/counter): what this module created."""
    try:
        op = out.op
        types = {op.type}
        for t in op.inputs:
            types.add(t.op.type)
        return types
    except Exception:
        return set()


def _reached_ops(roots, fed: set, wanted: set) -> frozenset:
    """The names in ``wanted`` of the ops a session run of ``roots`` executes (feeds cut the walk)."""
    seen, found = set(), set()
    stack = list(roots)
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.name in wanted:
            found.add(op.name)
        for t in op.inputs:
            if t.name not in fed:
                stack.append(t.op)
        stack.extend(op.control_inputs)
    return frozenset(found)

