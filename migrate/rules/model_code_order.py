"""The model-code rule's reading of the module as a program: which statements run once and in what order.

Part of :mod:`tapeshift.migrate.rules.model_code`: before its walk, the rule
reads how often each name is bound, the names bound once at module level,
and the functions (and classes) called only in statements that run once
(module level, the ``__main__`` guard, module-level ``with`` blocks), with the
first such statement that calls each.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterator, List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.dataflow import names_of, target_names
from tapeshift.migrate.engine.toolkit.statements import is_main_guard
from tapeshift.migrate.engine.toolkit.walk import instance_test, nodes, nodes_of

_is_call = instance_test(cst.Call)  # answered once per type (LibCST's classes are ABCs)


def assignment_counts(module: cst.Module) -> Dict[str, int]:
    """How often each name is bound anywhere in the module (a loop, augmented
    assignment or parameter counts twice: bound more than once when it runs)."""
    counts: Dict[str, int] = {}
    for n in nodes(module):
        kind = _binding_kind(n)
        if kind is None:
            continue
        if kind == "target":
            for name in target_names(n.target):
                counts[name] = counts.get(name, 0) + 1
        elif kind == "targets twice":
            for name in target_names(n.target):
                counts[name] = counts.get(name, 0) + 2
        elif kind == "named":
            counts[n.name.value] = counts.get(n.name.value, 0) + 1
        elif kind == "as":
            if isinstance(n.name, cst.Name):
                counts[n.name.value] = counts.get(n.name.value, 0) + 1
        else:  # a parameter
            counts[n.name.value] = counts.get(n.name.value, 0) + 2
    return counts


#: node type -> what binds names in it, for :func:`assignment_counts` (answered once
#: per type: LibCST's classes are ABCs, a failed isinstance takes the slow path)
_BINDING_KINDS: Dict[type, Optional[str]] = {}


def _binding_kind(n: cst.CSTNode) -> Optional[str]:
    try:
        return _BINDING_KINDS[type(n)]
    except KeyError:
        pass
    if isinstance(n, cst.AssignTarget):
        kind: Optional[str] = "target"
    elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
        kind = "targets twice"
    elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
        kind = "named"
    elif isinstance(n, cst.AsName):
        kind = "as"
    elif isinstance(n, cst.Param):
        kind = "param"
    else:
        kind = None
    _BINDING_KINDS[type(n)] = kind
    return kind


def module_bindings(module: cst.Module, counts: Dict[str, int]) -> Dict[str, cst.BaseExpression]:
    """Names bound exactly once in the whole module, at module level, to their value."""
    out: Dict[str, cst.BaseExpression] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name) \
                        and counts.get(small.targets[0].target.value) == 1:
                    out[small.targets[0].target.value] = small.value
    return out


def run_once_statements(module: cst.Module, local: Optional[Set[int]] = None,
                        into_functions: bool = True) -> Iterator[cst.SimpleStatementLine]:
    """The simple statements that run once, in order: module-level ones, and those
    in the ``__main__`` guard, in module-level ``with`` blocks (a session's) and in
    a function called once, by one of them (``main()``), read where it is called
    (not with ``into_functions=False``). ``local``: :func:`_local_names` of the
    module, if the caller has it."""
    called_once = {} if not into_functions else _called_once(
        module, _local_names(module) if local is None else local)
    pending = [iter(module.body)]  # (a loop, not a recursive closure: no cycle to collect)
    while pending:
        for stmt in pending[-1]:
            if isinstance(stmt, cst.SimpleStatementLine):
                yield stmt
                inner = [called_once.pop(n.func.value) for n in nodes(stmt) if _is_call(n)
                         and isinstance(n.func, cst.Name) and n.func.value in called_once]
                if inner:
                    pending.extend(iter(fn.body.body) for fn in reversed(inner))
                    break
            elif is_main_guard(stmt, without_else=True) \
                    or isinstance(stmt, cst.With):
                pending.append(iter(stmt.body.body))
                break
        else:
            pending.pop()


def _called_once(module: cst.Module, local: Set[int]) -> Dict[str, cst.FunctionDef]:
    """Module-level functions, defined once, whose name is used once, as what a call
    calls (``local``: :func:`_local_names`, no uses)."""
    defs = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    if not defs:
        return {}
    counts = Counter(fn.name.value for fn in defs)
    functions = {fn.name.value: fn for fn in defs if counts[fn.name.value] == 1}
    defined = {id(fn.name) for fn in defs} | local
    uses: Dict[str, int] = {}
    called: Set[int] = {id(n.func) for n in nodes(module) if _is_call(n)}
    for n in nodes_of(module, cst.Name):
        if n.value in functions and id(n) not in defined:
            uses[n.value] = uses.get(n.value, 0) + (1 if id(n) in called else 2)
    return {name: fn for name, fn in functions.items() if uses.get(name) == 1}


def calls_at_top_only(module: cst.Module) -> Set[str]:
    """Functions (and classes) whose every use is a call in a statement that runs
    once (:func:`run_once_statements`): they run where those statements are read."""
    local = _local_names(module)
    top: Set[int] = set()
    for s in run_once_statements(module, local):
        top |= {id(n.func) for n in nodes(s) if _is_call(n)}
    defined = {id(fn.name) for fn in nodes_of(module, (cst.FunctionDef, cst.ClassDef))} | local
    uses: Dict[str, bool] = {}
    for n in nodes_of(module, cst.Name):
        if id(n) not in defined:  # (a def's name is no use, nor a local of that name)
            uses[n.value] = uses.get(n.value, True) and id(n) in top
    return {name for name, only in uses.items() if only}


def _local_names(module: cst.Module) -> Set[int]:
    """The Name nodes of a module-level function's locals (``optimizer = ...`` in
    ``def optimizer(...)``): no use of a module name."""
    out: Set[int] = set()
    for fn in module.body:
        if not isinstance(fn, cst.FunctionDef):
            continue
        if any(isinstance(n, (cst.Global, cst.Nonlocal)) for n in nodes(fn.body)):
            continue
        local = names_of(fn.body)[1] | {p.name.value for p in nodes_of(fn.params, cst.Param)}
        out |= {id(n) for n in nodes_of(fn.body, cst.Name) if n.value in local}
    return out


def first_top_level_calls(module: cst.Module) -> Dict[str, int]:
    """Name -> the position of the first statement that runs once and calls it
    (:func:`run_once_statements`, in the order they run)."""
    first: Dict[str, int] = {}
    for index, s in enumerate(run_once_statements(module)):
        for n in nodes(s):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
                first.setdefault(n.func.value, index)
    return first


def _target_names(target: cst.CSTNode) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []
