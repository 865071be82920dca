"""What each TF1 layer library needs while a TF1 model function runs on a compat backend.

``tapeshift.compat.tf1_model.TF1Model`` runs an unmodified TF1 model function on
the graph, tape and function backends. The variables are its business; this
module holds what the layer libraries need around that, each as a context
manager that is active only while the function runs:

- **tf-slim 1.1.0** (``slim_fixes``, ``slim_ops``): ``ops.Tensor`` is gone from
  current TensorFlow, which breaks ``batch_norm``; slim's default ``batch_norm``
  on 4-D input asks for the Keras-1 layer; slim's pooling has no name eagerly.
- **tf.compat.v1.layers on Keras 3** (``legacy_layers``): TensorFlow routes
  ``tf.compat.v1.layers`` (and ``tf.compat.v1.nn.rnn_cell``) to tf-keras' legacy
  module only when ``TF_USE_LEGACY_KERAS=1`` was set before TensorFlow was
  imported; otherwise every attribute raises "not available with Keras 3". Within
  the block the same loaders hand out tf-keras' legacy layers, as
  ``tapeshift run-legacy`` does for a script; ``tf.keras`` stays as installed.
- **layer outputs as cuts** (``slim_layer_cuts``, ``tf_layer_calls``): every slim
  layer and every ``tf.layers`` layer output becomes ``compat.cut(<its scope>, output)``;
  a ``tf.layers`` layer object built before the run (outside the net) is refused.
- **initial values** (``keras_v1_initializers``): tf-keras' default initializers
  are the graph-seeded TF1 ones in the discovery run, as under TF1.
- **dropout** (``keras_dropout``): ``tf.layers.dropout`` reaches ``tf.nn.dropout``
  through tf-keras' own ``tensorflow.compat.v2`` module object, which is not
  the ``tf.nn`` that ``aligned_random`` patches; within the block it goes
  through ``tf.nn.dropout``, so it is aligned like every other draw.
- **regularizers** (``regularization``): one run's losses in
  ``REGULARIZATION_LOSSES``, the same on every backend.

The patches are module and class attributes, restored on exit; like
``aligned_random`` they are not thread-safe.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from typing import Any

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.cuts import cut
from tapeshift.compat.errors import CompatError

#: the module TensorFlow gives ``tf.compat.v1.layers`` with TF_USE_LEGACY_KERAS=1
TF_KERAS_LEGACY_LAYERS = "tf_keras.api._v1.keras.__internal__.legacy.layers"
_TF_KERAS_V1 = "tf_keras.api._v1.keras"
_LEGACY_SUBMODULE = "__internal__.legacy."


@contextlib.contextmanager
def _patched(owner, attr, value) -> Iterator[None]:
    saved = getattr(owner, attr)
    setattr(owner, attr, value)
    try:
        yield
    finally:
        setattr(owner, attr, saved)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # pragma: no cover - a broken installation
        return False


# -- tf-slim ---------------------------------------------------------------------------


def require_tf_slim():
    """The ``tf_slim`` module, or CompatError saying how to install it."""
    try:
        import tf_slim
    except ImportError as exc:  # pragma: no cover - exercised without tf-slim only
        raise CompatError(
            "tapeshift.compat.slim needs tf-slim: pip install 'tapeshift[tf]' (or pip install tf-slim)"
        ) from exc
    return tf_slim


def tf_slim_available() -> bool:
    return "tf_slim" in sys.modules or _installed("tf_slim")


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
    require_tf_slim()
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
        stack.enter_context(slim_ops())
        _PROCESS_FIXES = stack  # never closed: the fixes last as long as the process


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
      ``TF1Model`` runs them with the target.
    """

    def __init__(self, ops):
        self._ops = ops
        self.GraphKeys = _GraphKeys(ops.GraphKeys)

    def __getattr__(self, attr):
        return getattr(self._ops, attr)

    def name_scope(self, name, default_name=None, values=None, skip_on_eager=True):
        return self._ops.name_scope(name, default_name, values, skip_on_eager=False)


@contextlib.contextmanager
def slim_ops() -> Iterator[None]:
    from tf_slim.layers import layers

    with _patched(layers, "ops", _SlimOps(layers.ops)):
        yield


# -- tf.compat.v1.layers on Keras 3 ----------------------------------------------------

_NATIVE: dict[str, bool] = {}


def _native_legacy_layers_work() -> bool:
    """Whether TensorFlow's own ``tf.compat.v1.layers`` works (Keras 2, or TF_USE_LEGACY_KERAS)."""
    if "native" not in _NATIVE:
        tf = tensorflow()
        try:
            getattr(tf.compat.v1.layers, "Layer")  # Keras 3: "`Layer` is not available ..."
            _NATIVE["native"] = True
        except (AttributeError, ImportError):
            _NATIVE["native"] = False
    return _NATIVE["native"]


def legacy_layers_module():
    """The module a TF1 model's ``tf.compat.v1.layers`` is while it runs, or None.

    TensorFlow's own where it works; else tf-keras' legacy layers (imported here);
    None on Keras 3 without the tf-keras package.
    """
    tf = tensorflow()
    if _native_legacy_layers_work():
        return tf.compat.v1.layers
    if not _installed("tf_keras"):
        return None
    return importlib.import_module(TF_KERAS_LEGACY_LAYERS)


