"""tapeshift.migrate.engine.toolkit.variable_store: TF1's variable store, replayed without TensorFlow.

Each case is a small TF1 program written as steps: variable scopes and name
scopes with their bodies, ``tf.get_variable``, ``tf.Variable`` and
``tf.layers.dense``, each of the last three with what TF1 does (``makes G/w``,
``uses G/w``; a layer is named by its scope). The plain tests run the steps on
the store; the `tf` tests run the same steps in a ``tf.compat.v1`` graph and
check that TensorFlow does what the table says, with its variables in the
store's order and its collections holding what the store's hold.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import List, Optional, Tuple

import pytest

from tapeshift.migrate.engine.toolkit.variable_store import AUTO, REUSE, StoreError, VariableStore


# -- the steps ----------------------------------------------------------------
@dataclass(frozen=True)
class VarScope:  # with tf.variable_scope(name, default_name=, reuse=) as <capture>:
    name: Optional[str]
    body: Tuple
    default_name: Optional[str] = None
    reuse: Optional[str] = None  # REUSE (reuse=True), AUTO (tf.AUTO_REUSE) or None
    capture: Optional[str] = None


@dataclass(frozen=True)
class Reenter:  # with tf.variable_scope(<captured>, reuse=):
    captured: str
    body: Tuple
    reuse: Optional[str] = None


@dataclass(frozen=True)
class NameScope:  # with tf.name_scope(name):
    name: str
    body: Tuple


@dataclass(frozen=True)
class GetVariable:  # tf.get_variable(name, [1], trainable=)
    name: str
    does: str
    trainable: bool = True


@dataclass(frozen=True)
class Variable:  # tf.Variable(1.0, name=, trainable=)
    name: Optional[str]
    does: str
    trainable: bool = True


@dataclass(frozen=True)
class Dense:  # tf.layers.dense(x, 4, name=, reuse=)
    does: str
    name: Optional[str] = None
    reuse: bool = False


@dataclass(frozen=True)
class ReuseVariables:  # tf.get_variable_scope().reuse_variables()
    pass


def vs(name, *body, default_name=None, reuse=None, capture=None):
    return VarScope(name, body, default_name, reuse, capture)


def reenter(captured, *body, reuse=None):
    return Reenter(captured, body, reuse)


def ns(name, *body):
    return NameScope(name, body)


def get(name, does, trainable=True):
    return GetVariable(name, does, trainable)


def var(name, does, trainable=True):
    return Variable(name, does, trainable)


def dense(does, name=None, reuse=False):
    return Dense(does, name, reuse)


REUSE_VARIABLES = ReuseVariables()
RAISES = "raises"  # what the step that fails does (its message is in ERRORS)

CASES = {
    "nested scopes": [
        vs("G", get("w", "makes G/w"),
           vs("H", get("w", "makes G/H/w"), var("v", "makes G/H/v"))),
        vs("G/H", get("u", "makes G/H/u"), var("v", "makes G/H_1/v")),
        ns("H", var("v", "makes H/v")),  # "G/H" opened the name scope G/H, not H
    ],
    "reopened scope": [
        vs("G", get("w", "makes G/w"), var("v", "makes G/v")),
        vs("G", get("u", "makes G/u"), var("v", "makes G_1/v")),  # same variable scope, new name scope
        vs("g", var("v", "makes g_2/v")),  # name scopes are made unique ignoring case
    ],
    "default_name": [
        ns("d", var("v", "makes d/v")),
        vs(None, get("w", "makes d/w"), var("v", "makes d_1/v"), default_name="d"),
        vs(None, get("w", "makes d_1/w"), var("v", "makes d_2/v"), default_name="d"),
        vs("G", vs(None, get("w", "makes G/d/w"), default_name="d")),
        # a scope's subscopes are counted afresh each time it is opened
        vs("G", vs(None, get("u", "makes G/d/u"), default_name="d")),
    ],
    "reuse=True": [
        vs("G", get("w", "makes G/w"), vs("H", get("w", "makes G/H/w"))),
        vs("G", get("w", "uses G/w"), vs("H", get("w", "uses G/H/w")), reuse=REUSE),
    ],
    "AUTO_REUSE": [
        vs("G", get("w", "makes G/w"), reuse=AUTO),
        vs("G", get("w", "uses G/w"), get("u", "makes G/u"), vs("H", get("w", "makes G/H/w")), reuse=AUTO),
        vs("G", vs("H", get("w", "uses G/H/w"), reuse=REUSE), reuse=AUTO),
    ],
    "captured scope re-entered": [
        vs("G", get("w", "makes G/w"), var("v", "makes G/v"), capture="g"),
        # the captured variable scope, in a new name scope named after it
        vs("O", reenter("g", get("w", "uses G/w"), var("v", "makes O/G/v"), reuse=REUSE)),
        reenter("g", get("u", "makes G/u"), var("v", "makes G_1/v")),
        # the captured scope's own reuse, not that of the scope it is entered in
        vs("P", reenter("g", get("z", "makes G/z")), reuse=REUSE),
    ],
    "reuse_variables()": [
        vs("G", get("w", "makes G/w"), REUSE_VARIABLES, get("w", "uses G/w")),
        # from a name scope, it is the enclosing variable scope that reuses
        vs("H", get("w", "makes H/w"), ns("n", REUSE_VARIABLES), get("w", "uses H/w")),
        # it sets the captured scope's flag: re-entered, the scope reuses
        vs("K", get("w", "makes K/w"), REUSE_VARIABLES, capture="k"),
        reenter("k", get("w", "uses K/w")),
    ],
    "name_scope": [
        ns("n", get("w", "makes w"), var("v", "makes n/v")),  # get_variable ignores name scopes
        vs("G", ns("n", get("u", "makes G/u"), var("v", "makes G/n/v"))),
        ns("n", var("v", "makes n_1/v")),
        ns("N", var("v", "makes N_2/v")),  # made unique ignoring case, spelled as written
    ],
    "tf.Variable names": [
        var(None, "makes Variable"), var(None, "makes Variable_1"),
        var("v", "makes v"), var("v", "makes v_1"), var("v_1", "makes v_1_1"),
        get("w", "makes w"), var("w", "makes w_1"),  # get_variable takes its name too
    ],
    "unnamed layers in two scopes": [
        vs("A", dense("makes A/dense"), dense("makes A/dense_1")),
        vs("B", dense("makes B/dense")),
        dense("makes dense"), dense("makes dense_1"),
        var("dense", "makes dense_2"),  # the layers' name scopes are taken
    ],
    "named layer reused": [
        dense("makes fc", name="fc"),
        dense("uses fc", name="fc", reuse=True),
        var("fc", "makes fc_2"),  # each call opened a name scope: fc, fc_1
        vs("G", dense("makes G/fc", name="fc")),
        vs("G", dense("uses G/fc", name="fc"), reuse=REUSE),
    ],
    "unnamed layer reused": [
        vs("A", dense("makes A/dense"), dense("makes A/dense_1")),
        vs("A", dense("uses A/dense"), dense("uses A/dense_1"), reuse=REUSE),
        # reuse=True on the layer: its base name, which the next one skips
        dense("makes dense"), dense("uses dense", reuse=True), dense("makes dense_1"),
        # a model function called twice
        vs("net", dense("makes net/dense"), reuse=AUTO),
        vs("net", dense("uses net/dense"), reuse=AUTO),
    ],
    "collections": [
        vs("G", get("w", "makes G/w"), var("step", "makes G/step", trainable=False), dense("makes G/dense")),
        vs("G_1", get("w", "makes G_1/w")),
        vs("G2", get("w", "makes G2/w", trainable=False)),
        get("w", "makes w"),
    ],
}

# (case, scope=, trainable_only, the entries in order: a layer by its scope)
COLLECTIONS = [
    ("collections", None, False, ["G/w", "G/step", "G/dense", "G_1/w", "G2/w", "w"]),
    ("collections", None, True, ["G/w", "G/dense", "G_1/w", "w"]),
    ("collections", "G", False, ["G/w", "G/step", "G/dense", "G_1/w", "G2/w"]),  # re.match: G_1 and G2 too
    ("collections", "G", True, ["G/w", "G/dense", "G_1/w"]),
    ("collections", "G/", False, ["G/w", "G/step", "G/dense"]),
    ("collections", "G/d", False, ["G/dense"]),
    ("collections", "G/dense/", False, ["G/dense"]),
    ("collections", "G2", True, []),
    ("collections", "H", False, []),
    ("reopened scope", "G", False, ["G/w", "G/v", "G/u", "G_1/v"]),  # case-sensitive: not g_2/v
    ("name_scope", "n", False, ["n/v", "n_1/v"]),
    ("unnamed layers in two scopes", "A", False, ["A/dense", "A/dense_1"]),
    ("unnamed layers in two scopes", "dense", False, ["dense", "dense_1", "dense_2"]),
    ("unnamed layer reused", None, False, ["A/dense", "A/dense_1", "dense", "dense_1", "net/dense"]),
]

# programs that fail: (steps, the store's message, TensorFlow's message)
ERRORS = {
    "get_variable of a name made before": (
        [vs("G", get("w", "makes G/w")), vs("G", get("w", RAISES))],
        "Variable G/w already exists", "Variable G/w already exists"),
    "reuse=True, a missing name": (
        [vs("G", get("w", RAISES), reuse=REUSE)],
        "Variable G/w does not exist", "Variable G/w does not exist"),
    "reuse=True inside AUTO_REUSE": (
        [vs("G", vs("H", get("w", RAISES), reuse=REUSE), reuse=AUTO)],
        "Variable G/H/w does not exist", "Variable G/H/w does not exist"),
    "reuse_variables() inside AUTO_REUSE": (
        [vs("G", REUSE_VARIABLES, get("w", RAISES), reuse=AUTO)],
        "Variable G/w does not exist", "Variable G/w does not exist"),
    "a captured scope re-entered in a reusing one": (
        [vs("G", get("w", "makes G/w"), capture="g"), vs("O", reenter("g", get("w", RAISES)), reuse=REUSE)],
        "Variable G/w already exists", "Variable G/w already exists"),
    "an unnamed layer in a reopened scope": (
        [vs("A", dense("makes A/dense")), vs("A", dense(RAISES))],
        "Layer A/dense already exists", "Variable A/dense/kernel already exists"),
    "a named layer made twice": (
        [dense("makes fc", name="fc"), dense(RAISES, name="fc")],
        "Layer fc already exists", "Variable fc/kernel already exists"),
    "a layer with reuse=True, missing": (
        [dense(RAISES, name="fc", reuse=True)],
        "Layer fc does not exist", "Variable fc/kernel does not exist"),
    "a layer with reuse=True inside AUTO_REUSE, missing": (
        [vs("G", dense(RAISES, reuse=True), reuse=AUTO)],
        "Layer G/dense does not exist", "Variable G/dense/kernel does not exist"),
    "default_name with reuse": (
        [vs(None, default_name="d", reuse=REUSE)],
        r"default_name=.* with reuse", "reuse=True cannot be used without a name_or_scope"),
    "neither a name nor default_name": (
        [vs(None)],
        "neither a name nor default_name", "name_or_scope is required"),
}


# -- the two interpreters ---------------------------------------------------------
def _run(steps, program, done: Optional[List[str]] = None) -> List[str]:
    """Run ``steps`` on ``program``: what each tf.get_variable, tf.Variable and layer did."""
    done = [] if done is None else done
    for step in steps:
        if isinstance(step, (VarScope, Reenter, NameScope)):
            with program.enter(step):
                _run(step.body, program, done)
        elif isinstance(step, ReuseVariables):
            program.reuse_variables()
        else:
            name, created = program.leaf(step)
            done.append(f"{'makes' if created else 'uses'} {name}")
    return done


def _expected(steps) -> List[str]:
    out = []
    for step in steps:
        if isinstance(step, (VarScope, Reenter, NameScope)):
            out += _expected(step.body)
        elif not isinstance(step, ReuseVariables):
            out.append(step.does)
    return out


class _Store:
    def __init__(self):
        self.store = VariableStore()
        self.captured = {}

    @contextlib.contextmanager
    def enter(self, step):
        if isinstance(step, NameScope):
            self.store.open_name_scope(step.name)
        elif isinstance(step, Reenter):
            self.store.reenter(self.captured[step.captured], step.reuse)
        else:
            scope = self.store.open_variable_scope(step.name, step.default_name, step.reuse)
            if step.capture:
                self.captured[step.capture] = scope
        try:
            yield
        finally:
            self.store.close()

    def reuse_variables(self):
        self.store.reuse_variables()

    def leaf(self, step):
        if isinstance(step, GetVariable):
            entry, created = self.store.get_variable(step.name, step.name, step.trainable)
        elif isinstance(step, Variable):
            entry, created = self.store.add_variable(self.store.variable_name(step.name), "v", step.trainable), True
        else:
            entry, created = self.store.layer(step.name, "dense", "layer", True if step.reuse else None)
        return entry.name, created


class _Graph:
    """The same steps in the default ``tf.compat.v1`` graph."""

    def __init__(self, v1, layers):
        self.v1 = v1
        self.layers = layers
        self.captured = {}
        self.inputs = v1.placeholder("float32", [None, 3], name="layer_inputs")

    def _reuse(self, reuse):
        return {REUSE: True, AUTO: self.v1.AUTO_REUSE, None: None}[reuse]

    @contextlib.contextmanager
    def enter(self, step):
        if isinstance(step, NameScope):
            manager = self.v1.name_scope(step.name)
        elif isinstance(step, Reenter):
            manager = self.v1.variable_scope(self.captured[step.captured], reuse=self._reuse(step.reuse))
        else:
            manager = self.v1.variable_scope(step.name, default_name=step.default_name,
                                             reuse=self._reuse(step.reuse))
        with manager as scope:
            if getattr(step, "capture", None):
                self.captured[step.capture] = scope
            yield

    def reuse_variables(self):
        self.v1.get_variable_scope().reuse_variables()

    def leaf(self, step):
        before = len(self.v1.global_variables())
        if isinstance(step, GetVariable):
            name = self.v1.get_variable(step.name, [1], trainable=step.trainable).name.rpartition(":")[0]
        elif isinstance(step, Variable):
            named = {"name": step.name} if step.name is not None else {}
            name = self.v1.Variable(1.0, trainable=step.trainable, **named).name.rpartition(":")[0]
        else:
            outputs = self.layers.dense(self.inputs, 4, name=step.name, reuse=True if step.reuse else None)
            name = _layer_scope(outputs)
        return name, len(self.v1.global_variables()) > before


def _layer_scope(outputs) -> str:
    """The scope of the variables a dense layer's outputs are computed from
    (the ones it made or the ones it reused)."""
    found, seen, ops = set(), set(), [outputs.op]
    while ops:
        op = ops.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in ("VariableV2", "VarHandleOp"):
            found.add(op.name)
        else:
            ops.extend(t.op for t in op.inputs)
    scope = min(found).rpartition("/")[0]
    assert found == {f"{scope}/kernel", f"{scope}/bias"}
    return scope


def _store(steps) -> VariableStore:
    program = _Store()
    _run(steps, program)
    return program.store


def _tensorflow(steps):
    """Run ``steps`` in a new ``tf.compat.v1`` graph: (what each step did, the graph)."""
    import tensorflow as tf
    from tf_keras.api._v1.keras.__internal__.legacy import layers

    graph = tf.Graph()
    with graph.as_default():
        done = _run(steps, _Graph(tf.compat.v1, layers))
    return done, graph


def _graph_collection(graph, scope, trainable_only) -> List[str]:
    key = "trainable_variables" if trainable_only else "variables"  # tf.compat.v1.GraphKeys
    return [v.name.rpartition(":")[0] for v in graph.get_collection(key, scope)]


def _variable_names(entries) -> List[str]:
    """The TF1 names of the variables ``entries`` stand for (a dense layer: its kernel and bias)."""
    out = []
    for entry in entries:
        out += [f"{entry.name}/kernel", f"{entry.name}/bias"] if entry.kind == "layer" else [entry.name]
    return out


def _scopes_to_ask(store: VariableStore) -> List[str]:
    """Every ``scope=`` worth comparing: each name's first letter and its prefixes at a "/"
    (with and without the "/"), down to a layer's own scope."""
    out = set()
    for entry in store.entries.values():
        parts = entry.name.split("/")
        out.add(entry.name[0])
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            out.add(prefix)
            if i < len(parts) or entry.kind == "layer":
                out.add(prefix + "/")
    return sorted(out)


