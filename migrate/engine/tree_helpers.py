"""Gradient helpers across the files of a tree: which files pass a tape to which.

A TF1 helper such as ``def flat_grad(f, params): ... tf.gradients(f, params)``
differentiates what its caller built; its TF2 form takes the caller's tape
(:mod:`tapeshift.migrate.engine.toolkit.gradient_helpers`). Within one file
the gradients rule converts a helper and all its calls, or none of them. In a
tree the helper and its callers are often in different files
(``from utils import flat_grad``), and each file is migrated on its own, so
the decision is taken here, for the whole tree, before any file is migrated:

1. every file that spells ``gradients`` is read for module functions that are
   helpers (:func:`exported_helpers`);
2. every file's imports are resolved against the tree's modules
   (:func:`imported_helpers`: ``from utils import flat_grad as fg``,
   ``import utils`` + ``utils.flat_grad(...)``, relative imports), as Python
   would find them: the importing file's folder first (a script's
   ``sys.path[0]``), then the tree's root;
3. a helper is converted only if its own file converts it and every file that
   calls it converts every call: the files involved are migrated with the
   helpers assumed converted, the helpers some file could not follow are
   dropped, and again, until nothing changes (:func:`plan`). A dropped helper
   stays TF1 everywhere, as today for a file on its own.

The result, per file, is a tuple of facts the pipeline hands to the rules
(:data:`TREE_HELPERS`): ``("def", name, ys, xs)`` for a function of the file
that other files call as a helper, ``("call", ref, ys, xs)`` for a name
(``fg``, ``utils.flat_grad``) that calls a helper of another file; ``ys`` and
``xs`` are the helper's (parameter, position) pairs. Plain data: it goes to
worker processes and into the cache key.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import GatherImportsVisitor

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.gradient_helpers import TAPE_PARAM, gradient_helpers
from tapeshift.migrate.engine.toolkit.tf_names import tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import nodes

#: the key of the facts in a migration's shared scratch (see the module's docstring)
TREE_HELPERS = "tree_helpers"

#: what a helper's call looks like, ``gradients(f, params)``: parsing is for files
#: that have one (a tree's files mostly spell ``gradients`` otherwise)
_NAMED_OPERANDS = re.compile(r"\bgradients\(\s*\w+\s*,\s*\w+\s*[,)]")

Fact = Tuple[str, str, Tuple[str, int], Tuple[str, int]]
#: (module, function) of a helper
HelperKey = Tuple[str, str]
#: migrate(path, source, facts) -> the output if the file reached tape form, else None
Migrate = Callable[[str, str, Tuple[Fact, ...]], Optional[str]]


def exported_helpers(source: str) -> Dict[str, Tuple[Tuple[str, int], Tuple[str, int]]]:
    """The module functions of ``source`` that are gradient helpers whether or not
    the file calls them: name -> (ys, xs)."""
    if "gradients" not in source or not _NAMED_OPERANDS.search(source) \
            or not _may_define_helpers(source):
        return {}
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return {}
    alias = tf_module_alias(module)
    if alias is None:
        return {}

    def is_gradients(call: cst.Call) -> bool:
        # tf.gradients, tf.compat.v1.gradients
        return code_of(call.func) in (f"{alias}.gradients", f"{alias}.compat.v1.gradients")

    names = [fn.name.value for fn in module.body if isinstance(fn, cst.FunctionDef)]
    return {name: (h.ys, h.xs) for name, h in
            gradient_helpers(module, is_gradients, exported=names).items()}


def _may_define_helpers(source: str) -> bool:
    """A quick look with Python's own parser (many times LibCST's speed): a module
    function whose ``gradients(a, b)`` takes two of its parameters."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True  # LibCST decides
    for fn in tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and len(node.args) >= 2 and (
                    getattr(node.func, "attr", None) == "gradients"
                    or getattr(node.func, "id", None) == "gradients") \
                    and all(isinstance(a, ast.Name) and a.id in params for a in node.args[:2]):
                return True
    return False


def module_name(path: Path, root: Path) -> str:
    """``root/pkg/utils.py`` -> ``pkg.utils`` (a package's ``__init__.py``: ``pkg``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_helpers(source: str, path: Path, root: Path,
                     find: Callable[[str, Path], Optional[str]]) -> Dict[str, Tuple[str, str]]:
    """The names ``source`` calls functions of the tree's modules by: ref ->
    (module, function) for ``from m import f [as g]`` (ref ``g``) and
    ``import m [as n]`` (ref ``n.*``: ``n.f`` for each function ``f`` of ``m``) and
    ``from m import *`` (ref ``*:m``: each function by its name); the caller filters. ``find(dotted, folder)`` is the module of the tree that an
    import of ``dotted`` from ``folder`` reaches, or None."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return {}
    own = module_name(path, root)
    package = own.rpartition(".")[0] if path.name != "__init__.py" else own
    visitor = GatherImportsVisitor(CodemodContext(full_module_name=own,
                                                  full_package_name=package))
    module.visit(visitor)
    folder = path.parent
    refs: Dict[str, Tuple[str, str]] = {}
    for dotted in visitor.module_imports:
        found = find(dotted, folder)
        if found is not None:
            refs[f"{dotted}.*"] = (found, "*")
    for dotted, alias in visitor.module_aliases.items():
        found = find(dotted, folder)
        if found is not None:
            refs[f"{alias}.*"] = (found, "*")
    for dotted, objs in visitor.object_mapping.items():
        for obj in objs:
            if obj == "*":  # from m import *: each function of m by its own name
                found = find(dotted, folder)
                if found is not None:
                    refs[f"*:{found}"] = (found, "*")
                continue
            sub = find(f"{dotted}.{obj}" if dotted else obj, folder)  # from pkg import mod
            if sub is not None:
                refs[f"{obj}.*"] = (sub, "*")
            else:
                found = find(dotted, folder)
                if found is not None:
                    refs[obj] = (found, obj)
    for dotted, pairs in visitor.alias_mapping.items():
        for obj, alias in pairs:
            sub = find(f"{dotted}.{obj}" if dotted else obj, folder)
            if sub is not None:
                refs[f"{alias}.*"] = (sub, "*")
            else:
                found = find(dotted, folder)
                if found is not None:
                    refs[alias] = (found, obj)
    return refs


