"""TF1's variable store, replayed statically: which variable a name means, and whether it is new.

A TF1 program names its variables through scopes: ``tf.variable_scope("G")``
prefixes what ``tf.get_variable`` and ``tf.layers`` create (``G/w``,
``G/dense/kernel``), its ``reuse`` flag decides whether a name is created or
looked up, and ``tf.name_scope`` (which every variable scope also opens)
prefixes what ``tf.Variable`` creates. TF2 has no store: a ``tf.Variable`` is
created where its line runs, and a Keras layer creates its variables once, at
its first call. So a migration must know, for each TF1 call, which variable it
means, whether it creates it, and its TF1 name, and create it once in TF2 under
that name. This module answers those questions for code whose scopes and
names are known without running it; it knows nothing of syntax trees (the
rules read the tree and ask it).

The rules it follows are TensorFlow 1's, checked against ``tf.compat.v1`` in
``tests/migrate/engine/toolkit/test_variable_store.py``:

* a variable scope's name is ``parent/name``; opened again, it is the same
  scope (variables are not renamed), but the name scope it opens is made
  unique (``G_1``), which renames what ``tf.Variable`` creates in it; a
  captured scope re-entered is the same variable scope too, in a new name
  scope named after it (``O/G``, ``G_1``);
* ``default_name=`` is made unique among the scopes of the parent opened since
  the parent was (``d``, ``d_1``; TF1 counts them afresh each time a scope is
  opened);
* ``reuse=True`` (and everything under it) looks names up: a missing name is an
  error; ``AUTO_REUSE`` looks up or creates; otherwise a name that exists is an
  error ("Variable G/w already exists"); a scope's own ``reuse=`` (and
  ``reuse_variables()``) wins over its parent's, and a captured scope keeps its
  own when re-entered;
* an unnamed ``tf.layers`` layer is named after its class, made unique like a
  ``default_name`` (``dense``, ``dense_1``), unless called with
  ``reuse=True``, when the base name itself is looked up;
* ``tf.get_variable`` and every scope take a name in the graph, so a
  ``tf.Variable`` named ``w`` or ``dense`` after them is ``w_1``, ``dense_1``;
* ``tf.get_collection(key, scope=S)`` keeps the variables whose name
  ``re.match``-es ``S`` (a prefix regex: ``G`` also matches ``G_1/v`` and
  ``G2/w``), in creation order;
* ``tf.train.get_or_create_global_step()`` makes ``global_step`` (by
  ``get_variable`` in the current variable scope, not trainable) once, and
  hands it back after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple


class StoreError(Exception):
    """What the TF1 program would do cannot be known (or it would fail): the message says why."""


#: ``reuse`` of a scope: look up, create, or either.
REUSE, CREATE, AUTO = "reuse", "create", "auto"


@dataclass
class Entry:
    """One variable, or one layer with its variables, as the TF1 program made it."""

    name: str  # full TF1 name, without ":0" (``G/w``; a layer: its scope ``G/dense``)
    handle: str  # the Python name the migrated code keeps it under
    kind: str  # "variable" or "layer"
    trainable: bool = True
    order: int = 0  # creation order among all entries
    info: dict = field(default_factory=dict)  # what the rule that made it wants to keep
    #: made under AUTO_REUSE: the same code run again looks it up (in TF1 too)
    shared: bool = False


@dataclass
class Scope:
    name: str  # full variable-scope name ("" at the top)
    name_scope: str  # full name scope ("" at the top)
    reuse: str = CREATE
    initializer: Optional[str] = None  # code of the scope's default initializer
    dtype: Optional[str] = None  # code of the scope's default dtype
    #: what the caller wants to keep with the initializer (the rule: its syntax node)
    initializer_node: object = None


#: Where the model-code rule leaves what it made for the rules after it
#: (``shared[MODEL_CODE]``: a :class:`ModelCodeFacts`).
MODEL_CODE = "model_code"
#: Where the class rule lists the trainable variables kept on objects (``"self.w"``),
#: which a tape watches by itself (``shared[VARIABLE_REFS]``: a set).
VARIABLE_REFS = "variable_refs"


@dataclass
class FunctionFacts:
    """What a model function made when the model-code rule read it (at its first call)."""

    #: the variables and layers it made, in creation order (their handles: module names)
    made: List[Entry]
    #: nothing else existed in TF1's graph when it was first called
    alone: bool


@dataclass
class ModelCodeFacts:
    #: handle -> the layer it holds (made by the model-code rule)
    layers: Dict[str, Entry] = field(default_factory=dict)
    #: handles of batch normalization layers (their call with training updates state)
    batch_norm: Set[str] = field(default_factory=set)
    #: names assigned under ``control_dependencies(UPDATE_OPS)`` (train ops that ran the updates)
    update_guarded: Set[str] = field(default_factory=set)
    #: ``tf.train.Saver`` calls whose default list the rule wrote out: ``"function:target"``
    #: (``":saver"`` at module level) -> what TF1's list also held that the eager
    #: Saver made at that line cannot (the slots of these optimizers; empty: nothing)
    savers: Dict[str, List[str]] = field(default_factory=dict)
    #: model functions read at their first call -> what they made there
    functions: Dict[str, FunctionFacts] = field(default_factory=dict)


class VariableStore:
    """The scopes open at a point of a TF1 program and the variables made so far."""

    def __init__(self) -> None:
        self._stack: List[Scope] = [Scope("", "")]
        self.entries: Dict[str, Entry] = {}
        self._order = 0
        # how often each variable scope was opened (a layer opens one too): what
        # makes default names unique
        self._variable_scopes: Dict[str, int] = {}
        # the graph's names in use (name scopes and op names share them, lower case)
        self._names_in_use: Dict[str, int] = {}
        # for each scope above the top one, what closing it does to the counts: a
        # name scope nothing (None); a variable scope resets its subscopes' (its
        # name, TF1's close_variable_subscopes); a re-entered one puts back the
        # counts it found (a dict)
        self._on_close: List[object] = []
        #: the entry of ``tf.train.get_or_create_global_step()``, once made
        self.global_step_entry: Optional[Entry] = None

    # -- scopes -----------------------------------------------------------
    @property
    def next_order(self) -> int:
        """The creation order the next variable or layer will get."""
        return self._order

    @property
    def scope(self) -> Scope:
        return self._stack[-1]

    def _unique_name(self, name: str) -> str:
        """``tf.Graph.unique_name(name)``: ``name``, then ``name_1`` ... (case-insensitive)."""
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        self._names_in_use[key] = count + 1
        if count == 0:
            return name
        base = key
        while key in self._names_in_use:
            key = f"{base}_{count}"
            count += 1
        self._names_in_use[key] = 1
        return f"{name}_{count - 1}"

    def _unique_scope(self, prefix: str) -> str:
        """TF1's ``_get_unique_variable_scope(prefix)`` in the current variable scope."""
        full = _join(self.scope.name, prefix)
        if not self._variable_scopes.get(full):
            return prefix
        index = 1
        while self._variable_scopes.get(f"{full}_{index}"):
            index += 1
        return f"{prefix}_{index}"

    def _opened(self, full: str) -> None:
        self._variable_scopes[full] = self._variable_scopes.get(full, 0) + 1

    def open_name_scope(self, name: str) -> Scope:
        """``with tf.name_scope(name):`` (a name scope only)."""
        parent = self.scope
        full = self._unique_name(_join(parent.name_scope, name))
        scope = Scope(parent.name, full, parent.reuse, parent.initializer, parent.dtype,
                      parent.initializer_node)
        self._stack.append(scope)
        self._on_close.append(None)
        return scope

    def open_variable_scope(self, name: Optional[str], default_name: Optional[str] = None,
                            reuse: Optional[str] = None, initializer: Optional[str] = None,
                            dtype: Optional[str] = None) -> Scope:
        """``with tf.variable_scope(name, default_name=, reuse=, initializer=, dtype=):``;
        ``reuse`` is :data:`REUSE`, :data:`AUTO` or None (inherit)."""
        parent = self.scope
        if name is None:
            if default_name is None:
                raise StoreError("tf.variable_scope with neither a name nor default_name")
            if reuse is not None:
                raise StoreError(f"tf.variable_scope(default_name={default_name!r}) with reuse: TF1 "
                                 "raises (reuse=True cannot be used without a name_or_scope)")
            written, name = default_name, self._unique_scope(default_name)
        else:
            written = name
        # the name scope is the name as written ("a/b" opens "a/b"; default_name, not
        # the unique variable-scope name), made unique
        name_scope = self._unique_name(_join(parent.name_scope, written))
        full = _join(parent.name, name)
        self._opened(full)
        mode = reuse or parent.reuse  # TF1: `reuse or parent.reuse` (True wins over AUTO_REUSE)
        scope = Scope(full, name_scope, mode, initializer or parent.initializer,
                      dtype or parent.dtype, None if initializer else parent.initializer_node)
        self._stack.append(scope)
        self._on_close.append(full)
        return scope

    def reenter(self, scope: Scope, reuse: Optional[str] = None) -> Scope:
        """``with tf.variable_scope(scope_object):`` (a scope captured with ``as``):
        the same variable scope, with its own reuse (not the enclosing scope's)
        unless ``reuse`` is given, in a new name scope named after its last part
        (``O/G``, or ``G_1`` at the top)."""
        mode = reuse or scope.reuse  # TF1: `scope.reuse if not reuse else reuse`
        self._opened(scope.name)
        name_scope = self._unique_name(_join(self.scope.name_scope, scope.name.rpartition("/")[2]))
        again = Scope(scope.name, name_scope, mode, scope.initializer, scope.dtype,
                      scope.initializer_node)
        self._stack.append(again)
        self._on_close.append(dict(self._variable_scopes))
        return again

    def reuse_variables(self) -> None:
        """``scope.reuse_variables()``: the rest of the current variable scope looks
        names up (under ``AUTO_REUSE`` too), and so do the name scopes open in it."""
        depth = len(self._stack) - 1
        self._stack[depth].reuse = REUSE
        while depth > 0 and self._on_close[depth - 1] is None:  # a name scope: its variable scope too
            depth -= 1
            self._stack[depth].reuse = REUSE

    def close(self) -> None:
        if len(self._stack) == 1:
            raise AssertionError("no scope to close")
        self._stack.pop()
        closing = self._on_close.pop()
        if isinstance(closing, dict):
            self._variable_scopes = closing
        elif isinstance(closing, str):
            for key in self._variable_scopes:
                if key.startswith(closing + "/"):
                    self._variable_scopes[key] = 0

    # -- variables and layers ----------------------------------------------
    def _make(self, full: str, handle: str, kind: str, trainable: bool, info: dict) -> Entry:
        entry = Entry(full, handle, kind, trainable, self._order, dict(info),
                      shared=self.scope.reuse == AUTO)
        self._order += 1
        self.entries[full] = entry
        return entry

    def _lookup(self, full: str, reuse: str, what: str) -> Optional[Entry]:
        """The entry ``full`` means, or None when it is to be created."""
        existing = self.entries.get(full)
        if reuse == REUSE:
            if existing is None:
                raise StoreError(f"{what} {full} does not exist and the scope reuses variables "
                                 "(TF1 raises here)")
            return existing
        if existing is not None and reuse != AUTO:
            raise StoreError(f"{what} {full} already exists and the scope does not reuse "
                             "variables (TF1 raises here)")
        return existing

    def get_variable(self, name: str, handle: str, trainable: bool = True,
                     info: Optional[dict] = None) -> Tuple[Entry, bool]:
        """``tf.get_variable(name, ...)``: (entry, created)."""
        full = _join(self.scope.name, name)
        existing = self._lookup(full, self.scope.reuse, "Variable")
        if existing is not None:
            if existing.kind != "variable":
                raise StoreError(f"{full} is a layer's scope, not a variable")
            return existing, False
        self._unique_name(full)  # the variable's op takes its name in the graph
        return self._make(full, handle, "variable", trainable, info or {}), True

    def global_step(self, handle: str) -> Tuple[Entry, bool]:
        """``tf.train.get_or_create_global_step()``: the graph's global step, an int64
        scalar ``global_step`` that is not trainable, made by ``get_variable`` in the
        current variable scope: (entry, created)."""
        existing = self.global_step_entry
        if existing is not None:
            return existing, False
        full = _join(self.scope.name, "global_step")
        if full in self.entries:
            raise StoreError(f"{full} already exists and is not the global step")
        self._unique_name(full)
        self.global_step_entry = self._make(full, handle, "variable", False, {"global_step": True})
        return self.global_step_entry, True

    def variable_name(self, name: Optional[str]) -> str:
        """The name TF1 gives a ``tf.Variable(name=name)`` in the current name scope."""
        return self._unique_name(_join(self.scope.name_scope, name or "Variable"))

    def op_name(self, name: str) -> str:
        """The name TF1 gives an op ``name`` in the current name scope (a summary's tag)."""
        return self._unique_name(_join(self.scope.name_scope, name))

    def add_variable(self, full: str, handle: str, trainable: bool = True,
                     info: Optional[dict] = None) -> Entry:
        """A ``tf.Variable`` named ``full`` (see :meth:`variable_name`)."""
        return self._make(full, handle, "variable", trainable, info or {})

    def layer(self, name: Optional[str], base: str, handle: str, reuse: Optional[bool] = None,
              info: Optional[dict] = None, trainable: bool = True) -> Tuple[Entry, bool]:
        """A ``tf.layers`` call with ``name=`` (or unnamed, named after ``base``) and
        ``reuse=``: (entry, created)."""
        mode = REUSE if reuse is True else self.scope.reuse  # reuse=True wins over AUTO_REUSE
        # the layer's variable scope opens a name scope named as written (or after base)
        self._unique_name(_join(self.scope.name_scope, name or base))
        if name is None:
            # with reuse=True, an unnamed layer looks up its base name; otherwise it
            # is made unique like a default_name (the scope's reuse does not matter)
            name = base if reuse is True else self._unique_scope(base)
        full = _join(self.scope.name, name)
        self._opened(full)
        existing = self._lookup(full, mode, "Layer")
        if existing is not None:
            if existing.kind != "layer":
                raise StoreError(f"{full} is a variable, not a layer's scope")
            return existing, False
        return self._make(full, handle, "layer", trainable, info or {}), True

    # -- collections --------------------------------------------------------
    def collection(self, scope: Optional[str] = None, trainable_only: bool = False) -> List[Entry]:
        """``tf.get_collection(TRAINABLE_VARIABLES or GLOBAL_VARIABLES, scope=scope)``:
        the entries in creation order (a layer stands for all of its variables).
        ``scope`` is a prefix; one that would match some of a layer's variables
        and not others is an error (which variables a layer has is not known here)."""
        if scope and _REGEX_CHARS.search(scope):
            raise StoreError(f"scope={scope!r} is a regular expression, not a plain prefix")
        out = []
        for entry in sorted(self.entries.values(), key=lambda e: e.order):
            if trainable_only and not entry.trainable:
                continue
            if scope and not _matches(scope, entry):
                continue
            out.append(entry)
        return out


_REGEX_CHARS = re.compile(r"[.^$*+?{}\[\]\\|()]")


def _matches(prefix: str, entry: Entry) -> bool:
    if entry.kind == "variable":
        return entry.name.startswith(prefix)
    own = entry.name + "/"  # a layer's variables are "<its scope>/<weight>"
    if own.startswith(prefix):
        return True
    if prefix.startswith(own):
        raise StoreError(f"scope={prefix!r} picks some of the variables of layer {entry.name}")
    return False


def _join(scope: str, name: str) -> str:
    return f"{scope}/{name}" if scope else name