# -- the store ------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_store_names(case):
    program = _Store()
    assert _run(CASES[case], program) == _expected(CASES[case])
    assert program.store.scope.name == "" and program.store.scope.name_scope == ""


@pytest.mark.parametrize("case, scope, trainable_only, expected", COLLECTIONS)
def test_store_collection(case, scope, trainable_only, expected):
    store = _store(CASES[case])
    assert [e.name for e in store.collection(scope, trainable_only)] == expected


@pytest.mark.parametrize("case", ERRORS)
def test_store_errors(case):
    steps, message, _ = ERRORS[case]
    program = _Store()
    with pytest.raises(StoreError, match=message):
        _run(steps, program)
    assert [d for d in _expected(steps) if d != RAISES] == [
        f"makes {e.name}" for e in program.store.collection()]


@pytest.mark.parametrize("scope, message", [
    ("G.*", r"scope='G\.\*' is a regular expression"),
    ("(G|H)/", "is a regular expression"),
    ("G/dense/k", "scope='G/dense/k' picks some of the variables of layer G/dense"),
    ("G/dense/kernel", "picks some of the variables of layer G/dense"),
])
def test_collection_scope_that_cannot_be_answered(scope, message):
    store = _store(CASES["collections"])
    with pytest.raises(StoreError, match=message):
        store.collection(scope)


