"""TensorFlow qualified names without LibCST's full scope analysis, where that is exact.

Every rule asks one question of a node: which TensorFlow (or tf-slim) name is
it? LibCST answers from its scope analysis, a pass over the whole tree that
costs more than any rule (a third of migrating a real package). In most files
the answer needs none of it: ``tf`` is bound once, by ``import tensorflow as
tf`` at the top of the module, and nothing else anywhere binds the name. Then
every reference to ``tf``, in any scope, resolves to that import, and LibCST's
answer for a node is what its ``GlobalScope`` gives from the import
assignments alone. :func:`import_qualified_names` builds that scope with
LibCST's own classes (``GlobalScope.record_import_assignment``, then
``get_qualified_names_for``) and answers for TensorFlow and tf-slim names;
other names (locals, builtins, other packages) read as empty, which is all
the rules can tell of them.

An alias that could mean anything else somewhere is left to LibCST:

* Python's own symbol table (:mod:`symtable`) shows the alias bound any other
  way in any scope (assigned, a parameter, deleted, ``global``, a function or
  class name, imported inside a function or class body), or another
  package's import binds it too;
* the alias is spelled before its last import (LibCST resolves a module-level
  reference to the imports that precede it only).

For such an alias, LibCST's scope analysis runs on a module of the top-level
statements that spell it (the same statement nodes): every binding,
declaration and reference of the name is in them, and the scopes they open
are whole, so LibCST's answer for its references there is its answer in the
whole module (``common_layers.py``'s ``from tensorflow.python import tf2`` in
one function needs that function, not the 4000 lines around it). It
declines altogether (None: the caller runs LibCST's scope analysis on the
module) where the file has a ``match`` statement (its patterns bind and hold
names LibCST gives no scope) or the text is not what this Python parses.

Nodes in import statements, attribute and keyword names (``x.tf``,
``f(tf=1)``) and nodes not in the tree read as empty, as LibCST gives them no
scope. ``tests/migrate/engine/toolkit/test_names.py`` compares every
node's answer with LibCST's.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, Iterator, List, Mapping, Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import GlobalScope, MetadataWrapper, QualifiedName, ScopeProvider

from tapeshift.migrate.engine.screen import identifiers
from tapeshift.migrate.engine.toolkit.starts import StartPositions
from tapeshift.migrate.engine.toolkit.statements import statement_children
from tapeshift.migrate.engine.toolkit.walk import instance_test, nodes
from tapeshift.migrate.engine.python_syntax import parse, parse_uncached, symbols

#: Packages whose names the rules read; every other qualified name is ignored.
PACKAGES = ("tensorflow", "tf_slim")


def import_qualified_names(module: cst.Module, starts: StartPositions) -> Optional[Mapping]:
    """Node -> TensorFlow / tf-slim qualified names of ``module``, as LibCST's
    ``QualifiedNameProvider`` gives them (filtered to those packages); None
    when this file needs the full scope analysis. ``starts``: the module's
    start positions (its nodes, and its code)."""
    code = starts.code
    imports = _module_imports(module)
    aliases = {bound for bound, _, package in imports if package}
    if not aliases:
        return _ImportQualifiedNames(GlobalScope(), frozenset(), frozenset(), starts)
    found = _from_input(module, starts, aliases)
    if found is not None:
        bound_otherwise, read_before = found
    else:
        tree = parse(code)
        if tree is None or _has_match(tree):
            return None
        bound = _bound_otherwise(code, aliases)
        if bound is None:
            return None
        bound_otherwise, read_before = bound, _read_before_import(tree, aliases)
    _remember(module, aliases, bound_otherwise)
    other = {bound for bound, _, package in imports if not package}  # another package's import
    dirty = (aliases & other) | bound_otherwise | read_before
    scope = GlobalScope()
    inside: Set[int] = set()
    statements = {id(statement): statement for _, statement, _ in imports}
    recorded = {id(statement) for _, statement, package in imports if package}
    for key, statement in statements.items():
        inside.update(id(n) for n in nodes(statement))
        if key not in recorded:
            continue
        for alias in statement.names:  # what LibCST's scope visitor records
            target = alias.asname.name if alias.asname is not None else alias.name
            for name in _dotted_names(target):
                scope.record_import_assignment(name, statement, target)
    return _ImportQualifiedNames(scope, frozenset(aliases - dirty), frozenset(inside), starts,
                                 frozenset(dirty), module)


#: the nodes ``get_full_name_for_node`` names (for any other it gives None), the
#: test answered once per type (LibCST's classes are ABCs: a failed test is slow)
_named = instance_test((cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.FunctionDef,
                        cst.ClassDef, cst.Decorator))


class _ImportQualifiedNames(Mapping):
    """Node -> qualified names, answered from the file's TensorFlow imports alone
    (``aliases``), or by LibCST on the statements that spell them (``dirty``)."""

    def __init__(self, scope: GlobalScope, aliases: frozenset, inside: frozenset,
                 starts: StartPositions, dirty: frozenset = frozenset(),
                 module: Optional[cst.Module] = None) -> None:
        self._scope = scope
        self._aliases = aliases
        self._inside = inside  # ids of the nodes of import statements
        self._starts = starts
        self._dirty = dirty
        self._module = module
        self._dirty_scopes: Optional[Mapping] = None
        #: id(node) -> its names. The tree's nodes are alive while this is (their ids
        #: are theirs); a node not in it reads as empty, so does whatever takes its id
        self._cache: Dict[int, Set[QualifiedName]] = {}
        #: dotted name -> the import scope's names for it (filtered to PACKAGES)
        self._by_name: Dict[str, FrozenSet[QualifiedName]] = {}
        #: id(node) -> (node, its TensorFlow API names): TapeshiftCodemod.tf_api_names's
        #: answers, shared by the rules that read this tree
        self.api_names: dict = {}

    def __getitem__(self, node) -> Set[QualifiedName]:
        try:
            return self._cache[id(node)]
        except KeyError:
            pass
        names: Set[QualifiedName] = set()
        if _named(node) and node in self._starts:
            full = get_full_name_for_node(node)
            root = full.split(".", 1)[0] if full is not None else None
            if root in self._aliases:
                if id(node) not in self._inside and id(node) not in self._starts.labels:
                    # the scope holds imports alone, and no node of theirs is asked here:
                    # its answer is a function of the dotted name
                    known = self._by_name.get(full)  # type: ignore[arg-type]
                    if known is None:
                        known = self._by_name[full] = frozenset(  # type: ignore[index]
                            q for q in self._scope.get_qualified_names_for(node)
                            if q.name.split(".", 1)[0] in PACKAGES)
                    names = set(known)
            elif root in self._dirty:
                scope = self._scopes_of_dirty().get(node)
                if scope is not None:
                    names = {q for q in scope.get_qualified_names_for(node)
                             if q.name.split(".", 1)[0] in PACKAGES}
        self._cache[id(node)] = names
        return names

    def _scopes_of_dirty(self) -> Mapping:
        """LibCST's scopes of the nodes of the top-level statements that spell a
        dirty alias (a module of those statements alone, the same nodes)."""
        if self._dirty_scopes is None:
            module = self._module
            assert module is not None
            body = [s for s in module.body
                    if not identifiers(self._starts.part_code(s)).isdisjoint(self._dirty)]
            part = module.with_changes(body=body)
            self._dirty_scopes = MetadataWrapper(part, unsafe_skip_copy=True).resolve(ScopeProvider)
        return self._dirty_scopes

    def get(self, node, default=None):
        return self[node]

    def __contains__(self, node) -> bool:
        return True

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._starts)

    def __len__(self) -> int:
        return len(self._starts)


# -- the module's imports ------------------------------------------------------
def _module_imports(module: cst.Module) -> List[Tuple[str, cst.CSTNode, bool]]:
    """(bound name, statement, from one of PACKAGES) for every name an import
    statement binds, anywhere in the file (statements are walked, expressions
    are not: they hold no import)."""
    out: List[Tuple[str, cst.CSTNode, bool]] = []
    stack: List[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            out.extend(_bindings(node))
        else:
            stack.extend(statement_children(node))
    return out


def _bindings(node) -> List[Tuple[str, cst.CSTNode, bool]]:
    if isinstance(node.names, cst.ImportStar):
        return []  # LibCST records no name for a star import
    if isinstance(node, cst.ImportFrom):
        package = not node.relative and node.module is not None and \
            get_full_name_for_node(node.module).split(".", 1)[0] in PACKAGES
    out = []
    for alias in node.names:
        if isinstance(node, cst.Import):
            package = get_full_name_for_node(alias.name).split(".", 1)[0] in PACKAGES
        target = alias.asname.name if alias.asname is not None else alias.name
        out.append((get_full_name_for_node(target).split(".", 1)[0], node, package))
    return out


def _dotted_names(node) -> Iterator[str]:
    """``a.b.c`` -> ``a.b.c``, ``a.b``, ``a``: the names LibCST records for an import."""
    while isinstance(node, cst.Attribute):
        yield get_full_name_for_node(node)
        node = node.value
    yield node.value


# -- a rule's output: what its input's analysis already says --------------------------
#: id(module) -> (module, the aliases of its analysis, those bound otherwise), for the
#: trees of the file being migrated (a match statement or no symbol table: not kept)
_ANALYSED: Dict[int, Tuple[cst.Module, frozenset, frozenset]] = {}


def _remember(module: cst.Module, aliases: Set[str], bound_otherwise: Set[str]) -> None:
    if len(_ANALYSED) >= 8:
        del _ANALYSED[next(iter(_ANALYSED))]
    _ANALYSED[id(module)] = (module, frozenset(aliases), frozenset(bound_otherwise))


def clear_analyses() -> None:
    """Forget the analyses of the file's trees (they go)."""
    _ANALYSED.clear()


def _from_input(module: cst.Module, starts: StartPositions, aliases: Set[str]
                ) -> Optional[Tuple[Set[str], Set[str]]]:
    """(aliases bound otherwise, aliases read before their import) of a rule's
    output, from its input's analysis and the statements the rule changed,
    without parsing the whole output again; None where that does not hold by
    construction (the whole analysis decides).

    A name's bindings in a scope are those of the statements of that scope, so
    the module's are the union of its top-level statements' (Python's symbol
    table of one statement has the flags the module's has for it). Where the
    input had no alias bound otherwise, neither has a statement the output kept
    from it: only the changed statements are read (only those that spell an
    alias). Which aliases are read before their import is read off the head of
    the module, up to the last statement that imports one. The one check of
    Python's symbol table that spans statements (a ``global`` declaration after
    another use of the name in the module's scope) sends a module that declares
    one to the whole analysis."""
    parent = starts.kept_from
    known = _ANALYSED.get(id(parent)) if parent is not None else None
    if known is None or known[0] is not parent or known[2] or not aliases <= known[1]:
        return None
    if _DECLARATION.search(starts.code):
        return None
    bound: Set[str] = set()
    for part in starts.changed:
        if any(type(node) is cst.Match for node in starts.part_nodes(part)):
            return None
        code = starts.part_code(part)
        if identifiers(code).isdisjoint(aliases):
            continue
        found = _bound_otherwise(code, aliases)
        if found is None:
            return None
        bound |= found
    last = -1
    for i, part in enumerate(module.body):
        if _imports_at_module_scope(part, aliases):
            last = i
    if last < 0:
        return bound, set()
    end = starts.part_end(module.body[last])
    head = parse_uncached(starts.code[:end]) if end is not None else None
    if head is None:
        return None
    return bound, _read_before_import(head, aliases)


def _imports_at_module_scope(part: cst.CSTNode, aliases: Set[str]) -> bool:
    """``part`` holds an import binding one of ``aliases`` in the module's scope
    (in an ``if``, ``try`` or ``with`` block too; not in a function or class)."""
    stack = [part]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            if any(bound in aliases for bound, _, _ in _bindings(node)):
                return True
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            stack.extend(statement_children(node))
    return False


#: a ``global`` or ``nonlocal`` statement (or text that looks like one): Python's symbol
#: table checks it against the other uses of the name in its scope, which for the
#: module's scope may be in other statements
_DECLARATION = re.compile(r"(?:^|;)[ \t]*(?:global|nonlocal)\b", re.M)


# -- when the aliases mean their imports everywhere ---------------------------------
def _bound_otherwise(code: str, aliases: Set[str]) -> Optional[Set[str]]:
    """The aliases bound, in some scope, by anything but an import at module
    level; None when Python gives no symbol table."""
    table = symbols(code)
    if table is None:
        return None
    out: Set[str] = set()
    stack = [(table, True)]
    while stack:
        t, top = stack.pop()
        names = t.get_identifiers()
        for alias in aliases:
            if alias not in names or alias in out:
                continue
            s = t.lookup(alias)
            if s.is_assigned() or s.is_parameter() or s.is_declared_global() \
                    or s.is_nonlocal() or s.is_annotated() or s.is_namespace() \
                    or (s.is_imported() and not top):
                out.add(alias)
        stack.extend((child, False) for child in t.get_children())
    return out


def _has_match(tree: ast.Module) -> bool:
    """A ``match`` statement anywhere (its patterns hold names LibCST gives no scope)."""
    return any(isinstance(s, ast.Match) for s in _statements(tree, definitions=True))


def _read_before_import(tree: ast.Module, aliases: Set[str]) -> Set[str]:
    """The aliases read, somewhere, before the end of the last import binding them."""
    last: Dict[str, Tuple[int, int]] = {}
    for node in _statements(tree, definitions=False):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = (alias.asname or alias.name).split(".", 1)[0]
                if bound in aliases:
                    end = (node.end_lineno, node.end_col_offset)
                    last[bound] = max(last.get(bound, end), end)
    horizon = max(last.values(), default=(0, 0))
    out: Set[str] = set()
    for statement in tree.body:
        if (statement.lineno, statement.col_offset) >= horizon:
            break
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id in last \
                    and (node.lineno, node.col_offset) < last[node.id]:
                out.add(node.id)
    return out


def _statements(tree: ast.Module, definitions: bool) -> Iterator[ast.stmt]:
    """The module's statements in order, with those of compound statements; in
    function and class bodies too when ``definitions``, else only those that
    run in the module's scope."""
    stack = list(reversed(tree.body))
    while stack:
        statement = stack.pop()
        yield statement
        if not definitions and isinstance(
                statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner: List[ast.stmt] = []
        for field in ("body", "orelse", "finalbody"):
            value = getattr(statement, field, None)
            if isinstance(value, list):
                inner.extend(value)
        for handler in getattr(statement, "handlers", ()):
            inner.extend(handler.body)
        stack.extend(reversed(inner))
