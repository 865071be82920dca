"""The base class of the rules: dispatch of the visit, metadata, finding and change records.

A rule is a LibCST codemod (:class:`TapeshiftCodemod`). Its visit is
dispatched as a plain ``CSTTransformer`` does it where the rule has no matcher
decorators, its metadata comes from the wrapper the pipeline shares between
rules (:mod:`tapeshift.migrate.engine.toolkit.metadata`), and its findings and
changes are records in the codemod context. The TensorFlow names it matches
are qualified names (:mod:`tapeshift.migrate.engine.toolkit.tf_names`).
Whatever of this reaches into LibCST's internals is in
:mod:`tapeshift.migrate.engine.libcst_speedups`, off in reference mode.
"""

from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from typing import AbstractSet, Callable, Dict, FrozenSet, Iterator, List, Mapping, Optional, Tuple, Union

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from tapeshift.migrate.engine import libcst_speedups as speedups
from tapeshift.migrate.engine.findings import REGISTRY, Change, CodeInfo, Finding, Severity, make_finding
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.metadata import OnDemand, start_positions
from tapeshift.migrate.engine.toolkit.tf_names import api_name
from tapeshift.migrate.engine.toolkit.walk import (instance_test, no_attribute_hook, node_classes,
                                                   transform_dispatched, transform_module,
                                                   untouched)

SCRATCH_FINDINGS = "tapeshift.findings"
SCRATCH_CHANGES = "tapeshift.changes"
#: One dict shared by the rules that migrate one file, in order: a pre-rule
#: leaves facts for the later rules here (``step_functions``: the names of the
#: functions the feeds rule generated; they hold eager training code on purpose).
SCRATCH_SHARED = "tapeshift.shared"
#: The identifiers spelled in the module being transformed (a set of strings), when
#: the caller knows them (``tapeshift.migrate.engine.pipeline`` does): a TensorFlow API name whose last
#: part is spelled nowhere in the file cannot be one of its names, so ``is_tf`` can
#: answer without resolving qualified names.
SCRATCH_IDENTIFIERS = "tapeshift.identifiers"


#: rule class -> its dispatch tables (TapeshiftCodemod.__init__)
_DISPATCH: Dict[type, Tuple[dict, dict, dict]] = {}


def findings_of(context: CodemodContext) -> List[Finding]:
    return list(context.scratch.get(SCRATCH_FINDINGS, []))


def changes_of(context: CodemodContext) -> List[Change]:
    return list(context.scratch.get(SCRATCH_CHANGES, []))


_ATTRIBUTE_HOOK = re.compile(r"^(visit|leave)_[A-Z][A-Za-z]*_[a-z_]+$")


@functools.lru_cache(maxsize=None)
def _has_attribute_hooks(cls: type) -> bool:
    """``cls`` has a ``visit_<Node>_<field>`` / ``leave_<Node>_<field>`` method of
    its own (LibCST's visitor classes declare them all, doing nothing)."""
    return any(_ATTRIBUTE_HOOK.match(name)
               for klass in cls.__mro__ if not klass.__module__.startswith("libcst")
               for name in vars(klass))


def _plain_dispatch(cls: type) -> bool:
    """``cls`` dispatches as :class:`TapeshiftCodemod` does (``on_visit``,
    ``_visit`` and ``on_leave`` its own)."""
    return (cls.on_visit is TapeshiftCodemod.on_visit and cls._visit is TapeshiftCodemod._visit
            and cls.on_leave is TapeshiftCodemod.on_leave)


@functools.lru_cache(maxsize=None)
def _untouched(cls: type) -> frozenset:
    """The node classes on whose nodes (and all under them) a rule of class
    ``cls`` with plain dispatch does nothing: no ``visit_<Node>`` or
    ``leave_<Node>`` method of its own (LibCST's visitor classes declare them
    all, doing nothing) for any class that can be there. Nothing when the
    class changes the dispatch itself."""
    if (cls.on_visit is not TapeshiftCodemod.on_visit or cls._visit is not TapeshiftCodemod._visit
            or cls.on_leave is not TapeshiftCodemod.on_leave):
        return frozenset()
    own = {name for klass in cls.__mro__ if not klass.__module__.startswith("libcst")
           for name in vars(klass)}
    hooked = frozenset(c for c in node_classes()
                       if f"visit_{c.__name__}" in own or f"leave_{c.__name__}" in own)
    return untouched(hooked)