def test_get_variable_on_a_layer_and_a_layer_on_a_variable():
    store = _store([vs("G", dense("makes G/dense"), get("w", "makes G/w"), reuse=AUTO)])
    store.open_variable_scope("G", reuse=AUTO)
    with pytest.raises(StoreError, match="G/dense is a layer's scope, not a variable"):
        store.get_variable("dense", "h")
    with pytest.raises(StoreError, match="G/w is a variable, not a layer's scope"):
        store.layer("w", "dense", "h")


def test_entries_keep_what_they_were_made_with():
    store = VariableStore()
    store.open_variable_scope("G", reuse=AUTO)
    w, w_created = store.get_variable("w", "w_var", trainable=False, info={"shape": "[3]"})
    conv, conv_created = store.layer(None, "conv2d", "conv", info={"signature": "filters=8"})
    assert (w.name, w.handle, w.kind, w.trainable, w.order, w.info, w_created) == (
        "G/w", "w_var", "variable", False, 0, {"shape": "[3]"}, True)
    assert (conv.name, conv.handle, conv.kind, conv.trainable, conv.order, conv.info, conv_created) == (
        "G/conv2d", "conv", "layer", True, 1, {"signature": "filters=8"}, True)
    # looked up: the same entries, with the handles they were made with
    assert store.get_variable("w", "other") == (w, False)
    assert store.layer(None, "conv2d", "other", reuse=True) == (conv, False)
    assert (w.handle, conv.handle, len(store.entries)) == ("w_var", "conv", 2)


