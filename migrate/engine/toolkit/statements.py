"""Walking statements without walking expressions.

Imports are statements, so looking for them need not visit the expressions
that make up most of a tree (LibCST's ``children`` visits them all). The
order is LibCST's visiting order, so a walk finds statements in the order a
full walk would.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Tuple

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.toolkit.walk import instance_test

#: the fields of compound statements and suites that hold statements, in the order LibCST visits them
_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")

_leaf = instance_test((cst.BaseExpression, cst.BaseSmallStatement))
_node = instance_test(cst.CSTNode)

#: node class -> the fields of ``_FIELDS`` its nodes have (none for a leaf: a
#: small statement or an expression), learnt from its first node
_CLASS_FIELDS: Dict[type, Tuple[str, ...]] = {}


def statement_children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The statements, suites and clauses directly under ``node`` (a module,
    statement, suite or clause); nothing for a small statement or an expression."""
    fields = _CLASS_FIELDS.get(type(node))
    if fields is None:
        fields = _CLASS_FIELDS[type(node)] = () if _leaf(node) else tuple(
            field for field in _FIELDS if hasattr(node, field))
    if not fields:
        return []
    out: List[cst.CSTNode] = []
    for field in fields:
        value = getattr(node, field)
        if _node(value):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if _node(v))
    return out


def statements(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``root`` and every statement, suite and clause under it (small
    statements included: an assignment, an import), in the order a LibCST
    visitor meets them; expressions are not walked (they hold no statement)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(statement_children(node)))


_MAIN = m.SimpleString(m.MatchIfTrue(lambda s: s in ('"__main__"', "'__main__'")))
_MAIN_TEST = m.Comparison(left=m.Name("__name__"), comparisons=[
    m.ComparisonTarget(operator=m.Equal(), comparator=_MAIN)]) | m.Comparison(
    left=_MAIN, comparisons=[m.ComparisonTarget(operator=m.Equal(), comparator=m.Name("__name__"))])


def is_main_guard(stmt: cst.CSTNode, without_else: bool = False) -> bool:
    """``if __name__ == "__main__":`` (either way round; ``without_else``: and no ``else``)."""
    return isinstance(stmt, cst.If) and m.matches(stmt.test, _MAIN_TEST) \
        and not (without_else and stmt.orelse is not None)