#: what holds statements: the nodes a ``STATEMENTS_ONLY`` rule visits the parts of
_statement_level = instance_test((cst.Module, cst.BaseStatement, cst.BaseSuite, cst.Else,
                                  cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
                                  cst.MatchCase))
_small_statement = instance_test(cst.BaseSmallStatement)

#: ``get_metadata`` called without a default
_NO_DEFAULT = object()

#: codemod class -> whether a method has a matcher decorator (``@m.visit``,
#: ``@m.leave``, ``@m.call_if_inside``, ``@m.call_if_not_inside``)
_DECORATED: dict = {}


class TapeshiftCodemod(speedups.CodemodOverrides, VisitorBasedCodemodCommand):
    """Base class: TF name resolution and finding / change records.

    Metadata is resolved on first use (:class:`OnDemand`), on the wrapper the
    caller put in ``context.wrapper`` when it wraps the very tree being
    transformed: rules that read one tree in turn then share one scope analysis
    and one position pass (``tapeshift.migrate.engine.pipeline`` does this; LibCST alone deep-copies
    the tree and resolves everything again for each codemod).
    """

    METADATA_DEPENDENCIES = (QualifiedNameProvider, PositionProvider)
    # What a rule declares about itself, read by tapeshift.migrate.engine.registry
    # (which documents each): its id, phase(s) and order within them, the codes
    # it owns, the TF1-only names it handles, its opt-in option.
    RULE = "base"
    PHASE: Union[str, Tuple[str, ...]] = ()
    ORDER = 0
    CODES: Tuple[CodeInfo, ...] = ()
    HANDLES: FrozenSet[str] = frozenset()
    OPTION = None
    #: Identifiers one of which a file must spell for this rule to change, report
    #: or share anything (declared by the class itself, not inherited); the
    #: pipeline does not run the rule on other files (``tapeshift.migrate.engine.screen``). None:
    #: always run it.
    SCREEN_NAMES: Optional[FrozenSet[str]] = None
    #: A finer test, run where the names matched: a function of the code (a
    #: ``staticmethod``), False only when the rule certainly does nothing there
    #: (``tapeshift.migrate.engine.screen.code_test``). None: no such test.
    SCREEN_CODE: Optional[Callable[[str], bool]] = None
    #: True when no method has a matcher decorator (``@m.visit``, ``@m.call_if_inside``
    #: ...): LibCST's matcher bookkeeping on every node then changes nothing, and the
    #: visit is dispatched as a plain ``CSTTransformer`` does it, hooks looked up once.
    _plain = False
    #: False: the rule neither reads nor writes ``self.shared`` (the facts of the
    #: other rules), so its result on a tree does not depend on them: the pipeline
    #: runs it once per tree whatever they are.
    USES_SHARED_FACTS = True
    #: True: the rule changes and reports statements only, so the visit does not
    #: go below them (expressions are most of a tree's nodes): a small statement
    #: (an import, an assignment) is visited, its parts are not.
    STATEMENTS_ONLY = False
    # Unless in reference mode (speedups.active()): the transform keeps the nodes
    # under which nothing changed (toolkit.walk.transform; LibCST's own visit
    # builds every visited node again), and the imports a rule asked for are
    # added on the head of the module only (speedups.add_imports_at_head).

    def __init__(self, context: CodemodContext) -> None:
        fast = speedups.active()  # else every call dispatched by LibCST's matcher machinery
        decorated = _DECORATED.get(type(self))
        if decorated is False and fast:
            speedups.init_without_matcher_scan(self, context)
        else:
            super().__init__(context)
            if decorated is None:  # decorators are on the class: the same for every instance
                decorated = _DECORATED[type(self)] = speedups.has_matcher_decorators(self)
        self._plain = fast and not decorated
        if self._plain and not _has_attribute_hooks(type(self)):
            # LibCST calls these around every child of every node: most rules have no use
            self.on_visit_attribute = self.on_leave_attribute = no_attribute_hook
        # node class -> the class's visit_<Node> / leave_<Node> function or None, and
        # (kind, node class, field) -> its attribute hook: shared by the instances of
        # the class (functions, not bound methods: no cycle through the instance that
        # would keep its trees for the cycle collector)
        self._hooks, self._visits, self._leaves = _DISPATCH.setdefault(type(self), ({}, {}, {}))
        self._rewrote = False  # a leave method returned another node than it was given
        self._names: Optional[Mapping] = None  # the shared qualified names, once read

    def _hook(self, key, name: str):
        try:
            hook = self._hooks[key]
        except KeyError:
            hook = self._hooks[key] = getattr(type(self), name, None)
        return None if hook is None else hook.__get__(self)

    # -- dispatch (what CSTTransformer.on_visit & co. do, minus a getattr per node)
    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.STATEMENTS_ONLY and not _statement_level(node):
            if _small_statement(node):
                self._visit(node)
            return False
        return self._visit(node)

    def _visit(self, node: cst.CSTNode) -> bool:
        if not self._plain:
            return super().on_visit(node)
        kind = type(node)
        try:
            hook = self._visits[kind]
        except KeyError:  # the method's name is made once per class, not per node
            hook = self._visits[kind] = getattr(type(self), f"visit_{kind.__name__}", None)
        return hook is None or hook(self, node) is not False

    def on_leave(self, original_node, updated_node):
        if not self._plain:
            result = super().on_leave(original_node, updated_node)
        else:
            kind = type(original_node)
            try:
                hook = self._leaves[kind]
            except KeyError:
                hook = self._leaves[kind] = getattr(type(self), f"leave_{kind.__name__}", None)
            result = updated_node if hook is None else hook(self, original_node, updated_node)
        if result is not updated_node:
            self._rewrote = True
        return result

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        if not speedups.active():
            return super().transform_module_impl(tree)
        # a plain dispatch without attribute hooks need not go where no hook is
        plain = self._plain and self.on_visit_attribute is no_attribute_hook is self.on_leave_attribute
        skip = _untouched(type(self)) if plain else frozenset()
        if plain and _plain_dispatch(type(self)):
            # the hooks called straight from the walk (the dispatch below, inlined)
            shallow = (_statement_level, _small_statement) if self.STATEMENTS_ONLY else None
            result, rewrote = transform_dispatched(tree, self, self._visits, self._leaves, skip, shallow)
            if rewrote:
                self._rewrote = True
            if isinstance(result, cst.RemovalSentinel):  # as Module.visit answers a removal
                return tree.with_changes(body=(), header=(), footer=())
            return result  # type: ignore[return-value]
        return transform_module(tree, self, skip)

    def kept_tree(self) -> bool:
        """After ``transform_module``: True when the visit certainly gave back the
        tree it was given (no leave method replaced a node; LibCST's own visit
        may still have rebuilt it), so its code is unchanged without printing
        it. False when it may have changed: a node was replaced, imports were
        added or removed, or the class overrides ``on_leave`` or the transform
        itself, which this cannot see."""
        cls = type(self)
        return (not self._rewrote
                and cls.on_leave is TapeshiftCodemod.on_leave
                and cls.transform_module_impl is TapeshiftCodemod.transform_module_impl
                and cls.transform_module is VisitorBasedCodemodCommand.transform_module
                and AddImportsVisitor.CONTEXT_KEY not in self.context.scratch
                and RemoveImportsVisitor.CONTEXT_KEY not in self.context.scratch)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if not self._plain:
            return super().on_visit_attribute(node, attribute)
        kind = type(node)
        hook = self._hook(("visit", kind, attribute), f"visit_{kind.__name__}_{attribute}")
        if hook is not None:
            hook(node)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        if not self._plain:
            return super().on_leave_attribute(original_node, attribute)
        kind = type(original_node)
        hook = self._hook(("leave", kind, attribute), f"leave_{kind.__name__}_{attribute}")
        if hook is not None:
            hook(original_node)

    # -- metadata -----------------------------------------------------------
    @contextmanager
    def resolve(self, wrapper: MetadataWrapper) -> Iterator[None]:
        if not speedups.active():  # LibCST's: every declared provider resolved up front
            with super().resolve(wrapper):
                yield
            return
        self.metadata = OnDemand(wrapper, self.get_inherited_dependencies())
        self._names = None
        try:
            yield
        finally:
            self.metadata = {}
            self._names = None

    def get_metadata(self, key, node, default=_NO_DEFAULT):
        # qualified names, what rules ask most (once per name node, and more):
        # what ``self.metadata[key][node]`` gives on the shared metadata (every
        # node has an answer there, so ``default`` is never used), without
        # LibCST's checks and three calls on the way each time. The first read
        # goes through ``OnDemand``, which raises KeyError, as LibCST does, for
        # a rule that did not declare the provider.
        if key is QualifiedNameProvider and isinstance(self.metadata, OnDemand):
            names = self._names
            if names is None:
                names = self._names = self.metadata[key]
            return names[node]
        if default is _NO_DEFAULT:
            return super().get_metadata(key, node)
        return super().get_metadata(key, node, default)

    # -- TensorFlow names -------------------------------------------------
    def tf_api_names(self, node: cst.CSTNode) -> AbstractSet[str]:
        """The TensorFlow API names of ``node`` (``train.Saver``; "" for the module
        itself). Read-only: on the shared metadata, one set per node and tree,
        kept for every rule that reads the tree."""
        names = self._names
        if names is not None:
            known = names.api_names.get(id(node))
            if known is not None and known[0] is node:
                return known[1]
        try:
            qnames = self.get_metadata(QualifiedNameProvider, node, set())
        except KeyError:
            return set()
        out = set()
        for q in qnames:
            name = api_name(q.name)
            if name is not None:
                out.add(name)
        names = self._names
        if names is None:  # LibCST's own metadata (reference mode)
            return out
        kept = frozenset(out)
        names.api_names[id(node)] = (node, kept)  # the node kept: its id stays its own
        return kept

    def tf_api_name(self, node: cst.CSTNode) -> Optional[str]:
        names = self.tf_api_names(node)
        return min(names) if names else None

    def spelled(self, word: str) -> bool:
        """``word`` may be an identifier of the code this rule reads (False only
        when the pipeline's screen says it is spelled nowhere in it: then no
        TensorFlow name the file uses has it as a part)."""
        spelled = self.context.scratch.get(SCRATCH_IDENTIFIERS)
        return spelled is None or word in spelled

    def is_tf(self, node: cst.CSTNode, *names: str) -> bool:
        spelled = self.context.scratch.get(SCRATCH_IDENTIFIERS)
        if spelled is not None and not any(n.rpartition(".")[2] in spelled for n in names):
            return False  # every part of an API name the file uses is spelled in it
        return bool(self.tf_api_names(node) & set(names))

    def is_tf_call(self, node: cst.CSTNode, *names: str) -> bool:
        return isinstance(node, cst.Call) and self.is_tf(node.func, *names)

    @property
    def shared(self) -> dict:
        """Facts shared with the other rules migrating this file (see SCRATCH_SHARED)."""
        return self.context.scratch.setdefault(SCRATCH_SHARED, {})

    # -- records ----------------------------------------------------------
    def position(self, node: cst.CSTNode):
        """(line, column) where ``node`` starts, both from 1; (0, 0) when not in the tree."""
        if isinstance(self.metadata, OnDemand):  # shared metadata: the cheaper print
            if node is self.metadata.wrapper.module:
                return 1, 1  # where a module starts: no need to print it to know
            try:
                line, column = start_positions(self.metadata.wrapper).line_column(node)
            except KeyError:
                return 0, 0
            return line, column + 1
        try:
            start = self.get_metadata(PositionProvider, node).start
            return start.line, start.column + 1
        except KeyError:
            return 0, 0

    def report(self, code: str, node: cst.CSTNode, message: str,
               changes_numbers: bool = False) -> Finding:
        line, col = self.position(node)
        finding = make_finding(code, self.context.filename or "<string>", line, col,
                               message, changes_numbers)
        self.context.scratch.setdefault(SCRATCH_FINDINGS, []).append(finding)
        if finding.severity is not Severity.INFO:
            self.warn(f"{code} {line}:{col}: {message}")
        return finding

    def record_change(self, node: cst.CSTNode, description: str) -> None:
        line, col = self.position(node)
        self.context.scratch.setdefault(SCRATCH_CHANGES, []).append(
            Change(rule=self.RULE, path=self.context.filename or "<string>",
                   line=line, column=col, description=description))

    def remove_tf_from_imports(self, module: cst.Module,
                               should_remove: Callable[[str, str], bool]) -> None:
        """Schedule removal of module-level ``from tensorflow[.compat.v1] import
        name [as bound]`` when ``should_remove(name, bound)`` and it is unused."""
        for stmt in module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if not isinstance(small, cst.ImportFrom) or small.module is None \
                        or isinstance(small.names, cst.ImportStar):
                    continue
                mod = code_of(small.module)
                if mod not in ("tensorflow", "tensorflow.compat.v1"):
                    continue
                for alias in small.names:
                    name = code_of(alias.name)
                    asname = code_of(alias.asname.name) if alias.asname else None
                    if should_remove(name, asname or name):
                        RemoveImportsVisitor.remove_unused_import(self.context, mod, name, asname)

    def blocked(self) -> bool:
        """True when this codemod reported something that blocks tape form."""
        return any(REGISTRY[f.code].blocks_tape for f in findings_of(self.context)
                   if f.path == (self.context.filename or "<string>"))
