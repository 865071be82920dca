"""Read-only walks of a LibCST tree, without rebuilding it.

LibCST's ``node.children`` collects a node's children by running the node's
``_visit_and_replace_children`` with a visitor that stops at each child: it
builds (and validates) a new copy of the node to answer, and LibCST says
itself that this is slow. The rules' analyses walk whole trees that way, so
over the benchmark corpus that copy was over a tenth of migrating it.

:func:`children` gives the same list, in the same (lexical) order, from the
node's fields: which fields hold children, and in which order, is learnt
once per node class from LibCST itself (the fields its
``_visit_and_replace_children`` visits, in that order), so it follows
LibCST's node definitions instead of restating them.
``tests/scale/test_walk.py`` compares it with ``node.children`` on every node
of the examples, the test programs and generated programs.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Tuple

import libcst as cst

_FIELDS: Dict[type, Tuple[str, ...]] = {}


class _FieldRecorder(cst.CSTVisitor):
    """Notes the fields LibCST visits on a node, without going into them."""

    def __init__(self) -> None:
        self.fields: List[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


def _fields(node: cst.CSTNode) -> Tuple[str, ...]:
    kind = type(node)
    try:
        return _FIELDS[kind]
    except KeyError:
        recorder = _FieldRecorder()
        node._visit_and_replace_children(recorder)  # once per node class
        fields = _FIELDS[kind] = tuple(recorder.fields)
        return fields


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """``node.children``: the nodes directly under ``node``, in source order."""
    out: List[cst.CSTNode] = []
    for name in _fields(node):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            out.append(value)
        elif isinstance(value, (tuple, list)):  # a sequence field holds nodes only
            out.extend(value)
    return out  # None and MaybeSentinel values are not children


def walk(root: cst.CSTNode, prune: Optional[Callable[[cst.CSTNode], bool]] = None
         ) -> Iterator[Tuple[cst.CSTNode, List[cst.CSTNode]]]:
    """Every node under ``root`` (itself first), in the order a LibCST visitor
    visits them, each with its ancestors (outermost first; the same list,
    changing as the walk goes on: copy it to keep it). ``prune(node)``: true
    for a node whose children are not to be walked."""
    ancestors: List[cst.CSTNode] = []
    yield root, ancestors
    if prune is not None and prune(root):
        return
    ancestors.append(root)
    pending = [iter(children(root))]
    while pending:
        for child in pending[-1]:
            yield child, ancestors
            if prune is None or not prune(child):
                ancestors.append(child)
                pending.append(iter(children(child)))
            break
        else:
            pending.pop()
            ancestors.pop()


def nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``root`` (itself included), in no particular order."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))