@contextlib.contextmanager
def legacy_layers() -> Iterator[None]:
    """Within the block, ``tf.compat.v1.layers`` (and ``tf.compat.v1.nn.rnn_cell``) work on Keras 3.

    TensorFlow builds these names as lazy loaders; there are several loader
    objects (one per ``tensorflow.compat.v1`` module object the process made),
    and a model module may hold any of them (``import tensorflow.compat.v1 as
    tf; tf.layers``, ``tf.compat.v1.layers``, ``from tensorflow.compat.v1 import
    layers``). So the block changes the loader class itself: a v1 loader of a
    legacy submodule answers from ``tf_keras.api._v1.keras.<submodule>``, the
    module TF_USE_LEGACY_KERAS=1 would have given it. Nothing changes where
    TensorFlow's own names work.
    """
    if _native_legacy_layers_work():
        yield
        return
    from tensorflow.python.util.lazy_loader import KerasLazyLoader

    original = KerasLazyLoader.__getattr__
    has_tf_keras = _installed("tf_keras")

    def __getattr__(self, item):
        state = vars(self)
        submodule = state.get("_tfll_submodule") or ""
        if item.startswith("_") or state.get("_tfll_mode") != "v1" \
                or not submodule.startswith(_LEGACY_SUBMODULE):
            return original(self, item)
        if not has_tf_keras:
            public = "layers" if submodule.endswith(".layers") else "nn." + submodule.split(".")[-1]
            raise AttributeError(
                f"tf.compat.v1.{public}.{item} needs the tf-keras package on Keras 3 "
                "(TensorFlow routes it to tf-keras' legacy layers): pip install tf-keras "
                "(or pip install 'tapeshift[tf]')")
        return getattr(importlib.import_module(f"{_TF_KERAS_V1}.{submodule}"), item)

    with _patched(KerasLazyLoader, "__getattr__", __getattr__):
        yield


def legacy_layer_base(layers_module) -> type | None:
    """The legacy ``Layer`` base class behind ``layers_module.Dense`` (tf.layers or slim)."""
    for cls in layers_module.Dense.__mro__:
        if cls.__name__ == "Layer" and cls.__module__.endswith("legacy_tf_layers.base"):
            return cls
    return None  # pragma: no cover - a TensorFlow whose layers are built differently


def slim_layer_base() -> type | None:
    """The Keras-1 ``Layer`` base class behind slim's ``fully_connected`` and ``conv2d``."""
    try:
        from tensorflow.python.layers import core
    except ImportError:  # pragma: no cover - a TensorFlow without its Keras-1 copy
        return None
    return legacy_layer_base(core)


# -- initial values --------------------------------------------------------------------


@contextlib.contextmanager
def keras_v1_initializers() -> Iterator[None]:
    """Within the block, tf-keras resolves initializer names as it does with TF2 behaviour off.

    A ``tf.layers`` layer without an explicit initializer gets
    ``initializers.get("glorot_uniform")`` (``"zeros"``, ``"ones"`` for biases and
    batch norm). With TF2 behaviour on, tf-keras maps the name to its V2 class,
    whose unseeded draws take their seed from Python's ``random`` module, so
    the graph-level seed of the discovery run did not fix them (two discoveries
    with the same seed gave different kernels). With TF2 behaviour off, as under
    TF1, the name maps to ``tf.compat.v1.glorot_uniform_initializer()``, seeded
    by the graph. The block gives names that mapping; initializer objects pass
    through unchanged.
    """
    initializers = sys.modules.get("tf_keras.src.initializers")
    api = getattr(getattr(getattr(initializers, "tf", None), "__internal__", None), "tf2", None)
    if initializers is None or api is None or not hasattr(api, "enabled"):
        yield
        return
    original = initializers.get

    def get(identifier):
        if not isinstance(identifier, (str, dict)):
            return original(identifier)
        # the lookup table is rebuilt for V1 here and for V2 again at the next
        # lookup outside the block (tf-keras compares the flag each time)
        with _patched(api, "enabled", lambda: False):
            return original(identifier)

    with _patched(initializers, "get", get):
        yield


# -- dropout -----------------------------------------------------------------------------


@contextlib.contextmanager
def keras_dropout() -> Iterator[None]:
    """Within the block, tf-keras' ``tf.nn.dropout`` is looked up on ``tensorflow.nn``.

    tf-keras calls ``tf.nn.dropout`` on its own ``tensorflow.compat.v2`` module
    object, a different module from ``tensorflow.nn``; the forwarder calls
    whatever ``tensorflow.nn.dropout`` is at that moment (the same function,
    or ``aligned_random``'s stateless one inside that block).
    """
    backend = sys.modules.get("tf_keras.src.backend")
    nn = getattr(getattr(backend, "tf", None), "nn", None)
    if nn is None or not hasattr(nn, "dropout"):
        yield
        return
    tf = tensorflow()

    def dropout(*args, **kwargs):
        return tf.nn.dropout(*args, **kwargs)

    with _patched(nn, "dropout", dropout):
        yield


# -- layer outputs as cuts ---------------------------------------------------------------


class CutNames:
    """Cut names of one run: a repeated name gets ``_1``, ``_2``... as a graph names scopes."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def take(self, name: str) -> str:
        name = name.removesuffix("/")
        if name in self.used:  # a second eager pool, or a layer reused with reuse=True
            i = 1
            while f"{name}_{i}" in self.used:
                i += 1
            name = f"{name}_{i}"
        self.used.add(name)
        return name


@contextlib.contextmanager
def slim_layer_cuts(names: CutNames) -> Iterator[None]:
    """Each slim layer output becomes ``compat.cut(<layer scope>, output)``.

    Slim layers end with ``utils.collect_named_outputs(collections, alias, out)``;
    the alias is the layer's variable scope (``conv1``, ``Conv_1/BatchNorm``) or,
    for layers without variables (pooling, flatten), its name scope, which a graph
    makes unique (``MaxPool2D_1``) and eager execution does not (``slim_ops``
    gives it one). A repeated alias (an eager pool, a layer called again with
    ``reuse=True``) gets ``_1``, ``_2``... per run, the way a graph names scopes,
    so the cut names are the same on every backend.
    """
    from tf_slim.layers import utils

    original = utils.collect_named_outputs

    def collect_named_outputs(collections, alias, outputs):
        if not isinstance(alias, str) or not alias:
            return original(collections, alias, outputs)
        return original(collections, alias, cut(names.take(alias), outputs))

    with _patched(utils, "collect_named_outputs", collect_named_outputs):
        yield


@contextlib.contextmanager
def tf_layer_calls(layer_base: type, names: CutNames | None,
                   stale: Callable[[str], Exception]) -> Iterator[None]:
    """Each ``tf.layers`` layer call of one run (``layer_base``: the legacy ``Layer``).

    - With ``names``, its output becomes ``compat.cut(<scope>, output)``: the
      variable scope the layer captured (``dense``, ``block/dense_1``,
      ``pool1``), which TF's scope counters make unique in a graph and eagerly
      alike; a repeated name (a layer called again with ``reuse=True``) gets
      ``_1``, ``_2``... per run, so the cut names are the same on every backend.
    - A layer object that was built before this run (made outside the net, so
      it holds the variables of an earlier run's graph) raises ``stale(name)``:
      only ``get_variable`` calls made while the net runs get the backend's
      variables.
    """
    tf = tensorflow()
    original = layer_base.__call__
    built_here: set[int] = set()
    depth = [0]

    def __call__(layer, inputs, *args, **kwargs):
        if getattr(layer, "built", False) and id(layer) not in built_here:
            raise stale(getattr(layer, "name", type(layer).__name__))
        built_here.add(id(layer))
        depth[0] += 1
        try:
            outputs = original(layer, inputs, *args, **kwargs)
        finally:
            depth[0] -= 1
        scope = getattr(layer, "_scope", None)
        if names is None or depth[0] or getattr(layer, "_keras_style", True) \
                or scope is None or not isinstance(outputs, tf.Tensor):
            return outputs  # a layer inside a layer, a Keras-style layer, or several outputs
        return cut(names.take(scope.name), outputs)

    with _patched(layer_base, "__call__", __call__):
        yield


# -- regularizers ------------------------------------------------------------------------


class Regularization:
    """Regularization losses of one run, collected the same way on every backend.

    TF1 adds ``regularizer(v)`` to ``REGULARIZATION_LOSSES`` when ``get_variable``
    *creates* ``v``, and the Keras-1 layers (slim's ``fully_connected`` and
    ``conv2d``, every ``tf.layers`` layer) add theirs only in a graph and only
    for a variable that did not exist yet; eagerly there is no collection. A run
    creates no variable, so the adapter takes both regularizers over
    (``get_variable``'s ``regularizer`` argument and the layers'
    ``add_weight(regularizer=...)``) and adds each variable's loss once per run
    to a collection that holds only this run's losses.
    ``tf.losses.get_regularization_loss()`` and ``get_total_loss()`` in the
    model then see the same terms in a graph, eagerly and in ``tf.function``.
    """

    def __init__(self) -> None:
        self.names: dict[int, str] = {}  # id(variable) -> name, for the Keras-1 layers
        self.added: set[str] = set()

    def add(self, name: str, var: Any, regularizer) -> None:
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


@contextlib.contextmanager
def regularization(layer_bases) -> Iterator[Regularization]:
    """A fresh ``REGULARIZATION_LOSSES`` for one run; the layers' regularizers go through it."""
    tf = tensorflow()
    run = Regularization()
    ref = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES)
    saved = list(ref)
    del ref[:]
    try:
        with contextlib.ExitStack() as stack:
            for base in dict.fromkeys(b for b in layer_bases if b is not None):
                stack.enter_context(_patched(base, "add_weight", run.add_weight(base.add_weight)))
            yield run
    finally:
        ref[:] = saved
