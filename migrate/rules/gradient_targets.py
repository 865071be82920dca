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
gets the same treatment, and so does the loss of a TF1 optimizer's ``minimize``
or ``compute_gradients`` (``opt.minimize(-self.exp_v)``: the feeds rule turns it
into a ``tf.gradients`` call of that loss), when the optimizer is made in the
call or bound, in this file, only to TF1 optimizers.

The name says what is computed: ``critic_x`` for ``critic(x)`` (a call of a
name on names), ``neg_exp_v`` for ``-self.exp_v``, else ``<target>_ys`` (a loss:
``<target>_loss``) after the assignment the call is in (``self.train_op``:
``train_op``), else ``gradient_target`` (a loss: ``loss``). A call inside a comprehension, a lambda or a conditional
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
from tapeshift.migrate.engine.toolkit.walk import children, instance_test, nodes, nodes_of

#: between the statement and the call: code that runs the target elsewhere, or not at all
_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp,
           cst.BooleanOperation)
_is_scope, _is_call = instance_test(_SCOPES), instance_test(cst.Call)
#: a TF1 optimizer's methods that differentiate their first argument, ``loss``
_LOSS_METHODS = frozenset({"minimize", "compute_gradients"})


@register_rule
class GradientTargets(TapeshiftCodemod):
    DESCRIPTION = "Give an expression differentiated by tf.gradients a statement and a name of its own."
    RULE = "gradient-targets"
    #: before the feeds rule, which slices the graph by statements
    PHASE = "pre"
    ORDER = 24
    #: (a gradient helper has a ``tf.gradients`` call too)
    SCREEN_NAMES = frozenset({"gradients"}) | _LOSS_METHODS

    def visit_Module(self, node: cst.Module) -> bool:
        self._taken: Set[str] = set(all_names(node))
        #: statement -> [(call, name)] of the targets it computes first
        self._hoisted: Dict[cst.SimpleStatementLine, List[tuple]] = {}
        self._targets: Dict[cst.Call, tuple] = {}  # call -> (its target, the name)
        self._helpers = gradient_helpers(node, lambda c: self.is_tf(c.func, "gradients"))
        self._optimizers: Set[str] = set()  # (read by _optimizer while it is computed)
        self._optimizers = self._optimizer_names(node)
        return True

    def _target(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """The ``ys`` of a ``tf.gradients`` call or of a gradient helper's call; the
        loss of a TF1 optimizer's ``minimize`` or ``compute_gradients`` (which the
        feeds rule turns into a ``tf.gradients`` call of it)."""
        if isinstance(call.func, cst.Name) and call.func.value in self._helpers:
            return self._helpers[call.func.value].operand(call, "ys")
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _LOSS_METHODS \
                and self._optimizer(call.func.value):
            return _ys(call, "loss")
        return _ys(call) if self.is_tf(call.func, "gradients") else None

    def _optimizer(self, expr: cst.BaseExpression) -> bool:
        """``tf.train.AdamOptimizer(lr)``, or a name (``opt``, ``self.opt``) bound
        in this file only to such calls."""
        if isinstance(expr, cst.Call):
            api = self.tf_api_name(expr.func) or ""
            return api.startswith("train.") and api.endswith("Optimizer")
        return isinstance(expr, (cst.Name, cst.Attribute)) and code_of(expr) in self._optimizers

    def _optimizer_names(self, module: cst.Module) -> Set[str]:
        bound: Dict[str, bool] = {}
        for n in nodes_of(module, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, (cst.Name, cst.Attribute)):
                    key = code_of(t.target)
                    bound[key] = bound.get(key, True) and self._optimizer(n.value)
        return {name for name, only in bound.items() if only}

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
            loss = isinstance(call.func, cst.Attribute) and call.func.attr.value in _LOSS_METHODS
            name = fresh_name(_base(ys, assigned, "loss" if loss else "ys"), self._taken)
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


def _ys(call: cst.Call, keyword: str = "ys") -> Optional[cst.BaseExpression]:
    """The ``ys`` argument of a ``tf.gradients`` call (first, or ``ys=``), or the
    first argument of another call by that ``keyword``."""
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword is None and i == 0) or (arg.keyword is not None
                                                and arg.keyword.value == keyword):
            return arg.value
    return None


def _assigned_name(stmt: cst.SimpleStatementLine) -> Optional[str]:
    small = stmt.body[0] if len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name):
            return target.value
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            return target.attr.value  # self.train_op: train_op
    return None


def _base(ys: cst.BaseExpression, assigned: Optional[str], role: str = "ys") -> str:
    if isinstance(ys, cst.UnaryOperation) and isinstance(ys.operator, cst.Minus) \
            and isinstance(ys.expression, (cst.Name, cst.Attribute)):
        return f"neg_{code_of(ys.expression).rpartition('.')[2]}"  # -self.exp_v: neg_exp_v
    if isinstance(ys, cst.Call) and isinstance(ys.func, cst.Name) and ys.args and all(
            isinstance(a.value, cst.Name) and a.keyword is None and not a.star for a in ys.args):
        return "_".join([ys.func.value, *(a.value.value for a in ys.args)])
    if assigned:
        return f"{assigned}_{role}"
    return "loss" if role == "loss" else "gradient_target"


def _indexed(ys: cst.BaseExpression) -> bool:
    """``losses[0]``: an element of a name, by an index that reads no name (the
    gradients rule takes it as it is, where the tape records ``losses``)."""
    if not (isinstance(ys, cst.Subscript) and isinstance(ys.value, cst.Name)
            and len(ys.slice) == 1 and isinstance(ys.slice[0].slice, cst.Index)):
        return False
    return not any(isinstance(n, cst.Name) for n in nodes(ys.slice[0].slice.value))