def test_scopes_pass_initializer_and_dtype_down():
    store = VariableStore()
    outer = store.open_variable_scope("G", initializer="tf.zeros_initializer()", dtype="tf.float64")
    inner = store.open_variable_scope("H", dtype="tf.float16")
    named = store.open_name_scope("n")
    assert (outer.name, outer.name_scope, outer.initializer, outer.dtype) == (
        "G", "G", "tf.zeros_initializer()", "tf.float64")
    assert (inner.name, inner.name_scope, inner.initializer, inner.dtype) == (
        "G/H", "G/H", "tf.zeros_initializer()", "tf.float16")
    assert (named.name, named.name_scope, named.initializer, named.dtype) == (
        "G/H", "G/H/n", "tf.zeros_initializer()", "tf.float16")


def test_close_at_the_top_is_a_mistake():
    store = VariableStore()
    with pytest.raises(AssertionError, match="no scope to close"):
        store.close()


# -- TensorFlow -----------------------------------------------------------------------
@pytest.mark.tf
@pytest.mark.parametrize("case", CASES)
def test_tensorflow_names(case):
    done, graph = _tensorflow(CASES[case])
    assert done == _expected(CASES[case])
    assert _graph_collection(graph, None, False) == _variable_names(_store(CASES[case]).collection())


@pytest.mark.tf
@pytest.mark.parametrize("case", CASES)
def test_tensorflow_collections(case):
    _, graph = _tensorflow(CASES[case])
    store = _store(CASES[case])
    for trainable_only in (False, True):
        got = {scope: _graph_collection(graph, scope, trainable_only) for scope in _scopes_to_ask(store)}
        assert got == {scope: _variable_names(store.collection(scope, trainable_only)) for scope in got}


@pytest.mark.tf
@pytest.mark.parametrize("case, scope, trainable_only, expected", COLLECTIONS)
def test_tensorflow_collection(case, scope, trainable_only, expected):
    _, graph = _tensorflow(CASES[case])
    layers = {e.name for e in _store(CASES[case]).entries.values() if e.kind == "layer"}
    assert _graph_collection(graph, scope, trainable_only) == [
        n for name in expected for n in ([f"{name}/kernel", f"{name}/bias"] if name in layers else [name])]


@pytest.mark.tf
@pytest.mark.parametrize("case", ERRORS)
def test_tensorflow_errors(case):
    steps, _, message = ERRORS[case]
    with pytest.raises((ValueError, TypeError), match=message):
        _tensorflow(steps)
