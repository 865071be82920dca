"""``tf.gradients(critic(x), [x])`` -> ``critic_x = critic(x)`` then ``tf.gradients(critic_x, [x])``.

A TF1 program may differentiate an expression it writes in the call itself: a
critic's output on interpolates (a WGAN-GP penalty), ``tf.reduce_sum(g * v)``
for a Hessian-vector product. In a graph that expression is one more op; a
tape records only what runs inside it, so the tape form needs the target
computed by a statement of its own, which the gradients rule can put under the
tape with the rest of the forward pass. This rule writes that statement, just
before the one holding the call and with its comments, and passes its name to
``tf.gradients``. The graph is the same (the op was built at that line), so the
numbers are too.

A call of a graph-building helper that differentiates its first argument
(``flat_grad(tf.reduce_sum(g * v), params)``; engine/toolkit/gradient_helpers.py)
gets the same treatment.

The name says what is computed: ``critic_x`` for ``critic(x)`` (a call of a
name on names), else ``<target>_ys`` after the assignment the call is in, else
``gradient_target``. A call inside a comprehension, a lambda or a conditional
expression is left alone (its target may read names bound there, or not run).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.gradient_helpers import gradient_helpers
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name
from tapeshift.migrate.engine.toolkit.walk import children, instance_test, nodes

#: between the statement and the call: code that runs the target elsewhere, or not at all
_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp,
           cst.BooleanOperation)
_is_scope, _is_call = instance_test(_SCOPES), instance_test(cst.Call)


@register_rule
class GradientTargets(TapeshiftCodemod):
    DESCRIPTION = "Give an expression differentiated by tf.gradients a statement and a name of its own."
    RULE = "gradient-targets"
    #: before the feeds rule, which slices the graph by statements
    PHASE = "pre"
    ORDER = 24
    #: (a gradient helper has a ``tf.gradients`` call too)
    SCREEN_NAMES = frozenset({"gradients"})

    def visit_Module(self, node: cst.Module) -> bool:
        self._taken: Set[str] = set(all_names(node))
        #: statement -> [(call, name)] of the targets it computes first
        self._hoisted: Dict[cst.SimpleStatementLine, List[tuple]] = {}
        self._targets: Dict[cst.Call, tuple] = {}  # call -> (its target, the name)
        self._helpers = gradient_helpers(node, lambda c: self.is_tf(c.func, "gradients"))
        return True

    def _target(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """The ``ys`` of a ``tf.gradients`` call or of a gradient helper's call."""
        if isinstance(call.func, cst.Name) and call.func.value in self._helpers:
            return self._helpers[call.func.value].operand(call, "ys")
        return _ys(call) if self.is_tf(call.func, "gradients") else None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        found: List[cst.Call] = []
        pending = [(node, False)]  # (node, under a scope of its own), in source order
        while pending:
            n, inside = pending.pop()
            if not inside and _is_call(n):
                ys = self._target(n)
                if ys is not None and not isinstance(ys, (cst.Name, cst.List, cst.Tuple,
                                                          cst.Attribute)) and not _indexed(ys):
                    found.append(n)
            inner = inside or _is_scope(n)
            pending.extend((child, inner) for child in reversed(children(n)))
        if not found:
            return False
        assigned = _assigned_name(node)
        for call in found:
            ys = self._target(call)
            name = fresh_name(_base(ys, assigned), self._taken)
            self._taken.add(name)
            self._targets[call] = (ys, name)
            self._hoisted.setdefault(node, []).append((ys, name))
            self.record_change(call, f"target `{code_of(ys)}` computed first, as `{name}`")
        return True

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if original_node not in self._targets:
            return updated_node
        ys, name = self._targets[original_node]
        args = [arg.with_changes(value=cst.Name(name)) if orig.value is ys else arg
                for orig, arg in zip(original_node.args, updated_node.args)]
        return updated_node.with_changes(args=args)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine):
        hoisted = self._hoisted.get(original_node)
        if not hoisted:
            return updated_node
        first = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], ys)])
                 for ys, name in hoisted]
        first[0] = first[0].with_changes(leading_lines=updated_node.leading_lines)
        return cst.FlattenSentinel([*first, updated_node.with_changes(leading_lines=[])])


def _ys(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The ``ys`` argument of a ``tf.gradients`` call (first, or ``ys=``)."""
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword is None and i == 0) or (arg.keyword is not None
                                                and arg.keyword.value == "ys"):
            return arg.value
    return None


def _assigned_name(stmt: cst.SimpleStatementLine) -> Optional[str]:
    small = stmt.body[0] if len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 \
            and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return None


def _base(ys: cst.BaseExpression, assigned: Optional[str]) -> str:
    if isinstance(ys, cst.Call) and isinstance(ys.func, cst.Name) and ys.args and all(
            isinstance(a.value, cst.Name) and a.keyword is None and not a.star for a in ys.args):
        return "_".join([ys.func.value, *(a.value.value for a in ys.args)])
    return f"{assigned}_ys" if assigned else "gradient_target"


def _indexed(ys: cst.BaseExpression) -> bool:
    """``losses[0]``: an element of a name, by an index that reads no name (the
    gradients rule takes it as it is, where the tape records ``losses``)."""
    if not (isinstance(ys, cst.Subscript) and isinstance(ys.value, cst.Name)
            and len(ys.slice) == 1 and isinstance(ys.slice[0].slice, cst.Index)):
        return False
    return not any(isinstance(n, cst.Name) for n in nodes(ys.slice[0].slice.value))
