"""tf-slim models on the graph, tape and function backends, with the same model code.

A legacy slim model is a function that *creates* its variables as it builds::

    def net(inputs, is_training):
        with slim.arg_scope([slim.conv2d], normalizer_fn=slim.batch_norm,
                            normalizer_params={"is_training": is_training}):
            h = slim.conv2d(inputs["x"], 8, [3, 3], scope="conv1")
            h = slim.max_pool2d(h, [2, 2], scope="pool1")
            logits = slim.fully_connected(slim.flatten(h), 10, activation_fn=None, scope="fc")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=inputs["y"], logits=logits))

``SlimModel(net, example_inputs)`` turns it into a ``compat`` model with explicit
parameters:

- **discover**: ``net`` runs once in a scratch ``tf.Graph`` with a graph-level
  seed; every variable it makes through ``tf.compat.v1.get_variable`` (all slim
  layers do) is recorded by name (``"conv1/weights"``) with its shape, dtype,
  trainability and initial value. ``.params`` holds the values, ``.trainable``
  the names a gradient is taken with respect to by default.
- **run**: ``.model(params, inputs)`` re-runs ``net`` under a variable scope whose
  custom getter returns the backend's variable of that name instead of creating
  one. The same getter works in a graph, eagerly and under ``tf.function``, so
  no ``make_template`` is needed: ``get_variable`` never reaches its own store
  (the store that, eagerly, would make a fresh variable per call; docs/tf1-vs-tf2.md, section 4).
  The scope is entered by object, which restores TF's scope counters on exit, so
  default names (``Conv``, ``Conv_1``) are the same on every eager call. A
  variable the discovery run did not make, one of another shape or dtype, or a
  variable created around ``get_variable`` raises ``SlimModelError`` naming it.
- **batch_norm**: moving statistics are real variables and are updated once per
  call on every backend, as a TF1 training step did with
  ``tf.control_dependencies(tf.get_collection(UPDATE_OPS))``. Update ops that
  land in ``UPDATE_OPS`` during a graph run become control dependencies of the
  target; eagerly they run where they are built; ``updates_collections=None``
  updates in place everywhere. slim's own implementation is used in every case
  (the fused kernel for 2-D and 4-D inputs), never the Keras-1 layer that its
  default would pick and that current TF (checked: 2.21) only has in ``tf_keras``
  (``_SlimOps``).
- **regularizers**: each regularized variable's loss is added once per run to a
  ``REGULARIZATION_LOSSES`` collection holding only that run's losses, so
  ``tf.losses.get_regularization_loss()`` in the net is the same on every
  backend (``_Regularization``).
- **layer cuts**: every slim layer output is a cut named by the layer's scope
  (``"conv1"``, ``"conv1/BatchNorm"``, ``"pool1"``), so a split can pass through
  any layer without editing the net. ``compat.cut`` in the net works as well.
- **dropout**: inside ``tapeshift.compat.testing.aligned_random(seed)`` slim's dropout draws
  the same mask on every backend (``tapeshift.compat.random_alignment`` patches the
  dropout slim calls); with
  ``is_training=False`` it is the identity.

``slim_fixes()`` is the one compatibility patch tf-slim 1.1.0 needs on current TF
(``ops.Tensor`` is gone, which breaks ``batch_norm`` and ``smart_cond``); the
adapter applies it while a net runs, and a hand-built legacy graph can use it too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.cuts import cut
from tapeshift.compat.errors import CompatError


class SlimModelError(CompatError):
    """A slim net asked for a variable the adapter cannot give it (names the variable)."""


@dataclass(frozen=True)
class VariableSpec:
    """One variable the net makes: its name without ``:0``, shape, dtype and role."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    trainable: bool


def _slim():
    try:
        import tf_slim
    except ImportError as exc:  # pragma: no cover - exercised without tf-slim only
        raise CompatError(
            "tapeshift.compat.slim needs tf-slim: pip install 'tapeshift[tf]' (or pip install tf-slim)"
        ) from exc
    return tf_slim


# -- tf-slim on current TensorFlow --------------------------------------------


@contextlib.contextmanager
def slim_fixes() -> Iterator[None]:
    """Within the block, tf-slim 1.1.0 runs on TensorFlow without ``ops.Tensor`` (2.21).

    ``tf_slim.layers.utils.constant_value`` tests ``isinstance(x, ops.Tensor)``;
    the name was removed from ``tensorflow.python.framework.ops``, so every
    ``batch_norm`` (and any ``smart_cond``) raises AttributeError. The block swaps
    in the same function written against ``tf.Tensor``; numbers are unchanged.
    Nothing is patched where tf-slim works as shipped.
    """
    tf = tensorflow()
    _slim()
    from tensorflow.python.framework import ops, tensor_util
    from tf_slim.layers import utils

    if hasattr(ops, "Tensor"):
        yield
        return

    def constant_value(value_or_tensor_or_var, dtype=None):
        if value_or_tensor_or_var is None:
            raise ValueError("value_or_tensor_or_var cannot be None")
        value = value_or_tensor_or_var
        if isinstance(value, (tf.Tensor, tf.Variable)):
            if dtype and value.dtype != dtype:
                raise ValueError(f"It has the wrong type {value.dtype} instead of {dtype}")
            return None if isinstance(value, tf.Variable) else tensor_util.constant_value(value)
        return value

    with _patched(utils, "constant_value", constant_value):
        yield


_PROCESS_FIXES: contextlib.ExitStack | None = None


def install_tf_slim_fixes() -> None:
    """Apply ``slim_fixes()`` and slim's own batch_norm path for the rest of the process.

    For a process that exists to run legacy slim code as TF1 did (``tapeshift
    run-legacy``): ``batch_norm`` otherwise fails on TF 2.21 (``ops.Tensor`` is
    gone) or, on 4-D input with the default update collection, asks for the
    separate ``tf_keras`` package. Neither change moves a number.
    """
    global _PROCESS_FIXES
    if _PROCESS_FIXES is None:
        stack = contextlib.ExitStack()
        stack.enter_context(slim_fixes())
        stack.enter_context(_slim_ops())
        _PROCESS_FIXES = stack  # never closed: the fixes last as long as the process


@contextlib.contextmanager
def _patched(module, attr, value) -> Iterator[None]:
    saved = getattr(module, attr)
    setattr(module, attr, value)
    try:
        yield
    finally:
        setattr(module, attr, saved)


@contextlib.contextmanager
def _layer_cuts() -> Iterator[None]:
    """Each slim layer output becomes ``compat.cut(<layer scope>, output)``.

    Slim layers end with ``utils.collect_named_outputs(collections, alias, out)``;
    the alias is the layer's variable scope (``conv1``, ``Conv_1/BatchNorm``) or,
    for layers without variables (pooling, flatten), its name scope, which a graph
    makes unique (``MaxPool2D_1``) and eager execution does not (``_SlimOps``
    gives it one). A repeated alias (an eager pool, a layer called again with
    ``reuse=True``) gets ``_1``, ``_2``... per run, the way a graph names scopes,
    so the cut names are the same on every backend.
    """
    from tf_slim.layers import utils

    original = utils.collect_named_outputs
    used: set[str] = set()

    def collect_named_outputs(collections, alias, outputs):
        if not isinstance(alias, str) or not alias:
            return original(collections, alias, outputs)
        name = alias.removesuffix("/")
        if name in used:  # a second eager pool, or a layer reused with reuse=True
            i = 1
            while f"{name}_{i}" in used:
                i += 1
            name = f"{name}_{i}"
        used.add(name)
        return original(collections, alias, cut(name, outputs))

    with _patched(utils, "collect_named_outputs", collect_named_outputs):
        yield


class _GraphKeys:
    """``tf.GraphKeys`` with an ``UPDATE_OPS`` that is equal to the real one but not it."""

    def __init__(self, keys):
        self._keys = keys
        # a new string object: == "update_ops", but `is not` the interned constant
        self.UPDATE_OPS = "".join(["update_", "ops"])  # noqa: FLY002
        if self.UPDATE_OPS != keys.UPDATE_OPS or self.UPDATE_OPS is keys.UPDATE_OPS:
            raise RuntimeError(f"cannot make a distinct copy of {keys.UPDATE_OPS!r}")

    def __getattr__(self, attr):
        return getattr(self._keys, attr)


