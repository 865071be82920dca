"""The syntax the model-code modules read and build alike, none of it tied to a rule's state.

A call's arguments by parameter name (:func:`bind`), ``target = value`` as a
statement of its own (:func:`assign`), a statement's one target and the names it
assigns, and the constants ``None``, ``True`` and ``False``: what the calls
(:mod:`~tapeshift.migrate.rules.model_code_calls`, which imports them back), the
scopes, the RNNs and the Saver rule use.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.walk import nodes


def bind(call: cst.Call, params: Sequence[str]) -> Dict[str, cst.BaseExpression]:
    """Arguments by parameter name (positional ones by place); keeps call order."""
    out: Dict[str, cst.BaseExpression] = {}
    for k, arg in enumerate(call.args):
        if arg.star:
            continue
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        elif k < len(params):
            out[params[k]] = arg.value
    return out


def assign(target: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """``target = value``, a statement of its own."""
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.parse_expression(target))],
                                               value)])


def single_target(stmt: cst.SimpleStatementLine) -> Optional[str]:
    """The one target of ``x = ...`` or ``self.x = ...``, as code."""
    if len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
            and len(stmt.body[0].targets) == 1:
        target = stmt.body[0].targets[0].target
        if isinstance(target, cst.Name):
            return target.value
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                and target.value.value == "self":
            return f"self.{target.attr.value}"
    return None


def name_assignment(node: cst.CSTNode) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(``name``, ``value``) of ``name = value``: an assignment, or a statement that
    is only that."""
    if isinstance(node, cst.SimpleStatementLine):
        node = node.body[0] if len(node.body) == 1 else None
    if isinstance(node, cst.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0].target, cst.Name):
        return node.targets[0].target.value, node.value
    return None


def construction(node: cst.CSTNode) -> Optional[Tuple[str, str]]:
    """(``name``, ``Class``) of ``name = Class(...)``: an assignment, or a statement
    that is only that."""
    found = name_assignment(node)
    if found is not None and isinstance(found[1], cst.Call) \
            and isinstance(found[1].func, cst.Name):
        return found[0], found[1].func.value
    return None


def assigned_names(stmt: cst.CSTNode) -> Set[str]:
    out: Set[str] = set()
    for n in nodes(stmt):
        if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name):
            out.add(n.target.value)
    return out


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"
