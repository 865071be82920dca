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
* a draw made inside a Keras layer's call (``__call__`` of tf_keras' ``Layer``:
  ``tf.layers.dropout``, ``tf_keras.layers.Dropout``, ``GaussianNoise``...) has
  ``k = layer_key(name, i, c)``: the layer's full name (a ``tf.layers`` layer's
  variable scope, ``scope/dropout``; else ``layer.name``), the index ``i`` of
  the draw within the call and ``c``, how many times that draw has *run*
  before. In a TF1 graph ``c`` comes from a stateful ``py_func`` counter that
  feeds the key, so it counts only when the op runs (not in an untaken
  ``tf.cond`` branch); eagerly and in a ``tf.function`` of a TF2 program it is
  an int64 variable per draw, incremented where the draw runs;
* every other draw has ``k = n``, the count of such draws before it, in the
  order they *run*: eagerly, the n-th draw; inside a ``tf.function`` of a TF2
  program, a variable the function increments as it runs, so each call draws
  new numbers, in program order; in a TF1 graph (the legacy run, or a new run
  in graph mode), each session run gives the random ops it executes the next
  counts in the order the ops were created, read by a ``py_func`` when the op
  runs (:mod:`tapeshift.migrate.legacy.align_runs`), so an op draws new
  numbers at each run as the TF2 step that replaced it does. Random ops of
  function graphs run from a TF1 program (tf.data) are keyed once, when created.

The three kinds of ``k`` never meet: order counts are in ``[0, 2**62)``, weight
name keys in ``[2**62, 2**63)``, layer keys in ``[-2**63, 0)`` (:func:`layer_key`).

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

The ``py_func`` that reads a TF1 graph op's count also counts its executions;
the record lists the ops that ran more than once, which sit in a
``while_loop`` (keyed as each pass runs, which a TF2 loop interleaving other
draws does not match) and which were created in function graphs, and, in the
new run, the script lines that drew more than once; the report compares them.

This module imports TensorFlow only in :meth:`RandomAligner.install`; the
parent process reads :data:`DEFAULT_SEED` and :func:`name_key` from it. The
aligner's counters and its record are :mod:`tapeshift.migrate.legacy.align_counts`.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import sys
import sysconfig
import threading

from tapeshift.migrate.legacy.align_counts import DrawCounts
from tapeshift.migrate.legacy.align_runs import RunKeys
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
LAYER_KEY_BASE = -(1 << 63)   # layer keys are in [-2**63, 0): neither a name key nor a count
LAYER_COUNT_BITS = 32     # the low bits of a layer key: how many times the draw ran before


def name_key(name: str, index: int = 0) -> int:
    """The key's second half for the ``index``-th draw of the weight ``name`` (``Net/l1/kernel``).

    ``2**62 | (the first 8 bytes of SHA-256(name) >> 2)`` (of ``name#index``
    when ``index`` > 0): the same in both runs, never a draw count.
    """
    text = name if index == 0 else f"{name}#{index}"
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return NAME_KEY_BASE | (int.from_bytes(digest[:8], "big") >> 2)


def layer_site(name: str, index: int = 0) -> str:
    """The record's name for the ``index``-th draw of a call of the layer ``name``: ``name#index``."""
    return f"{name}#{index}"


def layer_key(name: str, index: int = 0, count: int = 0) -> int:
    """The key's second half for the ``index``-th draw of the ``count``-th drawing call of ``name``.

    ``-2**63 + (h << 32) + count``, with ``h`` the first 31 bits of
    SHA-256(``name#index``): negative, so never a weight's name key or an order
    count. ``count`` is added in the graph (TF2 functions), so its range is
    ``[0, 2**32)``: a draw that runs more often reaches the next ``h``. Two
    draws collide when their 31-bit ``h`` do (about ``S**2 / 2**32`` for ``S``
    draw sites).
    """
    digest = hashlib.sha256(layer_site(name, index).encode("utf-8")).digest()
    h = int.from_bytes(digest[:4], "big") >> 1
    return LAYER_KEY_BASE + (h << LAYER_COUNT_BITS) + count


def layer_name(layer) -> str:
    """A Keras layer's full name as its draws are keyed: the variable scope of a ``tf.layers``
    layer (``scope/dropout``, ``dropout_1``), else ``layer.name`` (``name="scope/dropout"``)."""
    scope = getattr(layer, "_scope", None)
    if scope is not None and not getattr(layer, "_keras_style", True):
        name = getattr(scope, "name", None)
        if name:
            return name
    return layer.name


class _Call:
    """A Keras layer's call in progress: the layer, its inputs and the draws made so far."""

    __slots__ = ("layer", "inputs", "draws")

    def __init__(self, layer, inputs) -> None:
        self.layer, self.inputs, self.draws = layer, inputs, 0


