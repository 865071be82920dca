"""Graph-building helpers: module functions that differentiate what their caller built.

TF1 code often wraps ``tf.gradients`` in a helper::

    def flat_grad(f, params):
        return tf.concat([tf.reshape(g, [-1]) for g in tf.gradients(f, params)], axis=0)

    pg = flat_grad(surr, params)
    hvp = flat_grad(tf.reduce_sum(flat_grad(kl, params) * v), params)

In a graph the helper only adds ops: ``f`` was built by the caller, before the
call. A tape records only what runs inside it, so in TF2 the caller must record
``f`` and hand the helper the tape: the helper's ``tf.gradients(f, params)``
becomes ``tape.gradient(f, params)`` with ``tape`` a new parameter, and each
call site is a gradient of its first argument with respect to its second,
recorded by the tape the gradients rule puts around it and passed as
``tape=tape``. The TF2 form keeps the helper's name, its other code and its
callers' names; it computes the same ops on the same values.

A function is such a helper when its one ``tf.gradients`` call takes two of its
parameters, unchanged since the call began, as ``ys`` and ``xs``; every use of
the helper's name in the module is then a call that passes both (by position
or keyword). Anything else (a second ``tf.gradients``, a helper passed as a
value, ``xs`` not known to be a list at a call) leaves it to the gradients rule,
which reports what it cannot convert.

In a tree, a helper defined in one file is often called from others
(``from utils import flat_grad``). The tree's plan
(:mod:`tapeshift.migrate.engine.tree_helpers`) tells each file which of its
functions other files call as helpers (``exported``: converted even with no
call in their own file) and which imported names are helpers defined elsewhere
(:func:`imported_helper`: their calls pass the caller's tape).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Dict, List, Optional, Tuple, cast

import libcst as cst

from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.walk import instance_test, nodes

#: the tests answered once per type (LibCST's classes are ABCs: a failed test is slow)
_is_call, _is_name = instance_test(cst.Call), instance_test(cst.Name)

#: the helper's extra parameter, the tape its caller recorded ``ys`` with
TAPE_PARAM = "tape"


@dataclass
class GradientHelper:
    #: the function, or None for a helper another file of the tree defines
    fn: Optional[cst.FunctionDef]
    #: its ``tf.gradients`` call (None with ``fn``)
    call: Optional[cst.Call]
    #: the parameters passed as ``ys`` and ``xs``: (name, position)
    ys: tuple
    xs: tuple

    def operand(self, call: cst.Call, which: str) -> Optional[cst.BaseExpression]:
        """The argument a call of the helper passes for ``ys`` or ``xs``."""
        name, position = self.ys if which == "ys" else self.xs
        for i, arg in enumerate(call.args):
            if arg.star:
                return None
            if (arg.keyword is None and i == position) or (
                    arg.keyword is not None and arg.keyword.value == name):
                return arg.value
        return None


def imported_helper(ys: Tuple[str, int], xs: Tuple[str, int]) -> GradientHelper:
    """A helper another file of the tree defines, known by its operands."""
    return GradientHelper(None, None, tuple(ys), tuple(xs))


def gradient_helpers(module: cst.Module, is_gradients: Callable[[cst.Call], bool],
                     exported: Collection[str] = ()) -> Dict[str, GradientHelper]:
    """The module-level functions of ``module`` that are gradient helpers, by name
    (those named in ``exported``, which other files call, even with no call here)."""
    found: Dict[str, GradientHelper] = {}
    for fn in module.body:
        if not isinstance(fn, cst.FunctionDef):
            continue
        calls = [cast(cst.Call, n) for n in nodes(fn.body)
                 if _is_call(n) and is_gradients(cast(cst.Call, n))]
        if len(calls) != 1 or TAPE_PARAM in _param_names(fn):
            continue
        helper = _helper(fn, calls[0])
        if helper is not None:
            found[fn.name.value] = helper
    # every use of a helper's name: a call that passes both operands
    uses: Dict[str, int] = {}
    calls_ok: Dict[str, int] = {}
    for node in nodes(module):
        if _is_name(node):
            name = cast(cst.Name, node).value
            if name in found:
                uses[name] = uses.get(name, 0) + 1
        elif _is_call(node):
            n = cast(cst.Call, node)
            if _is_name(n.func) and cast(cst.Name, n.func).value in found:
                callee = cast(cst.Name, n.func).value
                helper = found[callee]
                if helper.operand(n, "ys") is not None and helper.operand(n, "xs") is not None:
                    calls_ok[callee] = calls_ok.get(callee, 0) + 1
    # (the def's own name is one use)
    return {name: h for name, h in found.items()
            if (calls_ok.get(name, 0) or name in exported)
            and uses.get(name, 0) == calls_ok.get(name, 0) + 1}


def _param_names(fn: cst.FunctionDef) -> List[str]:
    return [p.name.value for p in (*fn.params.posonly_params, *fn.params.params,
                                   *fn.params.kwonly_params)]


def _helper(fn: cst.FunctionDef, call: cst.Call) -> Optional[GradientHelper]:
    positional = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    names = _param_names(fn)
    given: Dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        key = arg.keyword.value if arg.keyword is not None else ("ys", "xs")[i] if i < 2 else None
        if key in ("ys", "xs"):
            given[key] = arg.value
    if set(given) != {"ys", "xs"}:
        return None
    operands = []
    for key in ("ys", "xs"):
        value = given[key]
        if not isinstance(value, cst.Name) or value.value not in names:
            return None
        operands.append((value.value, positional.index(value.value)
                         if value.value in positional else -1))
    if operands[0][0] == operands[1][0]:
        return None
    # neither parameter is rebound in the body (the call takes what the caller passed)
    _, stores = names_of(fn.body)
    if stores & {operands[0][0], operands[1][0]}:
        return None
    return GradientHelper(fn, call, operands[0], operands[1])
