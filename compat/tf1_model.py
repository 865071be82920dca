"""Any TF1 model function on the graph, tape and function backends, with the same variables.

A TF1 model function *creates* its variables as it builds, by name, through
``tf.compat.v1.get_variable`` (directly, or inside ``tf.compat.v1.layers`` and
tf-slim layers)::

    def net(inputs, is_training):
        with tf.compat.v1.variable_scope("encoder", reuse=tf.compat.v1.AUTO_REUSE):
            w = tf.compat.v1.get_variable("w", [4, 3])
            h = tf.compat.v1.layers.dense(tf.tanh(inputs["x"] @ w), 5, name="fc")
            h = tf.compat.v1.layers.batch_normalization(h, training=is_training)
        return tf.reduce_mean(tf.square(h))

``TF1Model(net, example_inputs)`` turns it into a ``compat`` model with explicit
parameters:

- **discover**: ``net`` runs once in a scratch ``tf.Graph`` with a graph-level
  seed; every variable it makes through ``get_variable`` is recorded by name
  (``"encoder/w"``, ``"encoder/fc/kernel"``) with its shape, dtype,
  trainability and initial value. ``.params`` holds the values, ``.trainable``
  the names a gradient is taken with respect to by default. TF1's own variable
  store decides reuse here (``reuse=True``, ``AUTO_REUSE``,
  ``scope.reuse_variables()``), so a net that is wrong in TF1 fails here as in TF1.
- **run**: ``.model(params, inputs)`` re-runs ``net`` under a variable scope whose
  custom getter returns the backend's variable of that name instead of creating
  one. The same getter works in a graph, eagerly and under ``tf.function``, so
  no ``make_template`` is needed: ``get_variable`` never reaches its own store
  (the store that, eagerly, would make a fresh variable per call;
  docs/tf1-vs-tf2.md, section 4). The scope is entered by object, which restores
  TF's scope counters on exit, so default names (``dense``, ``dense_1``,
  ``Conv``) are the same on every eager call. A variable the discovery run did
  not make, one of another shape or dtype, or a variable created around
  ``get_variable`` raises ``TF1ModelError`` naming it.
- **update ops**: update ops that land in ``UPDATE_OPS`` during a graph run
  (``tf.layers.batch_normalization``, slim's ``batch_norm``) become control
  dependencies of the target, as a TF1 training step did with
  ``tf.control_dependencies(tf.get_collection(UPDATE_OPS))``; eagerly they run
  where they are built. Either way moving statistics move once per call.
- **layer libraries** (``tapeshift.compat.tf1_layers``): ``tf.compat.v1.layers``
  works on Keras 3 (tf-keras' legacy layers) while the net runs, slim gets its
  fixes, every slim and ``tf.layers`` output is a cut named by its scope, dropout
  is aligned inside ``aligned_random``, and regularization losses are one run's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tapeshift.compat import tf1_layers
from tapeshift.compat._tf import tensorflow
from tapeshift.compat.errors import CompatError


class TF1ModelError(CompatError):
    """A TF1 model function asked for a variable the adapter cannot give it (names the variable)."""


@dataclass(frozen=True)
class VariableSpec:
    """One variable the net makes: its name without ``:0``, shape, dtype and role."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    trainable: bool


@contextlib.contextmanager
def _no_variable_creation(where: str, owner: str):
    """Refuse variables made outside ``get_variable`` (they could not be carried by name)."""
    tf = tensorflow()

    def refuse(next_creator, **kwargs):
        raise TF1ModelError(
            f"{where}: the net created variable {kwargs.get('name')!r} directly "
            "(tf.Variable or a Keras layer), not through tf.compat.v1.get_variable; "
            f"{owner} can only give the net variables it asks for by name"
        )

    with tf.variable_creator_scope(refuse):
        yield


class _RunCollections:
    """The variable collections of one run, filled as TF1's ``get_variable`` filled them.

    TF1 adds a variable to ``GLOBAL_VARIABLES`` (or the ``collections`` asked
    for) and, if trainable, ``TRAINABLE_VARIABLES`` when it creates it, so a net
    that reads ``tf.trainable_variables()`` (an L2 penalty over all weights)
    sees its own variables. A run creates none: the graph backend's collections
    hold every parameter (moving statistics too, as trainable), eager execution
    has none. During a run the collections a variable would join hold exactly
    the variables handed out so far in this run, in that order; they are
    restored afterwards.
    """

    def __init__(self) -> None:
        self.saved: dict[str, list] = {}
        self.seen: set[str] = set()

    def _ref(self, key: str) -> list:
        v1 = tensorflow().compat.v1
        ref = v1.get_collection_ref(key)
        if key not in self.saved:
            self.saved[key] = list(ref)
            del ref[:]
        return ref

    @contextlib.contextmanager
    def active(self):
        v1 = tensorflow().compat.v1
        keys = v1.GraphKeys
        for key in (keys.GLOBAL_VARIABLES, keys.LOCAL_VARIABLES, keys.TRAINABLE_VARIABLES,
                    keys.MODEL_VARIABLES):
            self._ref(key)
        try:
            yield self
        finally:
            for key, items in self.saved.items():
                v1.get_collection_ref(key)[:] = items

    def add(self, name: str, var, spec: VariableSpec, collections) -> None:
        if name in self.seen:
            return
        self.seen.add(name)
        keys = tensorflow().compat.v1.GraphKeys
        joined = list(collections) if collections is not None else [keys.GLOBAL_VARIABLES]
        if spec.trainable and keys.TRAINABLE_VARIABLES not in joined:
            joined.append(keys.TRAINABLE_VARIABLES)
        for key in dict.fromkeys(joined):
            self._ref(key).append(var)


