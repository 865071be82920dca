"""The model-code rule's RNNs: cells made once, their variables where the RNN first runs.

Part of :mod:`tapeshift.migrate.rules.model_code`. A TF1 RNN cell is an object
(``cell = tf.nn.rnn_cell.BasicLSTMCell(64)``, or ``tf.contrib.rnn``'s, the same
class) that makes its variables the first time an RNN calls it, under the
RNN's variable scope: ``tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)`` makes
``rnn/basic_lstm_cell/kernel`` and ``.../bias``, and a second RNN over the same
cell uses them again. tf-keras' legacy cells are those classes, and they behave
the same eagerly: made once at module level, called in each step function,
they make their variables at the first call, under the same names, and keep
them. So in tape form::

    cell = tf.contrib.rnn.BasicLSTMCell(64)      -> cell = tf_rnn_cell.BasicLSTMCell(64)
    out, state = tf.nn.dynamic_rnn(cell, x, ...) -> tf.compat.v1.nn.dynamic_rnn(cell, x, ...)

and the variable store counts the cell as a layer made at the RNN's line (its
variables in collections and default ``var_list`` are ``*cell.trainable_variables``).
Inside a scope the rule dissolves, the RNN gets ``scope="G/rnn"``: the names TF1
gave; a cell named ``name=`` opens that scope. A model function's cell (``def
RNN(x): cell = rnn.BasicLSTMCell(n); outputs, _ = rnn.static_rnn(cell, ...)``,
the function called once) is made once too, before the function's first call,
as its layers are, and the function reads it. An RNN in a class, a cell that is
not a name bound once to a cell class, a cell used otherwise than by the RNNs
(called itself, in a lambda), a cell made with ``reuse=``, a wrapper cell
(``DropoutWrapper``: tf-keras' wrappers do not list the wrapped cell's
variables), an RNN under a scope's ``initializer=``, a bidirectional RNN,
and any other use of these names are reported (TS125), and the file keeps its
compat form, where :mod:`~tapeshift.migrate.rules.rnn_cells` moves the cells to
tf-keras.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import appended, code_of, keyword_arg
from tapeshift.migrate.engine.toolkit.variable_store import StoreError
from tapeshift.migrate.engine.toolkit.walk import nodes_of
from tapeshift.migrate.rules.model_code_calls import assign, bind, is_none
from tapeshift.migrate.rules.rnn_cells_table import CONTRIB_RNN_FUNCTIONS, RNN_CELLS

#: the RNN functions read here -> their parameters, in order
RNN_FUNCTIONS = {
    "dynamic_rnn": ("cell", "inputs", "sequence_length", "initial_state", "dtype",
                    "parallel_iterations", "swap_memory", "time_major", "scope"),
    "static_rnn": ("cell", "inputs", "initial_state", "dtype", "sequence_length", "scope"),
}
#: every API name of TF1's RNNs (what the TF1-only rule leaves to this rule)
RNN_APIS = frozenset({
    "nn.rnn_cell", *(f"nn.rnn_cell.{n}" for n in RNN_CELLS),
    *(f"contrib.rnn.{n}" for n in RNN_CELLS | CONTRIB_RNN_FUNCTIONS),
    "nn.dynamic_rnn", "nn.static_rnn", "nn.bidirectional_dynamic_rnn",
    "nn.static_bidirectional_rnn", "nn.static_state_saving_rnn", "nn.raw_rnn",
})
#: the words these names are spelled with (the rule's screen)
RNN_WORDS = frozenset({"rnn_cell", "rnn", "dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn",
                       "static_bidirectional_rnn", "static_state_saving_rnn", "raw_rnn"})


def rnn_api(api: Optional[str]) -> Optional[str]:
    """``"cell.X"`` for a cell class, ``"tuple"`` for ``LSTMStateTuple``,
    ``"rnn.dynamic_rnn"`` / ``"rnn.static_rnn"`` for an RNN this rule reads,
    ``"rnn.other"`` for any other RNN name; None otherwise."""
    if api is None:
        return None
    head, _, leaf = api.rpartition(".")
    if head in ("nn.rnn_cell", "contrib.rnn") and leaf in RNN_CELLS:
        return "tuple" if leaf == "LSTMStateTuple" else f"cell.{leaf}"
    if head in ("nn", "contrib.rnn") and leaf in RNN_FUNCTIONS:
        return f"rnn.{leaf}"
    return "rnn.other" if api in RNN_APIS else None


def snake_case(cls: str) -> str:
    """A layer's default name from its class, as TF1's layers make it
    (``BasicLSTMCell`` -> ``basic_lstm_cell``, ``MultiRNNCell`` -> ``multi_rnn_cell``)."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", cls)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