def plan(files: Dict[str, str], root: Path, migrate: Migrate) -> Dict[str, Tuple[Fact, ...]]:
    """The facts of each file of the tree that defines or calls a helper another file
    of the tree calls or defines (files: path -> source). ``migrate`` runs the
    pipeline on one file with the facts given (see the module's docstring)."""
    paths = {p: Path(p) for p in files}
    by_module: Dict[str, str] = {}
    for p, path in paths.items():
        try:
            by_module.setdefault(module_name(path.resolve(), root.resolve()), p)
        except ValueError:
            continue  # outside the root
    helpers: Dict[HelperKey, Tuple[Tuple[str, int], Tuple[str, int]]] = {}
    for p, source in files.items():
        mod = _module_of(paths[p], root)
        if mod is None:
            continue
        for name, spec in exported_helpers(source).items():
            helpers[(mod, name)] = spec
    if not helpers:
        return {}
    modules = {mod for mod, _ in helpers}

    def find(dotted: str, folder: Path) -> Optional[str]:
        # the importing file's folder (a script's sys.path[0]), then the root
        for base in (folder.resolve(), root.resolve()):
            for candidate in (base.joinpath(*dotted.split(".")).with_suffix(".py"),
                              base.joinpath(*dotted.split("."), "__init__.py")):
                try:
                    mod = module_name(candidate, root.resolve())
                except ValueError:
                    continue
                if mod in by_module:  # the first module Python would find
                    return mod if mod in modules else None
        return None

    # who calls which helper, by which name
    calls: Dict[str, Dict[str, HelperKey]] = {}
    for p, source in files.items():
        if not any(name in source for _, name in helpers):
            continue
        refs = imported_helpers(source, paths[p].resolve(), root.resolve(), find)
        mine: Dict[str, HelperKey] = {}
        for ref, (mod, obj) in refs.items():
            if obj == "*":
                for (hm, name) in helpers:
                    if hm == mod:  # `import m as n`: n.name; `from m import *`: name
                        mine[name if ref.startswith("*:") else f"{ref[:-2]}.{name}"] = (hm, name)
            elif (mod, obj) in helpers:
                mine[ref] = (mod, obj)
        if mine:
            calls[p] = mine
    called = {key for refs in calls.values() for key in refs.values()}
    enabled: Set[HelperKey] = set(called)
    definers = {by_module[mod] for mod, _ in called}
    involved = sorted(set(calls) | definers)
    while enabled:
        facts = _facts(involved, calls, enabled, helpers, by_module)
        failed: Set[HelperKey] = set()
        for p in involved:
            output = migrate(p, files[p], facts.get(p, ()))
            migrated = cst.parse_module(output) if output is not None else None
            for kind, ref, _, _ in facts.get(p, ()):
                key = (_module_of(paths[p], root), ref) if kind == "def" else calls[p][ref]
                if migrated is None or not _converted(migrated, kind, ref):
                    failed.add(key)  # type: ignore[arg-type]
        if not failed:
            return {p: f for p, f in facts.items() if f}
        enabled -= failed
    return {}


def _module_of(path: Path, root: Path) -> Optional[str]:
    try:
        return module_name(path.resolve(), root.resolve())
    except ValueError:
        return None


def _facts(involved: Sequence[str], calls: Dict[str, Dict[str, HelperKey]],
           enabled: Set[HelperKey], helpers, by_module: Dict[str, str]
           ) -> Dict[str, Tuple[Fact, ...]]:
    out: Dict[str, List[Fact]] = {p: [] for p in involved}
    for mod, name in sorted(enabled):
        ys, xs = helpers[(mod, name)]
        out[by_module[mod]].append(("def", name, ys, xs))
    for p, refs in calls.items():
        for ref, key in sorted(refs.items()):
            if key in enabled:
                ys, xs = helpers[key]
                out[p].append(("call", ref, ys, xs))
    return {p: tuple(f) for p, f in out.items()}


def _converted(module: cst.Module, kind: str, ref: str) -> bool:
    """Whether the migrated module took the tape form for ``ref``: the helper has
    the tape parameter, or every call of ``ref`` passes a tape."""
    if kind == "def":
        return any(isinstance(fn, cst.FunctionDef) and fn.name.value == ref
                   and TAPE_PARAM in _params(fn) for fn in module.body)
    return all(any(a.keyword is not None and a.keyword.value == TAPE_PARAM for a in n.args)
               for n in nodes(module) if isinstance(n, cst.Call) and code_of(n.func) == ref)


def _params(fn: cst.FunctionDef) -> Iterable[str]:
    return [p.name.value for p in (*fn.params.posonly_params, *fn.params.params,
                                   *fn.params.kwonly_params)]
