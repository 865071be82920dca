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

While a file is migrated (:func:`remembering`, which the pipeline enters),
what a walk learns is kept: each node's children, and the nodes of a whole
module in :func:`nodes`' order. A node's children never change (LibCST's
trees are immutable), and the trees of one file are walked over and over
(each rule's analyses, the names it may not take, the check for a node
placed twice, each rule's pass): every walk after the first reads them.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import re
import typing
from contextlib import contextmanager
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, TypeVar, Union

import libcst as cst

from tapeshift.migrate.engine.libcst_speedups import active, rebuild, visited_fields

T = TypeVar("T")

#: node class -> (the fields LibCST visits, in its order; the fields that were None
#: and not visited in every instance learnt from: LibCST may visit some of them
#: when they are set, as ``FormattedStringExpression.format_spec``; a getter of
#: the visited fields' values)
_FIELDS: Dict[type, Tuple[Tuple[str, ...], Tuple[str, ...], Callable]] = {}


def _learn(node: cst.CSTNode, known=None) -> Tuple[Tuple[str, ...], Tuple[str, ...], Callable]:
    fields = visited_fields(node)
    unset = [f.name for f in dataclasses.fields(node)
             if getattr(node, f.name) is None and f.name not in fields]
    if known is not None:  # what earlier instances showed, merged in
        for i, name in enumerate(known[0]):
            if name not in fields:  # visited there, None and not visited here
                fields.insert(fields.index(known[0][i - 1]) + 1 if i else 0, name)
        unset = [name for name in known[1] if name in unset]
    entry = _FIELDS[type(node)] = (tuple(fields), tuple(unset), _getter(tuple(fields)))
    return entry


def _getter(fields: Tuple[str, ...]) -> Callable[[cst.CSTNode], Tuple[object, ...]]:
    """A node's values of ``fields``, as a tuple (``operator.attrgetter``)."""
    if not fields:
        return lambda node: ()
    if len(fields) == 1:
        name = fields[0]
        return lambda node: (getattr(node, name),)
    return operator.attrgetter(*fields)


def _entry(node: cst.CSTNode) -> Tuple[Tuple[str, ...], Tuple[str, ...], Callable]:
    entry = _FIELDS.get(type(node))
    if entry is None:
        entry = _learn(node)
    else:
        for name in entry[1]:
            if getattr(node, name) is not None:  # set here: does LibCST visit it?
                entry = _learn(node, entry)
                break
    return entry


def _fields(node: cst.CSTNode) -> Tuple[str, ...]:
    return _entry(node)[0]


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


def _invalid(result: object) -> cst.CSTValidationError:
    """What LibCST's visit raises for a hook that returned something else than a node."""
    return cst.CSTValidationError("Expected a node of type CSTNode or a RemovalSentinel, "
                                  f"but got a return value of {type(result).__name__}")


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """``node.children``: the nodes directly under ``node``, in source order."""
    if _remembered is not None:  # (kept only when the shortcuts are active)
        return list(_remembered_children(node))
    if not active():  # the reference: LibCST's own answer
        return list(node.children)
    return _children(node)


def _libcst_children(node: cst.CSTNode) -> List[cst.CSTNode]:
    return list(node.children)


def _children_function() -> Callable[[cst.CSTNode], Sequence[cst.CSTNode]]:
    """What a walk calls for each node's children (the switch read once per walk)."""
    if not active():
        return _libcst_children
    return _children if _remembered is None else _remembered_children


# -- what the walks of one file learn -------------------------------------------------
class _Memory:
    """What walks learnt about the trees of the file being migrated. Each entry
    holds the node it is about, so that no other object can take its id."""

    def __init__(self) -> None:
        #: id(node) -> (node, its children)
        self.children: Dict[int, Tuple[cst.CSTNode, Tuple[cst.CSTNode, ...]]] = {}
        #: id(module) -> (module, its nodes in the order ``nodes`` gives them)
        self.nodes: Dict[int, Tuple[cst.CSTNode, List[cst.CSTNode]]] = {}
        #: (id(node), key) -> (node, value): what :func:`remembered` computed
        self.facts: Dict[Tuple[int, str], Tuple[cst.CSTNode, object]] = {}


_remembered: Optional[_Memory] = None
_depth = 0


@contextmanager
def remembering() -> Iterator[None]:
    """Within: walks keep what they learn (children, a module's nodes, the
    facts of :func:`remembered`); on leaving the outermost, it is all let go.
    Nothing is kept in reference mode."""
    global _remembered, _depth
    if _depth == 0:
        _remembered = _Memory() if active() else None
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _remembered = None


def _remembered_children(node: cst.CSTNode) -> Tuple[cst.CSTNode, ...]:
    known = _remembered.children.get(id(node))  # type: ignore[union-attr]
    if known is None:
        known = _remembered.children[id(node)] = (node, tuple(_children(node)))  # type: ignore[union-attr]
    return known[1]


def remembered(node: cst.CSTNode, key: str, compute: Callable[[], T]) -> T:
    """``compute()``, a fact about ``node`` (which never changes: LibCST's trees
    are immutable), computed once per ``key`` while :func:`remembering`."""
    if _remembered is None:
        return compute()
    facts = _remembered.facts
    known = facts.get((id(node), key))
    if known is None:
        known = facts[(id(node), key)] = (node, compute())
    return known[1]


#: type -> it is a node class (``_is_node``'s answers, read inline by ``_children``)
_NODE_TYPES: Dict[type, bool] = {}


def _children(node: cst.CSTNode) -> List[cst.CSTNode]:
    entry = _FIELDS.get(type(node))
    if entry is None or entry[1]:
        entry = _entry(node)  # learnt here, or a field that may be visited when set
    out: List[cst.CSTNode] = []
    for value in entry[2](node):
        kind = type(value)
        if kind is tuple or kind is list:  # a sequence field holds nodes only
            out.extend(value)
        else:
            is_node = _NODE_TYPES.get(kind)
            if is_node is None:
                is_node = _NODE_TYPES[kind] = _is_node(value)
            if is_node:
                out.append(value)
            elif isinstance(value, (tuple, list)):
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
    """Every node under ``root`` (itself included), in no particular order
    (the same order each time)."""
    children = _children_function()
    if children is _remembered_children and type(root) is cst.Module:
        known = _remembered.nodes.get(id(root))  # type: ignore[union-attr]
        if known is not None:
            return iter(known[1])
        return _module_nodes(root, _remembered)  # type: ignore[arg-type]
    return _nodes(root, children)


#: class (or tuple of classes) -> its :func:`instance_test`, for :func:`nodes_of`
_TESTS: Dict[object, Callable[[object], bool]] = {}


def nodes_of(root: cst.CSTNode, classes: Union[type, Tuple[type, ...]]) -> Sequence[cst.CSTNode]:
    """The nodes of :func:`nodes` that are instances of ``classes``, in that order
    (``[n for n in nodes(root) if isinstance(n, classes)]``, the test answered
    once per type: LibCST's classes are ABCs). Computed once per tree and
    classes while the walks remember; do not change the sequence."""
    test = _TESTS.get(classes)
    if test is None:
        test = _TESTS[classes] = instance_test(classes)
    key = f"nodes_of {classes!r}"
    return remembered(root, key, lambda: tuple(filter(test, nodes(root))))


def _nodes(root: cst.CSTNode, children: Callable[[cst.CSTNode], Sequence[cst.CSTNode]]
           ) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))


