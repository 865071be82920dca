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
gave. Only module-level code is read this way: an RNN in a model function or a
class, a cell that is not a module name made by a cell class, a bidirectional
RNN, and any other use of these names are reported (TS125), and the file keeps
its compat form, where :mod:`~tapeshift.migrate.rules.rnn_cells` moves the cells
to tf-keras.
"""

from __future__ import annotations

import re
from typing import Any, Optional

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of, keyword_arg
from tapeshift.migrate.engine.toolkit.variable_store import StoreError
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
    """``"cell.X"`` for a cell class, ``"rnn.dynamic_rnn"`` / ``"rnn.static_rnn"`` for an
    RNN this rule reads, ``"rnn.other"`` for any other RNN name; None otherwise."""
    if api is None:
        return None
    head, _, leaf = api.rpartition(".")
    if head in ("nn.rnn_cell", "contrib.rnn") and leaf in RNN_CELLS:
        return f"cell.{leaf}"
    if head in ("nn", "contrib.rnn") and leaf in RNN_FUNCTIONS:
        return f"rnn.{leaf}"
    return "rnn.other" if api in RNN_APIS else None


def snake_case(cls: str) -> str:
    """A layer's default name from its class, as TF1's layers make it
    (``BasicLSTMCell`` -> ``basic_lstm_cell``, ``MultiRNNCell`` -> ``multi_rnn_cell``)."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", cls)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def rewrite(rewriter: Any, kind: str, original: cst.Call, call: cst.Call, top: bool
            ) -> cst.BaseExpression:
    """The TF2 form of a cell class's or an RNN's call (``kind`` from :func:`rnn_api`)."""
    rule = rewriter.rule
    if rule._function is not None or rule._class is not None or rule._inlining:
        rule._fail(original, f"`{code_of(original.func)}`: RNN code in a function or a class "
                   "is not converted yet (its cells would be made at each call)")
    if kind.startswith("cell."):
        return _cell(rewriter, kind[len("cell."):], original, call, top)
    if kind == "rnn.other":
        rule._fail(original, f"`{code_of(original.func)}` is not converted (only dynamic_rnn "
                   "and static_rnn over a cell made at module level are)")
    return _rnn(rewriter, kind[len("rnn."):], original, call)


def _cell(rewriter: Any, cls: str, original: cst.Call, call: cst.Call, top: bool) -> cst.Call:
    """``tf.contrib.rnn.BasicLSTMCell(64)`` -> ``tf_rnn_cell.BasicLSTMCell(64)``: the same
    class, from tf-keras. A cell that holds variables must be a module name bound
    once (made once, as TF1 made it); a cell in another cell's arguments
    (``MultiRNNCell([GRUCell(4)])``) and the state tuple may be anywhere."""
    rule = rewriter.rule
    if cls != "LSTMStateTuple" and not rewriter.cell_argument(original):
        target = rewriter.target
        if not top or target is None or "." in target or rule._assignments.get(target, 0) != 1:
            rule._fail(original, f"`{code_of(original.func)}(...)`: a cell not bound to a "
                       "module name of its own is not converted")
        rule._cells[target] = cls
    rewriter.cells.add(id(original))
    rule._rnn_cells = True
    if rule._first_cell is None:
        rule._first_cell = original
    rule.record_change(original, f"{code_of(original.func)} -> {rule.rnn_cell_alias()}.{cls} "
                       "(tf-keras' legacy cell, the same class)")
    return call.with_changes(func=cst.Attribute(cst.Name(rule.rnn_cell_alias()), cst.Name(cls)))


def _rnn(rewriter: Any, fn: str, original: cst.Call, call: cst.Call) -> cst.Call:
    """``tf.nn.dynamic_rnn(cell, x, ...)``: the cell's variables are made here (a layer of
    the store named after the RNN's scope); the call is ``tf.compat.v1.nn``'s, given the
    TF1 scope when the rule dissolved one around it."""
    rule = rewriter.rule
    params = RNN_FUNCTIONS[fn]
    if any(a.star for a in call.args):
        rule._fail(original, f"`tf.nn.{fn}(*args)` is not converted")
    args = {}
    for k, arg in enumerate(original.args):
        key = arg.keyword.value if arg.keyword is not None else params[k] if k < len(params) \
            else None
        args[key] = arg.value
    cell = args.get("cell")
    if not isinstance(cell, cst.Name) or cell.value not in rule._cells:
        rule._fail(original, f"tf.nn.{fn} over `{code_of(cell) if cell else '?'}`, which is not "
                   "a cell made by a module-level statement of its own, is not converted")
    given = None
    if "scope" in args and args["scope"] is not None:
        given = rule._const_str(args["scope"])
        if given is None:
            rule._fail(original, f"tf.nn.{fn}(scope={code_of(args['scope'])}): a scope that "
                       "is not a string is not converted")
    store = rule._store
    scope = store.scope.name
    rnn_scope = (f"{scope}/" if scope else "") + (given or "rnn")
    handle = cell.value
    entry = rule._facts.layers.get(handle)
    if entry is None:
        # the RNN's variable scope, and in it the cell's own, named after its class
        # (made unique there; closing the RNN's scope resets that count, so a second
        # cell of the class in the same RNN scope clashes, as in TF1)
        cls = rule._cells[handle]
        store.open_variable_scope(given or "rnn")
        try:
            entry, created = store.layer(None, snake_case(cls), handle, None,
                                         {"cls": cls, "variables": True, "cell": True,
                                          "rnn_scope": rnn_scope})
        except StoreError as exc:
            rule._fail(original, str(exc))
        finally:
            store.close()
        if not created:
            rule._fail(original, f"tf.nn.{fn} over `{handle}` reuses the variables of "
                       f"`{entry.handle}` ({entry.name}): a second cell sharing them is not "
                       "converted")
        entry.handle = handle
        rule._facts.layers[handle] = entry
        rule.record_change(original, f"tf.nn.{fn}: `{handle}` makes its variables here "
                           f"({entry.name}/...), at its first call")
    elif entry.info.get("rnn_scope") != rnn_scope:
        rule._fail(original, f"tf.nn.{fn} over `{handle}` in another scope than its first RNN "
                   f"({entry.info.get('rnn_scope')}): TF1 would make its variables again")
    new_args = list(call.args)
    if scope:  # the TF1 names: the dissolved scope's, then the RNN's
        full = cst.SimpleString(f'"{scope}/{given or "rnn"}"')
        for k, arg in enumerate(new_args):
            if arg.keyword is not None and arg.keyword.value == "scope" \
                    or arg.keyword is None and k == params.index("scope"):
                new_args[k] = arg.with_changes(value=full)
                break
        else:
            # after the last argument, separated as the call separates them
            style = next((a.comma for a in new_args[:-1] if isinstance(a.comma, cst.Comma)),
                         cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            new_args.append(keyword_arg("scope", full).with_changes(comma=new_args[-1].comma))
            new_args[-2] = new_args[-2].with_changes(comma=style)
    return call.with_changes(func=cst.parse_expression(f"{rule._alias}.compat.v1.nn.{fn}"),
                             args=new_args)