class _SlimOps:
    """``tensorflow.python.framework.ops`` as ``tf_slim.layers.layers`` sees it during a run.

    Two differences, neither of which changes a number:

    - ``name_scope`` names its scope eagerly too. Eagerly, the
      ``ops.name_scope(scope, "MaxPool2D", [x])`` that slim's pooling and flatten
      enter is a null context yielding ``None``, so the layer has no name to
      collect its output under; with ``skip_on_eager=False`` it yields
      ``"MaxPool2D/"``, as a graph does.
    - ``GraphKeys.UPDATE_OPS`` is a distinct (equal) string. ``slim.batch_norm``
      decides by identity (``updates_collections is ops.GraphKeys.UPDATE_OPS``)
      to hand the default case to the Keras-1 ``BatchNormalization`` layer, which
      current TF (checked: 2.21) loads from the separate ``tf_keras`` package. Under this proxy
      it keeps every case in its own implementation (the fused kernel where it
      can), and the update ops still go to the ``update_ops`` collection, where
      ``SlimModel`` runs them with the target.
    """

    def __init__(self, ops):
        self._ops = ops
        self.GraphKeys = _GraphKeys(ops.GraphKeys)

    def __getattr__(self, attr):
        return getattr(self._ops, attr)

    def name_scope(self, name, default_name=None, values=None, skip_on_eager=True):
        return self._ops.name_scope(name, default_name, values, skip_on_eager=False)


@contextlib.contextmanager
def _slim_ops() -> Iterator[None]:
    from tf_slim.layers import layers

    with _patched(layers, "ops", _SlimOps(layers.ops)):
        yield


class _Regularization:
    """Regularization losses of one run, collected the same way on every backend.

    TF1 adds ``regularizer(v)`` to ``REGULARIZATION_LOSSES`` when ``get_variable``
    *creates* ``v``, and the Keras-1 layers behind ``fully_connected`` and
    ``conv2d`` add theirs only in a graph and only for a variable that did not
    exist yet; eagerly there is no collection. A run creates no variable, so
    the adapter takes both regularizers over (``get_variable``'s ``regularizer``
    argument and the layers' ``add_weight(regularizer=...)``) and adds each
    variable's loss once per run to a collection that holds only this run's
    losses. ``tf.losses.get_regularization_loss()`` and ``get_total_loss()`` in
    the net then see the same terms in a graph, eagerly and in ``tf.function``.
    """

    def __init__(self):
        self.names: dict[int, str] = {}  # id(variable) -> name, for the Keras-1 layers
        self.added: set[str] = set()

    def add(self, name, var, regularizer):
        self.names[id(var)] = name
        if regularizer is None or name in self.added:
            return
        tf = tensorflow()
        self.added.add(name)
        with tf.name_scope(f"{name}/Regularizer/"):
            loss = regularizer(var)
        if loss is not None:
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES, loss)

    def add_weight(self, original):
        def add_weight(layer, name, shape=None, *args, regularizer=None, **kwargs):
            var = original(layer, name, shape, *args, regularizer=None, **kwargs)
            if regularizer is not None:
                self.add(self.names.get(id(var), var.name.split(":")[0]), var, regularizer)
            return var

        return add_weight


def _keras1_layer_class():
    """The Keras-1 ``Layer`` base class behind slim's ``fully_connected`` and ``conv2d``."""
    from tensorflow.python.layers import core

    for cls in core.Dense.__mro__:
        if cls.__name__ == "Layer" and cls.__module__.endswith("legacy_tf_layers.base"):
            return cls
    return None  # pragma: no cover - a TensorFlow whose layers are built differently


@contextlib.contextmanager
def _regularization() -> Iterator[_Regularization]:
    tf = tensorflow()
    run = _Regularization()
    layer = _keras1_layer_class()
    ref = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES)
    saved = list(ref)
    del ref[:]
    try:
        with contextlib.ExitStack() as stack:
            if layer is not None:
                stack.enter_context(
                    _patched(layer, "add_weight", run.add_weight(layer.add_weight)))
            yield run
    finally:
        ref[:] = saved


@contextlib.contextmanager
def _no_variable_creation(where: str) -> Iterator[None]:
    """Refuse variables made outside ``get_variable`` (they could not be carried by name)."""
    tf = tensorflow()

    def refuse(next_creator, **kwargs):
        raise SlimModelError(
            f"{where}: the net created variable {kwargs.get('name')!r} directly "
            "(tf.Variable or a Keras layer), not through tf.compat.v1.get_variable; "
            "SlimModel can only give the net variables it asks for by name"
        )

    with tf.variable_creator_scope(refuse):
        yield


# -- the adapter ---------------------------------------------------------------