def _module_nodes(root: cst.Module, memory: _Memory) -> Iterator[cst.CSTNode]:
    """:func:`_nodes` of a module, kept in ``memory`` once the walk is complete."""
    known = memory.children
    out: List[cst.CSTNode] = []
    append = out.append
    stack: List[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        append(node)
        yield node
        entry = known.get(id(node))
        if entry is None:
            entry = known[id(node)] = (node, tuple(_children(node)))
        stack.extend(entry[1])
    memory.nodes[id(root)] = (root, out)


Visited = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]


# -- which node classes can be under which ---------------------------------------------
@functools.lru_cache(maxsize=None)
def node_classes() -> FrozenSet[type]:
    """LibCST's concrete node classes (those ``libcst`` exports)."""
    return frozenset(c for c in vars(cst).values() if inspect.isclass(c)
                     and issubclass(c, cst.CSTNode) and not inspect.isabstract(c))


def _concrete(cls: type) -> Set[type]:
    out = set()
    stack = [cls]
    while stack:
        c = stack.pop()
        if c in node_classes():
            out.add(c)
        stack.extend(c.__subclasses__())
    return out


@functools.lru_cache(maxsize=None)
def _field_classes(cls: type) -> Optional[FrozenSet[type]]:
    """The node classes the fields of ``cls`` may hold, read off their type
    annotations (an abstract class stands for its concrete ones); None when
    the annotations cannot be read."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        return None
    out: Set[type] = set()

    def scan(t: object) -> None:
        if typing.get_origin(t) is not None:
            for arg in typing.get_args(t):
                scan(arg)
        elif inspect.isclass(t) and issubclass(t, cst.CSTNode):
            out.update(_concrete(t))

    for f in dataclasses.fields(cls):
        scan(hints.get(f.name))
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def subtree_classes(cls: type) -> Optional[FrozenSet[type]]:
    """The node classes a node of class ``cls`` may have under it, itself
    included (what LibCST's field annotations allow: a ``Name`` holds only
    parentheses and whitespace); None when that is not known."""
    seen = {cls}
    todo = [cls]
    while todo:
        below = _field_classes(todo.pop())
        if below is None:
            return None
        for c in below:
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return frozenset(seen)


@functools.lru_cache(maxsize=None)
def untouched(hooked: FrozenSet[type]) -> FrozenSet[type]:
    """The node classes under whose nodes (themselves included) no class of
    ``hooked`` can be: a transformer with hooks for those classes alone does
    nothing there."""
    out = set()
    for cls in node_classes():
        below = subtree_classes(cls)
        if below is not None and below.isdisjoint(hooked):
            out.add(cls)
    return frozenset(out)


def no_attribute_hook(node: cst.CSTNode, attribute: str) -> None:
    """An ``on_visit_attribute``/``on_leave_attribute`` that does nothing: a
    transformer that has it for both is not called around each field."""
    return None


def transform(node: cst.CSTNode, transformer: cst.CSTTransformer,
              skip: FrozenSet[type] = frozenset()) -> Visited:
    """``node.visit(transformer)``, keeping every node under which nothing changed.

    ``skip``: node classes on whose nodes, and all under them, the transformer
    certainly does nothing (its hooks do nothing there, it keeps no count of
    visits): such a node is kept as it is, unvisited. Whitespace and
    punctuation are over half of a tree's nodes."""
    on_visit, on_leave = transformer.on_visit, transformer.on_leave
    visit_attribute = transformer.on_visit_attribute
    leave_attribute = transformer.on_leave_attribute
    attributes = not (visit_attribute is no_attribute_hook and leave_attribute is no_attribute_hook)
    # without attribute hooks, a node's children are all a visit needs of its fields
    known = _remembered_children if _remembered is not None and not attributes else None

    def visit(node: cst.CSTNode) -> Visited:
        if type(node) in skip:
            return node
        if on_visit(node):
            results: List[Visited] = []
            changed = False
            if known is not None:
                for child in known(node):
                    new = visit(child)
                    results.append(new)
                    changed = changed or new is not child
            else:
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
            raise _invalid(result)
        return result

    try:
        return visit(node)
    finally:
        release(visit)


def transform_dispatched(node: cst.CSTNode, transformer: cst.CSTTransformer, visits: dict,
                         leaves: dict, skip: FrozenSet[type] = frozenset(),
                         shallow: Optional[Tuple[Callable[[object], bool], Callable[[object], bool]]] = None
                         ) -> Tuple[Visited, bool]:
    """:func:`transform` of a transformer without attribute hooks whose
    ``on_visit`` and ``on_leave`` dispatch to its class's ``visit_<Node>`` and
    ``leave_<Node>`` functions and do nothing else (``TapeshiftCodemod``'s
    plain dispatch), the same hooks called in the same order on the same nodes,
    without two method calls per node to get there. ``visits`` / ``leaves``:
    node class -> the class's function or None, filled as classes are met.
    ``shallow``: (holds statements, small statement) tests of a rule that does
    not go below statements: another node is not walked below, and of those
    only a small statement's ``visit_<Node>`` is called (its answer unread).
    Returns the result and whether a leave function gave another node than
    the one it was handed."""
    cls = type(transformer)
    children = _remembered_children if _remembered is not None else _children
    rewrote = False

    def hooks(kind: type) -> Tuple[Optional[Callable], Optional[Callable]]:
        try:
            enter = visits[kind]
        except KeyError:  # the method's name is made once per class, not per node
            enter = visits[kind] = getattr(cls, f"visit_{kind.__name__}", None)
        try:
            leave = leaves[kind]
        except KeyError:
            leave = leaves[kind] = getattr(cls, f"leave_{kind.__name__}", None)
        return enter, leave

    known: Dict[type, Tuple[Optional[Callable], Optional[Callable]]] = {}
    statement_level: Optional[Callable[[object], bool]] = None
    small_statement: Callable[[object], bool] = _is_node  # read only with statement_level
    if shallow is not None:
        statement_level, small_statement = shallow

    def visit(node: cst.CSTNode) -> Visited:
        nonlocal rewrote
        kind = type(node)
        if kind in skip:
            return node
        try:
            enter, leave = known[kind]
        except KeyError:
            enter, leave = known[kind] = hooks(kind)
        if statement_level is not None and not statement_level(node):
            if enter is not None and small_statement(node):
                enter(transformer, node)
            down = False
        else:
            down = enter is None or enter(transformer, node) is not False
        if down:
            results: List[Visited] = []
            changed = False
            for child in children(node):
                new = visit(child)
                results.append(new)
                changed = changed or new is not child
            updated = rebuild(node, results) if changed else node
        else:
            updated = node
        if leave is None:
            return updated
        result = leave(transformer, node, updated)
        if result is not updated:
            rewrote = True
            if not _valid_result(result):
                raise _invalid(result)
        return result

    try:
        return visit(node), rewrote
    finally:
        release(visit)


def release(function: Callable) -> None:
    """Break the cycle a recursive nested function makes: it holds itself
    through its closure's cell, and with it everything else it closes over (the
    rule, its lists of nodes, the trees), which then waits for the cycle
    collector, which walks it all again. Call it once the function is done."""
    for cell in function.__closure__ or ():
        if cell.cell_contents is function:
            cell.cell_contents = None


def transform_module(module: cst.Module, transformer: cst.CSTTransformer,
                     skip: FrozenSet[type] = frozenset()) -> cst.Module:
    """``module.visit(transformer)``, keeping every node under which nothing
    changed (``skip``: see :func:`transform`)."""
    result = transform(module, transformer, skip)
    if isinstance(result, cst.RemovalSentinel):  # as Module.visit answers a removal
        return module.with_changes(body=(), header=(), footer=())
    return result


# -- every node object once ----------------------------------------------------------
class _Distinct(cst.CSTTransformer):
    """Replaces each node met again (its id in ``seen``) by a deep copy of it."""

    def __init__(self, seen: Set[int]) -> None:
        super().__init__()
        self._seen = seen
        self._again: Set[int] = set()
        self.on_visit_attribute = no_attribute_hook  # type: ignore[method-assign]
        self.on_leave_attribute = no_attribute_hook  # type: ignore[method-assign,assignment]

    def on_visit(self, node: cst.CSTNode) -> bool:
        key = id(node)
        if key in self._seen:
            self._again.add(key)
            return False
        self._seen.add(key)
        return True

    def on_leave(self, original_node: cst.CSTNode,  # type: ignore[override]
                 updated_node: cst.CSTNode) -> Visited:
        if id(original_node) in self._again:
            return original_node.deep_clone()
        return updated_node


def distinct_nodes(module: cst.Module,
                   kept: Callable[[cst.CSTNode], Sequence[cst.CSTNode]] = lambda part: ()
                   ) -> cst.Module:
    """``module`` with every node object in one place only, as metadata (one
    answer per node object) needs: a node met again is replaced by a deep copy
    (what LibCST's ``MetadataWrapper`` does to the whole tree); ``module``
    itself where no node is met twice.

    ``kept(part)``: the nodes of one of the module's parts (header line,
    statement, footer line) known to hold each node once (a rule's output
    keeps its input's unchanged statements, the same objects); those parts
    are not walked, and keep their nodes where another part repeats one."""
    parts = (*module.header, *module.body, *module.footer)
    seen: Set[int] = set()
    known: Set[int] = set()
    for part in parts:
        inside = kept(part) if id(part) not in known else ()
        if inside:
            known.add(id(part))
            seen.update(map(id, inside))
    visitor = _Distinct(seen)
    out: List[cst.CSTNode] = []
    for part in parts:
        if id(part) in known:
            known.discard(id(part))  # its first place; a second one is walked
            out.append(part)
            continue
        out.append(transform(part, visitor))  # type: ignore[arg-type]
    if all(new is old for new, old in zip(out, parts)):
        return module
    header, body = len(module.header), len(module.body)
    return module.with_changes(header=out[:header], body=out[header:header + body],
                               footer=out[header + body:])


# -- a visitor's visit, read-only -------------------------------------------------------
_ATTRIBUTE_HOOK = re.compile(r"^(visit|leave)_[A-Z]\w*_\w+$")


@functools.lru_cache(maxsize=None)
def _plain_visitor(cls: type) -> bool:
    """``cls`` dispatches as LibCST's ``CSTVisitor`` does and has no attribute
    hook of its own (``visit_<Node>_<field>``)."""
    base = cst.CSTVisitor
    if not (cls.on_visit is base.on_visit and cls.on_leave is base.on_leave  # type: ignore[attr-defined]
            and cls.on_visit_attribute is base.on_visit_attribute  # type: ignore[attr-defined]
            and cls.on_leave_attribute is base.on_leave_attribute):  # type: ignore[attr-defined]
        return False
    own = [c for c in cls.__mro__ if not c.__module__.startswith("libcst")]
    return not any(_ATTRIBUTE_HOOK.match(name) for c in own for name in vars(c))


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)``: the same ``visit_<Node>`` and ``leave_<Node>``
    calls on the same nodes in the same order, without LibCST building every
    node again on the way (a visitor's visit does, and throws them away). A
    visitor with attribute hooks or its own dispatch gets LibCST's visit."""
    cls = type(visitor)
    if not active() or not _plain_visitor(cls):
        node.visit(visitor)
        return
    hooks = _VISITOR_HOOKS.get(cls)
    if hooks is None:
        hooks = _VISITOR_HOOKS[cls] = {}
    _visit(node, visitor, hooks)


#: visitor class -> node class -> (its visit_<Node>, its leave_<Node>): None where
#: the class has only LibCST's, which does nothing
_VISITOR_HOOKS: Dict[type, Dict[type, Tuple[Optional[Callable], Optional[Callable]]]] = {}


def _own_hook(cls: type, name: str) -> Optional[Callable]:
    hook = getattr(cls, name, None)
    return None if hook is getattr(cst.CSTVisitor, name, None) else hook


def _visit(node: cst.CSTNode, visitor: cst.CSTVisitor, hooks: dict) -> None:
    kind = type(node)
    try:
        enter, leave = hooks[kind]
    except KeyError:
        cls = type(visitor)
        enter, leave = hooks[kind] = (_own_hook(cls, f"visit_{kind.__name__}"),
                                      _own_hook(cls, f"leave_{kind.__name__}"))
    if enter is None or enter(visitor, node) is not False:
        for child in children(node):
            _visit(child, visitor, hooks)
    if leave is not None:
        leave(visitor, node)
