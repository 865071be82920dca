"""Name-level data flow over one block of statements.

Deliberately simple and conservative: a statement *reads* every name it loads
(for a ``def``/``class``, every name in its body, so a closure over ``W``
depends on ``W``) and *writes* every name it binds (a subscript or attribute
assignment also writes its base name). The codemods use this to find the
forward computation between the sources and the targets of a gradient, and the
definitions a ``sess.run`` fetch depends on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Dict, List, Optional, Sequence, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.walk import nodes, visit


class _LoadsAndStores(cst.CSTVisitor):
    """The names a statement reads (loads) and binds (stores). With ``base``
    (``"self"``), an attribute of that name counts as a name of its own:
    ``self.q = self.x * w`` reads ``self.x`` and ``w`` and binds ``self.q``."""

    def __init__(self, base: Optional[str] = None) -> None:
        self.loads: Set[str] = set()
        self.stores: Set[str] = set()
        self.base = base

    def _walk(self, node: cst.CSTNode) -> None:
        """``node.visit(self)``, without LibCST building every node again."""
        visit(node, self)

    def _own(self, node: cst.CSTNode) -> Optional[str]:
        """``self.x`` -> "self.x" when ``self`` is the base; else None."""
        if self.base is not None and isinstance(node, cst.Attribute) \
                and isinstance(node.value, cst.Name) and node.value.value == self.base:
            return f"{self.base}.{node.attr.value}"
        return None

    # stores -------------------------------------------------------------
    def _target(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            self.stores.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for el in node.elements:
                self._target(el.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)
        elif (own := self._own(node)) is not None:
            self.stores.add(own)
        elif isinstance(node, (cst.Subscript, cst.Attribute)):
            self._walk(node)  # loads of the base and the index
            base: cst.BaseExpression = node
            while isinstance(base, (cst.Subscript, cst.Attribute)) and self._own(base) is None:
                base = base.value
            if (own := self._own(base)) is not None:
                self.stores.add(own)
            elif isinstance(base, cst.Name):
                self.stores.add(base.value)
        else:
            self._walk(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        self._target(node.target)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        self._walk(node.target)
        self._target(node.target)
        self._walk(node.value)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self._target(node.target)
        if node.value is not None:
            self._walk(node.value)
        return False

    def visit_For(self, node: cst.For) -> bool:
        self._target(node.target)
        self._walk(node.iter)
        self._walk(node.body)
        if node.orelse is not None:
            self._walk(node.orelse)
        return False

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        self._target(node.target)
        self._walk(node.iter)
        for cond in node.ifs:
            self._walk(cond)
        if node.inner_for_in is not None:
            self._walk(node.inner_for_in)
        return False

    def visit_AsName(self, node: cst.AsName) -> bool:
        self._target(node.name)
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        self._target(node.target)
        self._walk(node.value)
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.stores.add(node.name.value)
        for dec in node.decorators:
            self._walk(dec)
        self._walk(node.params)
        self._walk(node.body)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.stores.add(node.name.value)
        for part in (*node.decorators, *node.bases, *node.keywords):
            self._walk(part)
        self._walk(node.body)
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        if node.default is not None:
            self._walk(node.default)
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            if alias.asname is not None:
                self._target(alias.asname.name)
            else:
                name = alias.name
                while isinstance(name, cst.Attribute):
                    name = name.value
                self.stores.add(name.value)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if isinstance(node.names, cst.ImportStar):
            return False
        for alias in node.names:
            target = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(target, cst.Name):
                self.stores.add(target.value)
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    # loads --------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        own = self._own(node)
        if own is not None:
            self.loads.add(own)
        else:
            self._walk(node.value)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        self._walk(node.value)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.loads.add(node.value)


def names_of(node: cst.CSTNode, base: Optional[str] = None):
    """(loads, stores) of a statement or expression (``base``: see _LoadsAndStores)."""
    v = _LoadsAndStores(base)
    v._walk(node)
    return v.loads, v.stores


@dataclass
class Stmt:
    index: int
    node: cst.CSTNode
    reads: Set[str]
    writes: Set[str]


def block_info(body: Sequence[cst.CSTNode], base: Optional[str] = None) -> List[Stmt]:
    out = []
    for i, stmt in enumerate(body):
        loads, stores = names_of(stmt, base)
        out.append(Stmt(i, stmt, loads, stores))
    return out


def last_def(stmts: Sequence[Stmt], name: str, before: int) -> int:
    """Index of the last statement before ``before`` binding ``name``; -1 if none."""
    for j in range(before - 1, -1, -1):
        if name in stmts[j].writes:
            return j
    return -1


def backward_slice(stmts: Sequence[Stmt], names: Set[str], before: int,
                   given: AbstractSet[str] = frozenset()) -> Set[int]:
    """Statements before ``before`` that the values of ``names`` depend on (a statement
    that writes only ``given`` names, whose values come from elsewhere, is not one)."""
    needed = set(names)
    out: Set[int] = set()
    for j in range(before - 1, -1, -1):
        if stmts[j].writes & needed and stmts[j].writes <= given:
            needed -= stmts[j].writes
        elif stmts[j].writes & needed:
            out.add(j)
            needed = (needed - stmts[j].writes) | stmts[j].reads
    return out


def forward_dependents(stmts: Sequence[Stmt], sources: Dict[str, int],
                       before: int, start: int = 0) -> Set[int]:
    """Statements in [start, before) that depend on a source name.

    ``sources`` maps each source to the index of its definition (-1: defined
    outside the block, so live from the start).
    """
    tainted = {name for name, d in sources.items() if d < start}
    out: Set[int] = set()
    for j in range(start, before):
        st = stmts[j]
        if st.reads & tainted:
            out.add(j)
            tainted |= st.writes
        else:
            tainted -= st.writes
        for name, d in sources.items():
            if d == j:
                tainted.add(name)
    return out


#: list and dict methods that change the object in place
MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault"})


def loop_body_ids(root: cst.CSTNode) -> Set[int]:
    """The ids of the nodes in the bodies of the ``for`` and ``while`` loops under ``root``:
    code that may run more than once."""
    return {id(n) for loop in nodes(root) if isinstance(loop, (cst.For, cst.While))
            for n in nodes(loop.body)}


def mutated_names(node: cst.CSTNode) -> Set[str]:
    """Names whose object a statement changes in place: ``grads.append(g)``, ``d[k] = v``."""
    out: Set[str] = set()
    for n in nodes(node):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) \
                and n.func.attr.value in MUTATORS and isinstance(n.func.value, cst.Name):
            out.add(n.func.value.value)
        if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Subscript) \
                and isinstance(n.target.value, cst.Name):
            out.add(n.target.value.value)
    return out


def target_names(target: cst.CSTNode) -> List[str]:
    """The names an assignment target binds (``a``, ``(a, *b)``; ``x[i]``, ``x.y`` none)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in target_names(el.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []
