"""The layering holds: no import cycle (function-level imports included), no
package reaching into another package's underscore modules, and LibCST's
private names used in one module only."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parents[1]
#: folder -> the package it installs as
PACKAGES = {"migrate": "tapeshift.migrate", "compat": "tapeshift.compat"}
#: the one module allowed to use LibCST's internals
SPEEDUPS = "tapeshift.migrate.engine.libcst_speedups"
#: LibCST attributes with a leading underscore the engine's shortcuts call
LIBCST_PRIVATE_ATTRIBUTES = {"_visit_and_replace_children", "_codegen", "_codegen_impl",
                             "_matchers", "_extra_visit_funcs", "_extra_leave_funcs",
                             "_gather_constructed_visit_funcs", "_gather_constructed_leave_funcs"}


def _modules() -> Dict[str, Path]:
    out = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imported(name: str, tree: ast.Module) -> Set[str]:
    """The project modules ``name`` imports, anywhere in its code, each with
    the packages Python runs on the way (``a.b.c`` runs ``a`` and ``a.b``)."""
    base = name if _is_package(name) else name.rpartition(".")[0]
    found: Set[str] = set()
    for node in ast.walk(tree):
        targets: List[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                module = ".".join(anchor + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            # importlib.import_module(NAME): the module names spelled in this file
            targets = [c.value for c in ast.walk(tree)
                       if isinstance(c, ast.Constant) and c.value in MODULES]
        for target in targets:
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in MODULES and prefix != name:
                    found.add(prefix)
    return found


@functools.lru_cache(maxsize=None)
def _trees() -> Dict[str, ast.Module]:
    """Every module's tree, parsed when a test first asks (not at collection)."""
    return {name: ast.parse(path.read_text(encoding="utf-8"), str(path))
            for name, path in MODULES.items()}


@functools.lru_cache(maxsize=None)
def _graph() -> Dict[str, Set[str]]:
    return {name: _imported(name, tree) for name, tree in _trees().items()}


def _cycle(graph: Dict[str, Set[str]]) -> List[str]:
    """One cycle of ``graph`` (its modules in order), or [] when there is none."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> List[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def _ancestors_of(name: str) -> Set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_the_graph_sees_imports_inside_functions():
    # batch.py imports the pipeline inside its per-file job only
    assert "tapeshift.migrate.engine.pipeline" in _graph()["tapeshift.migrate.engine.batch"]
    # and the subcommands the command line imports by name
    assert "tapeshift.migrate.commands.migrate" in _graph()["tapeshift.migrate.commands.cli"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    # a package's own modules importing their package (__init__) is how Python
    # runs them, not a cycle of the code: those edges are left out
    graph = {name: {t for t in targets if t not in _ancestors_of(name)}
             for name, targets in _graph().items()}
    assert _cycle(graph) == []


def test_no_package_imports_another_package_s_underscore_module():
    # an underscore module is its package's own: for that package and the
    # packages inside it (compat.backends reads compat._tf), no one else
    bad = []
    for name, targets in _graph().items():
        package = name if _is_package(name) else name.rpartition(".")[0]
        for target in targets:
            owner, _, last = target.rpartition(".")
            if last.startswith("_") and not last.startswith("__") \
                    and owner != package and owner not in _ancestors_of(package):
                bad.append((name, target))
    assert bad == []


def test_libcst_private_names_are_used_in_the_speedups_module_only():
    bad = []
    for name, tree in _trees().items():
        if name == SPEEDUPS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.split(".")[0] == "libcst":
                if any(p.startswith("_") for p in node.module.split(".")) or \
                        any(a.name.startswith("_") for a in node.names):
                    bad.append((name, node.lineno, node.module))
            elif isinstance(node, ast.Import):
                bad.extend((name, node.lineno, a.name) for a in node.names
                           if a.name.split(".")[0] == "libcst"
                           and any(p.startswith("_") for p in a.name.split(".")))
            elif isinstance(node, ast.Attribute) and node.attr in LIBCST_PRIVATE_ATTRIBUTES:
                bad.append((name, node.lineno, node.attr))
    assert bad == []
    assert "tapeshift.migrate.engine.libcst_speedups" in MODULES