#: what a cell tells of its state's shape, making no variables (read anywhere)
SHAPES = frozenset({"zero_state", "state_size", "output_size"})

#: cells that wrap another: tf-keras' list none of the wrapped cell's variables
WRAPPERS = frozenset({"DropoutWrapper", "ResidualWrapper", "DeviceWrapper"})


@dataclass
class Cell:
    """A cell bound to a module name: its class, and the name of the variable scope it
    opens in an RNN's (None: its class's, :func:`snake_case`, made unique there)."""

    cls: str
    name: Optional[str]
    uses: int = 0  # its uses by the RNNs converted over it
    #: a model function's cell: the module name made to hold it (made before the
    #: function's first call), and the function
    handle: Optional[str] = None
    function: Optional[cst.FunctionDef] = None


def rewrite(rewriter: Any, kind: str, original: cst.Call, call: cst.Call, top: bool
            ) -> cst.BaseExpression:
    """The TF2 form of a cell class's or an RNN's call (``kind`` from :func:`rnn_api`)."""
    rule = rewriter.rule
    if rule._class is not None or rule._inlining:
        rule._fail(original, f"`{code_of(original.func)}`: RNN code in a class is not "
                   "converted yet (its cells are made once at module level or in a model "
                   "function only)")
    if kind == "tuple":  # a namedtuple of the cells' module
        alias = rule.rnn_cell_alias()
        rule.record_change(original, f"{code_of(original.func)} -> {alias}.LSTMStateTuple")
        return call.with_changes(func=cst.Attribute(cst.Name(alias), cst.Name("LSTMStateTuple")))
    if kind.startswith("cell."):
        return _cell(rewriter, kind[len("cell."):], original, call, top)
    if kind == "rnn.other":
        rule._fail(original, f"`{code_of(original.func)}` is not converted (only dynamic_rnn "
                   "and static_rnn over a cell made at module level are)")
    return _rnn(rewriter, kind[len("rnn."):], original, call)


def _cell(rewriter: Any, cls: str, original: cst.Call, call: cst.Call, top: bool) -> cst.Call:
    """``tf.contrib.rnn.BasicLSTMCell(64)`` -> ``tf_rnn_cell.BasicLSTMCell(64)``: the same
    class, from tf-keras. A cell must be a module name bound once (made once, as TF1
    made it), or made in another cell's arguments (``MultiRNNCell([GRUCell(4)])``)."""
    rule = rewriter.rule
    keywords = {a.keyword.value: a.value for a in original.args if a.keyword is not None}
    if "reuse" in keywords and not is_none(keywords["reuse"]):
        rule._fail(original, f"`{code_of(original.func)}(reuse=...)`: a cell that shares "
                   "another's variables is not converted")
    if cls in WRAPPERS:
        rule._fail(original, f"{cls}: tf-keras' wrapper cells list none of the variables of "
                   "the cell they wrap (trainable_variables is empty), so a step could not "
                   "train them; not converted")
    name = None
    if "name" in keywords and not is_none(keywords["name"]):
        name = rule._const_str(keywords["name"])
        if name is None:
            rule._fail(original, f"`{code_of(original.func)}(name=...)`: a cell named by a "
                       "computed value is not converted")
    new = call.with_changes(func=cst.Attribute(cst.Name(rule.rnn_cell_alias()), cst.Name(cls)))
    rule.record_change(original, f"{code_of(original.func)} -> {rule.rnn_cell_alias()}.{cls} "
                       "(tf-keras' legacy cell, the same class)")
    if rewriter.cell_argument(original):
        return new
    target = rewriter.target
    if not top or target is None or "." in target:
        rule._fail(original, f"`{code_of(original.func)}(...)`: a cell not bound to a "
                   "name of its own is not converted")
    function = rule._function
    bindings = rule._assignments.get(target, 0) if function is None \
        else function.local_counts.get(target, 0)
    if bindings != 1:
        rule._fail(original, f"`{target}` is bound more than once: a cell is converted "
                   "where it is made once and bound once")
    if target in rule._cells:
        rule._fail(original, f"`{target}` names two cells (in the module and a model "
                   "function, or in two functions): not converted")
    made = rule._cells[target] = Cell(cls, name)
    if rule._first_cell is None:
        rule._first_cell = original
    if function is None:
        return new
    # a model function's cell is made once, before the function's first call, as its
    # layers are; the function reads the module name (the statement goes)
    names = [n for n in nodes_of(rule._module, cst.Name) if n.value == target]
    own = {id(n) for n in nodes_of(function.node, cst.Name) if n.value == target}
    made.function = function.node
    if all(id(n) in own for n in names) and rule._assignments.get(target) == 1:
        made.handle = target  # its own name, free at module level
        rule._taken.add(target)
    else:
        made.handle = rule.handle(target)
    rewriter.before.append(assign(made.handle, new))
    return cst.Name(made.handle)


def _rnn(rewriter: Any, fn: str, original: cst.Call, call: cst.Call) -> cst.Call:
    """``tf.nn.dynamic_rnn(cell, x, ...)``: the cell's variables are made here, at its
    first RNN (a layer of the store in the RNN's scope); the call is ``tf.compat.v1.nn``'s,
    given the TF1 scope when the rule dissolved one around it."""
    rule = rewriter.rule
    params = RNN_FUNCTIONS[fn]
    if any(a.star for a in call.args):
        rule._fail(original, f"`tf.nn.{fn}(*args)` is not converted")
    args = bind(original, params)
    cell = args.get("cell")
    if not isinstance(cell, cst.Name) or cell.value not in rule._cells \
            or rule._cells[cell.value].function not in (None, getattr(rule._function, "node", None)):
        rule._fail(original, f"tf.nn.{fn} over `{code_of(cell) if cell else '?'}`, which is not "
                   "a cell made by a statement of its own in the module or in the same model "
                   "function, is not converted")
    given = None
    if "scope" in args and not is_none(args["scope"]):
        given = rule._const_str(args["scope"])
        if given is None:
            rule._fail(original, f"tf.nn.{fn}(scope={code_of(args['scope'])}): a scope that "
                       "is not a string is not converted")
    store = rule._store
    if store.scope.initializer is not None or store.scope.dtype is not None:
        rule._fail(original, f"tf.nn.{fn} in a variable scope with initializer= or dtype=: "
                   "the cell's variables would not get them")
    scope = store.scope.name
    made = rule._cells[cell.value]
    handle = made.handle or cell.value
    # its use in this call (its shapes, ``cell.zero_state(...)``, may be read anywhere)
    made.uses += 1
    entry = rule._facts.layers.get(handle)
    if entry is None:
        # the RNN's variable scope, and in it the cell's own: its name, or its class's
        # made unique there (closing the RNN's scope resets that count, so a second
        # cell of the class in the same RNN scope clashes, as in TF1)
        store.open_variable_scope(given or "rnn")
        try:
            entry, created = store.layer(made.name, snake_case(made.cls), handle, None,
                                         {"cls": made.cls, "variables": True, "cell": True})
        except StoreError as exc:
            rule._fail(original, str(exc))
        finally:
            store.close()
        if not created:
            rule._fail(original, f"tf.nn.{fn} over `{handle}` would share the variables of "
                       f"`{entry.handle}` ({entry.name}): not converted")
        rule._facts.layers[handle] = entry
        rule.record_change(original, f"tf.nn.{fn}: `{handle}` makes its variables here "
                           f"({entry.name}/...), at its first call")
    # (run again, anywhere, the cell keeps the variables of its first call: in TF1 too)
    new_args = list(call.args)
    if scope:  # the TF1 names: the dissolved scope's, then the RNN's
        full = cst.SimpleString(f'"{scope}/{given or "rnn"}"')
        for k, arg in enumerate(new_args):
            if arg.keyword is not None and arg.keyword.value == "scope" \
                    or arg.keyword is None and k == params.index("scope"):
                new_args[k] = arg.with_changes(value=full)
                break
        else:
            new_args = appended(new_args, keyword_arg("scope", full))
    return call.with_changes(func=cst.parse_expression(f"{rule._alias}.compat.v1.nn.{fn}"),
                             args=new_args)


def cells_used_elsewhere(rule: Any, module: cst.Module) -> Optional[cst.Name]:
    """A use of a converted cell other than as the cell of an RNN the rule converted
    or its shapes (``cell(x, state)``, an RNN in a lambda): None if none. Such a use
    would run the cell outside the tape, or before its variables exist.
    ``cell.zero_state(...)``, ``cell.state_size`` and ``cell.output_size`` make no
    variables: they may be read anywhere."""
    for handle, cell in rule._cells.items():
        where = module if cell.function is None else cell.function  # a function's: its local
        skip = set()
        for a in nodes_of(where, cst.Attribute):
            skip.add(id(a.attr))
            if isinstance(a.value, cst.Name) and a.attr.value in SHAPES:
                skip.add(id(a.value))
        seen = 0
        for name in nodes_of(where, cst.Name):
            if name.value == handle and id(name) not in skip:
                seen += 1
                if seen > 1 + cell.uses:  # its binding, then the RNNs over it
                    return name
    return None