def _library_dirs() -> tuple:
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tapeshift.migrate
    return tuple(os.path.join(d, "") for d in dirs if d)


_LIBRARY_DIRS = _library_dirs()


def _script_site() -> str:
    """``file.py:LINE`` of the innermost frame outside libraries (the script's line that drew).

    AutoGraph's converted copies of the script's functions are skipped: a draw
    traced in a ``tf.function`` is placed at the line that called the function."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith("<") or filename.startswith(_LIBRARY_DIRS)
                or "__autograph_generated_file" in filename):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


#: tf-slim's variable names -> those of the tf-keras layer that replaces it
SLIM_TO_KERAS = {"weights": "kernel", "biases": "bias"}


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


class RandomAligner(DrawCounts, RunKeys):
    """Makes the child's TF random draws come from the stream ``[seed, k]`` (module docstring)."""

    def __init__(self, seed: int, legacy: bool) -> None:
        self.seed = int(seed)
        self.legacy = legacy
        self.installed = False
        self.order_draws = 0        # order-keyed draws keyed from Python (created, or run eagerly)
        self.created = 0            # order-keyed random ops created in graphs
        self.function_created = 0   # ... of them in function graphs, keyed when created
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
        # order-keyed draws, where they ran: TF1 graph op's n -> executions (py_func tally),
        # script line -> draws run eagerly (in a tf.function: _site_vars["order", line])
        self.executions: dict = {}
        self._graph_ops: dict[int, str] = {}     # creation count n -> TF1 graph op name
        # layer-call draws: site (name#index) -> executions (TF1 graphs: py_func, else eagerly
        # without the variables below), and -> graph ops created for it (TF1 graphs)
        self.layer_runs: dict[str, int] = {}
        self.layer_ops: dict[str, int] = {}
        self._site_vars: dict = {}  # TF2 program: (kind, site) -> int64 variable of executions
        self._lock = threading.Lock()
        self._local = threading.local()
        self._counter = None        # new run: int64 variable counting order-keyed draws run
        self._raw: Raw | None = None
        self._init_run_keys()

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
        self._install_slim()
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
            if original is not None and not getattr(original, "_tapeshift_align", False):
                cls.add_weight = self._add_weight(original)
            original = cls.__dict__.get("__call__")
            if original is not None and not getattr(original, "_tapeshift_align", False):
                cls.__call__ = self._layer_call(original)

    def _install_slim(self) -> None:
        """tf-slim's fully_connected (if installed): its weights' draws keyed by name
        (:meth:`_slim_creator`), wherever tf-slim exports it."""
        import importlib

        try:
            modules = [importlib.import_module(m) for m in
                       ("tf_slim.layers.layers", "tf_slim.layers", "tf_slim")]
        except ImportError:
            return
        from tensorflow.python.ops import variable_scope

        original = modules[0].fully_connected
        if getattr(original, "_tapeshift_align", False):
            return
        aligner = self

        @functools.wraps(original)  # (its arg_scope key comes along)
        def fully_connected(*args, **kwargs):
            with variable_scope.variable_creator_scope(aligner._slim_creator):
                return original(*args, **kwargs)

        fully_connected._tapeshift_align = True
        for module in modules:
            if getattr(module, "fully_connected", None) is original:
                module.fully_connected = fully_connected

    def _layer_call(self, original):
        """``Layer.__call__``: draws made inside it are keyed by the layer (:func:`layer_key`)."""
        aligner = self

        @functools.wraps(original)
        def __call__(layer, *args, **kwargs):
            calls = aligner._calls()
            calls.append(_Call(layer, args[0] if args else kwargs.get("inputs")))
            try:
                return original(layer, *args, **kwargs)
            finally:
                calls.pop()

        __call__._tapeshift_align = True
        return __call__

    def _calls(self) -> list:
        calls = getattr(self._local, "calls", None)
        if calls is None:
            calls = self._local.calls = []
        return calls

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
        scope = _name_scope().rstrip("/")
        short = kwargs.get("name") or "Variable"
        return self._keyed_creator(next_creator, f"{scope}/{short}" if scope else short, kwargs)

    def _slim_creator(self, next_creator, **kwargs):
        """A tf-slim fully_connected's ``X/weights`` and ``X/biases`` (get_variable gives
        the full name), keyed as ``X/kernel`` and ``X/bias``: the names of the Dense
        layer ``tapeshift migrate`` makes of it."""
        head, _, last = (kwargs.get("name") or "Variable").rpartition("/")
        last = SLIM_TO_KERAS.get(last, last)
        return self._keyed_creator(next_creator, f"{head}/{last}" if head else last, kwargs)

    def _keyed_creator(self, next_creator, name: str, kwargs: dict):
        init = kwargs.get("initial_value")
        try:
            from tensorflow.python.trackable.base import CheckpointInitialValueCallable
        except ImportError:  # pragma: no cover - older TensorFlow
            CheckpointInitialValueCallable = ()
        if not callable(init) or isinstance(init, CheckpointInitialValueCallable):
            return next_creator(**kwargs)
        weight = _Weight(name)
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
            n = None
            try:
                key, how, n = aligner._key(op_type, a)
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
            aligner._created(out, how, n)
            return out

        wrapper._tapeshift_align = True
        return wrapper

    def _key(self, op_type: str, args: dict | None = None):
        """The key tensor of the next draw, how it was keyed (``weight``, ``layer``, ``graph``...)
        and its order count or layer site (``None`` for a weight). ``args``: the op's."""
        from tensorflow.python.eager import context
        from tensorflow.python.framework import constant_op, dtypes, ops

        def constant(k):
            return constant_op.constant([self.seed, k], dtype=dtypes.int64, name="tapeshift_align_key")

        stack = self._weight_stack()
        if stack:
            weight = stack[-1]
            index, weight.draws = weight.draws, weight.draws + 1
            self.weights[weight.name] = self.weights.get(weight.name, 0) + 1
            return constant(name_key(weight.name, index)), "weight", None
        calls = self._calls()
        if calls:
            return self._layer_draw_key(calls[-1])
        if context.executing_eagerly():
            n = self._next_run()
            self._count_eager(_script_site())
            return constant(n), "eager", n
        graph = ops.get_default_graph()
        in_function = bool(getattr(graph, "building_function", False))
        if (in_function and self._counter is not None
                and ops.executing_eagerly_outside_functions()):
            # a tf.function of a TF2 program: the count is read as it runs
            self.traced += 1
            one = constant_op.constant(1, dtype=dtypes.int64)
            self._site_var(("order", _script_site())).assign_add(one)  # where it ran: the record
            n = self._counter.assign_add(one) - one
            seed = constant_op.constant(self.seed, dtype=dtypes.int64)
            return self._raw.stack([seed, n], name="tapeshift_align_key"), "traced", None
        if in_function:  # (tf.data, a TF1 program's functions): keyed once, when created
            n = self._next_created()
            self.created += 1
            self.function_created += 1
            return constant(n), "function", n
        # a TF1 graph: keyed by the session runs that execute it (align_runs)
        n, self.created = self.created, self.created + 1
        seed = constant_op.constant(self.seed, dtype=dtypes.int64)
        return (self._raw.stack([seed, self._run_key(n, args)],
                                name="tapeshift_align_key"), "graph", n)

    def _layer_draw_key(self, call: _Call):
        """The key of a draw in a layer's call: ``[seed, layer_key(name, index, executions)]``."""
        from tensorflow.python.eager import context
        from tensorflow.python.framework import constant_op, dtypes, ops

        name = layer_name(call.layer)
        index, call.draws = call.draws, call.draws + 1
        site = layer_site(name, index)
        base = layer_key(name, index)
        if context.executing_eagerly():
            if self._counter is None:
                count = self._bump(self.layer_runs, site)
            else:
                count = int(self._site_var(("layer", site)).assign_add(1).numpy()) - 1
            return (constant_op.constant([self.seed, base + count], dtype=dtypes.int64,
                                         name="tapeshift_align_key"), "layer", site)
        one = constant_op.constant(1, dtype=dtypes.int64)
        if self._counter is not None and ops.executing_eagerly_outside_functions():
            # a tf.function of a TF2 program: the draw's own count, incremented where it runs
            count = self._site_var(("layer", site)).assign_add(one) - one
        else:
            # a TF1 graph: a stateful py_func counts when it runs, after the layer's input
            count = self._py_counter(self.layer_runs, site, self._input_shape(call),
                                     "tapeshift_align_layer_count")
            self.layer_ops[site] = self.layer_ops.get(site, 0) + 1
        k = constant_op.constant(base, dtype=dtypes.int64) + count
        seed = constant_op.constant(self.seed, dtype=dtypes.int64)
        return self._raw.stack([seed, k], name="tapeshift_align_key"), "layer", site

    @staticmethod
    def _input_shape(call: _Call) -> list:
        """``[tf.shape(x)]`` of the call's first input tensor in this graph, else ``[]``.

        The py_func counter takes it as input, so a layer's draw is counted after
        its input is computed: layers of one name chained in a session run count
        in the order they run (dataflow order)."""
        from tensorflow.python.framework import dtypes, ops
        from tensorflow.python.framework import tensor as tensor_lib
        from tensorflow.python.ops import array_ops
        from tensorflow.python.util import nest

        try:
            graph = ops.get_default_graph()
            for t in nest.flatten(call.inputs):
                if isinstance(t, tensor_lib.Tensor) and t.graph is graph:
                    return [array_ops.shape(t, out_type=dtypes.int64)]
        except Exception:
            pass
        return []