class SlimModel:
    """A variable-creating slim ``net(inputs, is_training) -> target`` as a compat model.

    ``example_inputs`` (a dict of arrays) gives the input shapes and dtypes for the
    discovery run. ``seed`` is the graph-level seed of that run (the initial
    values are the same for the same seed; to start from a legacy run's values,
    pass them to ``with_values``).
    ``layer_cuts=True`` marks each slim layer's output as a cut named by its scope.
    """

    def __init__(
        self,
        net: Callable,
        example_inputs: Mapping[str, Any],
        *,
        is_training: bool = True,
        seed: int = 0,
        layer_cuts: bool = True,
    ):
        if not isinstance(is_training, bool):
            raise TypeError(f"is_training must be True or False, got {is_training!r}")
        self.net = net
        self.is_training = is_training
        self.seed = int(seed)
        self.layer_cuts = layer_cuts
        self.example_inputs = {n: np.asarray(v) for n, v in example_inputs.items()}
        specs, values = self._discover()
        self.variables: tuple[VariableSpec, ...] = specs
        self.params: dict[str, np.ndarray] = values

    # -- what was discovered ----------------------------------------------
    @property
    def trainable(self) -> tuple[str, ...]:
        """Names of the trainable variables, in creation order (the default ``wrt``)."""
        return tuple(v.name for v in self.variables if v.trainable)

    @property
    def non_trainable(self) -> tuple[str, ...]:
        """Names of the other variables (batch-norm moving statistics, for example)."""
        return tuple(v.name for v in self.variables if not v.trainable)

    def spec(self, name: str) -> VariableSpec:
        for v in self.variables:
            if v.name == name:
                return v
        raise KeyError(f"no variable {name!r}; the net makes {[v.name for v in self.variables]}")

    # -- copies -------------------------------------------------------------
    def with_values(self, values: Mapping[str, Any]) -> SlimModel:
        """A copy whose parameters start from ``values`` (by variable name; others unchanged).

        Use it to carry variables between backends or from a legacy checkpoint:
        ``sm.with_values(fn.variable_values())``.
        """
        params = dict(self.params)
        for name, value in values.items():
            if name not in params:
                raise SlimModelError(
                    f"value given for {name!r}, which is not a variable of the net; "
                    f"its variables are {sorted(params)}"
                )
            spec = self.spec(name)
            arr = np.asarray(value)
            if arr.shape != spec.shape:
                raise SlimModelError(
                    f"value for {name!r} has shape {arr.shape}, but the variable has "
                    f"shape {spec.shape}"
                )
            params[name] = arr.astype(spec.dtype, copy=True)
        return self._copy(params=params)

    def with_training(self, is_training: bool) -> SlimModel:
        """The same variables and values, with the net run in training or inference mode."""
        if not isinstance(is_training, bool):
            raise TypeError(f"is_training must be True or False, got {is_training!r}")
        return self._copy(is_training=is_training)

    def _copy(self, **changes) -> SlimModel:
        new = object.__new__(SlimModel)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    # -- compat entry points ----------------------------------------------
    def build(self, *, backend: str = "tape", **options):
        """``compat.build(self.model, self.params, ...)`` with ``wrt`` defaulting to ``trainable``."""
        from tapeshift.compat.api import build

        options.setdefault("wrt", self.trainable)
        return build(self.model, self.params, backend=backend, **options)

    def model(self, params: Mapping[str, Any], inputs: Mapping[str, Any]):
        """The compat model: run ``net`` on the backend's variables ``params``."""
        tf = tensorflow()
        missing = [n for n in self.params if n not in params]
        if missing:
            raise SlimModelError(
                f"the net's variables {missing} are not among the parameters given "
                f"({sorted(params)}); pass SlimModel.params"
            )
        specs = {v.name: v for v in self.variables}
        mode = "training" if self.is_training else "inference"

        def lookup(getter, name, *args, shape=None, dtype=None, **kwargs):
            spec = specs.get(name)
            if spec is None:
                raise SlimModelError(
                    f"the net asked for variable {name!r} (shape {_shape(shape)}) in "
                    f"{mode} mode, which the discovery run did not create: the net must "
                    f"build the same variables on every run. It made: {sorted(specs)}"
                )
            asked = _shape(shape)
            if shape is not None and tuple(tf.TensorShape(shape).as_list()) != spec.shape:
                raise SlimModelError(
                    f"the net asked for variable {name!r} with shape {asked} in {mode} "
                    f"mode, but the discovery run made it with shape {spec.shape}"
                )
            if dtype is not None and tf.as_dtype(dtype).base_dtype.name != spec.dtype:
                raise SlimModelError(
                    f"the net asked for variable {name!r} as {tf.as_dtype(dtype).name} in "
                    f"{mode} mode, but the discovery run made it as {spec.dtype}"
                )
            return params[name]

        with _no_variable_creation("SlimModel.model"):
            target = self._run_net(inputs, lookup)
        return target

    # -- internals ----------------------------------------------------------
    def _run_net(self, inputs, resolve):
        """Run ``net``, its variables given by ``resolve``; attach graph-mode update ops.

        ``resolve(getter, name, **kwargs)`` is a custom getter without ``regularizer``.
        """
        tf = tensorflow()
        _slim()
        v1 = tf.compat.v1
        graph_mode = not tf.executing_eagerly()
        before = list(v1.get_collection(v1.GraphKeys.UPDATE_OPS)) if graph_mode else []
        with contextlib.ExitStack() as stack:
            stack.enter_context(slim_fixes())
            if self.layer_cuts:
                stack.enter_context(_layer_cuts())
            stack.enter_context(_slim_ops())
            regularization = stack.enter_context(_regularization())

            def custom_getter(getter, name, *args, **kwargs):  # TF passes these by keyword
                regularizer = kwargs.pop("regularizer", None)
                var = resolve(getter, name, *args, **kwargs)
                regularization.add(name, var, regularizer)
                return var

            # entered by object: TF restores its scope counters on exit, so default
            # layer names are the same on every eager call
            stack.enter_context(
                v1.variable_scope(v1.get_variable_scope(), custom_getter=custom_getter))
            target = self.net(dict(inputs), self.is_training)
        if isinstance(target, (tuple, list, dict)):
            raise TypeError(
                "the slim net must return one tensor (the target); it returned a "
                f"{type(target).__name__}"
            )
        target = tf.convert_to_tensor(target)
        if graph_mode:
            updates = [u for u in v1.get_collection(v1.GraphKeys.UPDATE_OPS)
                       if not any(u is b for b in before)]
            if updates:
                with tf.control_dependencies(updates):
                    target = tf.identity(target)
        return target

    def _discover(self):
        tf = tensorflow()
        v1 = tf.compat.v1
        order: list[str] = []

        def recording_getter(getter, name, *args, **kwargs):
            var = getter(name, *args, **kwargs)
            if not isinstance(var, tf.Variable):
                raise SlimModelError(
                    f"variable {name!r} is partitioned ({type(var).__name__}); SlimModel "
                    "carries whole variables only: build the net without a partitioner"
                )
            if name not in order:
                order.append(name)
            return var

        graph = tf.Graph()
        with graph.as_default():
            v1.set_random_seed(self.seed)
            inputs = {
                n: v1.placeholder(v.dtype, v.shape, name=_op_name(n))
                for n, v in self.example_inputs.items()
            }
            self._run_net(inputs, recording_getter)
            made = {v.op.name: v for v in v1.global_variables() + v1.local_variables()}
            trainable = {v.op.name for v in v1.trainable_variables()}
            stray = [n for n in made if n not in order]
            if stray:
                raise SlimModelError(
                    f"discovery: the net created variable(s) {stray} directly (tf.Variable "
                    "or a Keras layer), not through tf.compat.v1.get_variable; SlimModel "
                    "can only give the net variables it asks for by name"
                )
            if not order:
                raise SlimModelError("discovery: the net made no variables")
            with v1.Session(graph=graph) as sess:
                sess.run(v1.variables_initializer([made[n] for n in order]))
                values = sess.run({n: made[n] for n in order})
        specs = tuple(
            VariableSpec(
                name=n,
                shape=tuple(made[n].shape.as_list()),
                dtype=made[n].dtype.base_dtype.name,
                trainable=n in trainable,
            )
            for n in order
        )
        return specs, {n: np.asarray(values[n]) for n in order}


def _shape(shape) -> str:
    if shape is None:
        return "unspecified"
    tf = tensorflow()
    dims = tf.TensorShape(shape)
    return "unknown" if dims.rank is None else str(tuple(dims.as_list()))


def _op_name(name: str) -> str:
    from tapeshift.compat.backends.graph import _op_name as clean

    return clean(name)