class TF1Model:
    """A variable-creating TF1 ``net(inputs, is_training) -> target`` as a compat model.

    ``example_inputs`` (a dict of arrays) gives the input shapes and dtypes for the
    discovery run. ``seed`` is the graph-level seed of that run (the initial
    values are the same for the same seed; to start from a legacy run's values,
    pass them to ``with_values``).
    ``layer_cuts=True`` marks each slim and ``tf.layers`` layer's output as a cut
    named by its scope.
    """

    _needs_tf_slim = False

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
        if self._needs_tf_slim:
            tf1_layers.require_tf_slim()
        self.net = net
        self.is_training = is_training
        self.seed = int(seed)
        self.layer_cuts = layer_cuts
        self.example_inputs = {n: np.asarray(v) for n, v in example_inputs.items()}
        specs, values = self._discover()
        self.variables: tuple[VariableSpec, ...] = specs
        self.params: dict[str, np.ndarray] = values

    @property
    def _kind(self) -> str:
        return type(self).__name__

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
    def with_values(self, values: Mapping[str, Any]):
        """A copy whose parameters start from ``values`` (by variable name; others unchanged).

        Use it to carry variables between backends or from a legacy checkpoint:
        ``model.with_values(fn.variable_values())``.
        """
        params = dict(self.params)
        for name, value in values.items():
            if name not in params:
                raise TF1ModelError(
                    f"value given for {name!r}, which is not a variable of the net; "
                    f"its variables are {sorted(params)}"
                )
            spec = self.spec(name)
            arr = np.asarray(value)
            if arr.shape != spec.shape:
                raise TF1ModelError(
                    f"value for {name!r} has shape {arr.shape}, but the variable has "
                    f"shape {spec.shape}"
                )
            params[name] = arr.astype(spec.dtype, copy=True)
        return self._copy(params=params)

    def with_training(self, is_training: bool):
        """The same variables and values, with the net run in training or inference mode."""
        if not isinstance(is_training, bool):
            raise TypeError(f"is_training must be True or False, got {is_training!r}")
        return self._copy(is_training=is_training)

    def _copy(self, **changes):
        new = object.__new__(type(self))
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
            raise TF1ModelError(
                f"the net's variables {missing} are not among the parameters given "
                f"({sorted(params)}); pass {self._kind}.params"
            )
        specs = {v.name: v for v in self.variables}
        for name, spec in specs.items():
            _check_parameter(name, params[name], spec)
        mode = "training" if self.is_training else "inference"
        collections = _RunCollections()

        def lookup(getter, name, *args, shape=None, dtype=None, **kwargs):
            spec = specs.get(name)
            if spec is None:
                raise TF1ModelError(
                    f"the net asked for variable {name!r} (shape {_shape(shape)}) in "
                    f"{mode} mode, which the discovery run did not create: the net must "
                    f"build the same variables on every run. It made: {sorted(specs)}"
                )
            asked = _shape(shape)
            if shape is not None and tuple(tf.TensorShape(shape).as_list()) != spec.shape:
                raise TF1ModelError(
                    f"the net asked for variable {name!r} with shape {asked} in {mode} "
                    f"mode, but the discovery run made it with shape {spec.shape}"
                )
            if dtype is not None and tf.as_dtype(dtype).base_dtype.name != spec.dtype:
                raise TF1ModelError(
                    f"the net asked for variable {name!r} as {tf.as_dtype(dtype).name} in "
                    f"{mode} mode, but the discovery run made it as {spec.dtype}"
                )
            collections.add(name, params[name], spec, kwargs.get("collections"))
            return params[name]

        with _no_variable_creation(f"{self._kind}.model", self._kind), collections.active():
            target = self._run_net(inputs, lookup)
        return target

    # -- internals ----------------------------------------------------------
    def _libraries(self, stack: contextlib.ExitStack,
                   discovering: bool) -> tf1_layers.Regularization:
        """Enter what the layer libraries need while the net runs (``tf1_layers``)."""
        slim = self._needs_tf_slim or tf1_layers.tf_slim_available()
        names = tf1_layers.CutNames() if self.layer_cuts else None
        stack.enter_context(tf1_layers.legacy_layers())
        layers = tf1_layers.legacy_layers_module()
        tf_layers_base = None if layers is None else tf1_layers.legacy_layer_base(layers)
        if slim:
            stack.enter_context(tf1_layers.slim_fixes())
            if names is not None:
                stack.enter_context(tf1_layers.slim_layer_cuts(names))
            stack.enter_context(tf1_layers.slim_ops())
        if tf_layers_base is not None:
            stack.enter_context(tf1_layers.tf_layer_calls(tf_layers_base, names, self._stale_layer))
        stack.enter_context(tf1_layers.keras_dropout())
        if discovering:  # initializers run only there
            stack.enter_context(tf1_layers.keras_v1_initializers())
        return stack.enter_context(
            tf1_layers.regularization([tf1_layers.slim_layer_base(), tf_layers_base]))

    def _stale_layer(self, name: str) -> TF1ModelError:
        return TF1ModelError(
            f"the net called the tf.layers layer object {name!r}, which was built before "
            f"this run (made outside the net, it keeps the variables of the graph it was "
            f"first called in); {self._kind} hands out variables only to get_variable calls "
            f"made while the net runs: create the layer inside the net, or call the "
            f"functional form (tf.compat.v1.layers.dense(...))"
        )

    def _run_net(self, inputs, resolve, discovering=False):
        """Run ``net``, its variables given by ``resolve``; attach graph-mode update ops.

        ``resolve(getter, name, **kwargs)`` is a custom getter without ``regularizer``.
        """
        tf = tensorflow()
        v1 = tf.compat.v1
        graph_mode = not tf.executing_eagerly()
        before = list(v1.get_collection(v1.GraphKeys.UPDATE_OPS)) if graph_mode else []
        with contextlib.ExitStack() as stack:
            regularization = self._libraries(stack, discovering)

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
                "the net must return one tensor (the target); it returned a "
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
                raise TF1ModelError(
                    f"variable {name!r} is partitioned ({type(var).__name__}); {self._kind} "
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
            self._run_net(inputs, recording_getter, discovering=True)
            made = {v.op.name: v for v in v1.global_variables() + v1.local_variables()}
            trainable = {v.op.name for v in v1.trainable_variables()}
            stray = [n for n in made if n not in order]
            if stray:
                raise TF1ModelError(
                    f"discovery: the net created variable(s) {stray} directly (tf.Variable "
                    f"or a Keras layer), not through tf.compat.v1.get_variable; {self._kind} "
                    "can only give the net variables it asks for by name"
                )
            if not order:
                raise TF1ModelError("discovery: the net made no variables")
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


def compat_arguments(model, params, options: dict):
    """``(model function, params, options)`` for compat's entry points.

    A ``TF1Model`` stands for its ``.model`` with its ``.params`` (values given
    in ``params`` replace them by variable name) and ``wrt`` defaulting to its
    trainable variables; anything else passes through.
    """
    if not isinstance(model, TF1Model):
        if params is None:
            raise TypeError("params are required (a dict of arrays) unless the model is a TF1Model")
        return model, params, options
    options = dict(options)
    options.setdefault("wrt", model.trainable)
    unknown = [n for n in params or {} if n not in model.params]
    if unknown:
        raise TF1ModelError(
            f"params given for {unknown}, which are not variables of the net (its variables "
            f"are {sorted(model.params)}); with a {model._kind}, pass the inputs as inputs=..."
        )
    return model.model, {**model.params, **(params or {})}, options


def _check_parameter(name: str, variable, spec: VariableSpec) -> None:
    """The backend's variable ``name`` has the dtype and shape the net makes it with."""
    tf = tensorflow()
    dtype = tf.as_dtype(variable.dtype).base_dtype.name
    if dtype != spec.dtype:
        raise TF1ModelError(
            f"parameter {name!r} is {dtype}, but the net makes it as {spec.dtype}; "
            "pass values of the discovered dtypes (with_values converts them)"
        )
    shape = tuple(tf.TensorShape(variable.shape).as_list())
    if shape != spec.shape:
        raise TF1ModelError(
            f"parameter {name!r} has shape {shape}, but the net makes it with shape {spec.shape}"
        )


def _shape(shape) -> str:
    if shape is None:
        return "unspecified"
    tf = tensorflow()
    dims = tf.TensorShape(shape)
    return "unknown" if dims.rank is None else str(tuple(dims.as_list()))


def _op_name(name: str) -> str:
    from tapeshift.compat.backends.graph import _op_name as clean

    return clean(name)
