"""Walks of a LibCST tree that do not rebuild what they leave as it was.

LibCST's ``node.children`` collects a node's children by running the node's
``_visit_and_replace_children`` (:mod:`tapeshift.migrate.engine.libcst_speedups`) with a visitor that stops at each child: it
builds (and validates) a new copy of the node to answer, and LibCST says
itself that this is slow. The rules' analyses walk whole trees that way, so
over the benchmark corpus that copy was over a tenth of migrating it.

:func:`children` gives the same list, in the same (lexical) order, from the
node's fields: which fields hold children, and in which order, is learnt
from LibCST itself (the fields its ``_visit_and_replace_children`` visits,
in that order), once per node class and again for a field first seen set,
so it follows LibCST's node definitions instead of restating them.
``tests/migrate/engine/toolkit/test_walk.py`` compares it with ``node.children`` on every node
of the examples, the test programs and generated programs.

:func:`transform` is ``node.visit(transformer)`` without the rebuilding: LibCST
makes a new copy of every node a transformer visits, changed or not (two
thirds of a transformer pass over an unchanged tree). Here a node whose
children all came back as they were is kept, and only a node with a changed
child is built again, by LibCST itself (its ``_visit_and_replace_children``,
handed the children already visited), so what a removal or a flattening
means in each field is LibCST's answer, not restated here. The transformer's
hooks are called in the same order with the same original nodes; the only
difference a rule can see is that ``updated_node`` is ``original_node`` where
nothing under it changed (as LibCST gives it when ``visit_*`` returns False).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

import libcst as cst

from tapeshift.migrate.engine.libcst_speedups import active, rebuild, visited_fields

#: node class -> (the fields LibCST visits, in its order; the fields that were None
#: and not visited in every instance learnt from: LibCST may visit some of them
#: when they are set, as ``FormattedStringExpression.format_spec``)
_FIELDS: Dict[type, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}


def _learn(node: cst.CSTNode, known=None) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    fields = visited_fields(node)
    unset = [f.name for f in dataclasses.fields(node)
             if getattr(node, f.name) is None and f.name not in fields]
    if known is not None:  # what earlier instances showed, merged in
        for i, name in enumerate(known[0]):
            if name not in fields:  # visited there, None and not visited here
                fields.insert(fields.index(known[0][i - 1]) + 1 if i else 0, name)
        unset = [name for name in known[1] if name in unset]
    entry = _FIELDS[type(node)] = (tuple(fields), tuple(unset))
    return entry


def _fields(node: cst.CSTNode) -> Tuple[str, ...]:
    entry = _FIELDS.get(type(node))
    if entry is None:
        entry = _learn(node)
    else:
        for name in entry[1]:
            if getattr(node, name) is not None:  # set here: does LibCST visit it?
                entry = _learn(node, entry)
                break
    return entry[0]


#: (node class, field) -> LibCST calls no attribute hook for the field when it is None
_SKIPPED_WHEN_NONE: Dict[Tuple[type, str], bool] = {}


def _skipped_when_none(node: cst.CSTNode, name: str) -> bool:
    key = (type(node), name)
    try:
        return _SKIPPED_WHEN_NONE[key]
    except KeyError:
        skipped = _SKIPPED_WHEN_NONE[key] = name not in visited_fields(node)
        return skipped


def instance_test(classes: Union[type, Tuple[type, ...]]) -> Callable[[object], bool]:
    """``lambda value: isinstance(value, classes)``, answered once per type of
    value: for the per-node tests of a walk over LibCST's (ABC) node classes."""
    answers: Dict[type, bool] = {}

    def test(value: object) -> bool:
        try:
            return answers[type(value)]
        except KeyError:
            answer = answers[type(value)] = isinstance(value, classes)
            return answer
    return test


# LibCST's node classes are ABCs: ``isinstance`` against one takes the ABC
# machinery's slow path on every call (about a tenth of a rule pass)
_is_node = instance_test(cst.CSTNode)
#: what a transformer may return (what LibCST's visit accepts)
_valid_result = instance_test((cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel))


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """``node.children``: the nodes directly under ``node``, in source order."""
    if not active():  # the reference: LibCST's own answer
        return list(node.children)
    return _children(node)


def _libcst_children(node: cst.CSTNode) -> List[cst.CSTNode]:
    return list(node.children)


def _children_function() -> Callable[[cst.CSTNode], List[cst.CSTNode]]:
    """What a walk calls for each node's children (the switch read once per walk)."""
    return _children if active() else _libcst_children


def _children(node: cst.CSTNode) -> List[cst.CSTNode]:
    out: List[cst.CSTNode] = []
    for name in _fields(node):
        value = getattr(node, name)
        if _is_node(value):
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
    children = _children_function()
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
    children = _children_function()
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))


Visited = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]


def no_attribute_hook(node: cst.CSTNode, attribute: str) -> None:
    """An ``on_visit_attribute``/``on_leave_attribute`` that does nothing: a
    transformer that has it for both is not called around each field."""
    return None


def transform(node: cst.CSTNode, transformer: cst.CSTTransformer) -> Visited:
    """``node.visit(transformer)``, keeping every node under which nothing changed."""
    on_visit, on_leave = transformer.on_visit, transformer.on_leave
    visit_attribute = transformer.on_visit_attribute
    leave_attribute = transformer.on_leave_attribute
    attributes = not (visit_attribute is no_attribute_hook and leave_attribute is no_attribute_hook)

    def visit(node: cst.CSTNode) -> Visited:
        if on_visit(node):
            results: List[Visited] = []
            changed = False
            for name in _fields(node):
                value = getattr(node, name)
                if value is None and _skipped_when_none(node, name):
                    continue
                if attributes:
                    visit_attribute(node, name)
                if _is_node(value):
                    new = visit(value)
                    results.append(new)
                    changed = changed or new is not value
                elif isinstance(value, (tuple, list)):
                    for child in value:
                        new = visit(child)
                        results.append(new)
                        changed = changed or new is not child
                if attributes:
                    leave_attribute(node, name)
            updated = rebuild(node, results) if changed else node
        else:
            updated = node
        result = on_leave(node, updated)
        if not _valid_result(result):
            raise cst.CSTValidationError(  # what LibCST's visit says
                "Expected a node of type CSTNode or a RemovalSentinel, "
                f"but got a return value of {type(result).__name__}")
        return result

    return visit(node)


def transform_module(module: cst.Module, transformer: cst.CSTTransformer) -> cst.Module:
    """``module.visit(transformer)``, keeping every node under which nothing changed."""
    result = transform(module, transformer)
    if isinstance(result, cst.RemovalSentinel):  # as Module.visit answers a removal
        return module.with_changes(body=(), header=(), footer=())
    return result
