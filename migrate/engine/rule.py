"""Shared plumbing for the tapeshift codemods: findings, changes, TF names.

Every codemod matches TensorFlow by *qualified name* (what a name is bound to,
resolved by LibCST's scope analysis), never by the spelling ``tf.``. A name is
"TensorFlow" when its qualified name starts with ``tensorflow``; the part after
``tensorflow.``, ``tensorflow.compat.v1.`` or ``tensorflow.compat.v2.`` is its
*API name* (``gradients``, ``train.AdamOptimizer``), which the rules compare.
"""

from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from typing import (Callable, Collection, FrozenSet, Iterable, Iterator, List, Mapping, Optional, Set,
                    Tuple, Union)

import libcst as cst
from libcst.codemod import Codemod, CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.codemod.visitors._add_imports import _GatherTopImportsBeforeStatements, _skip_first
from libcst.matchers import _visitors as _matcher_visitors
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider, ScopeProvider

from tapeshift.migrate.engine.toolkit.names import import_qualified_names
from tapeshift.migrate.engine.toolkit.starts import StartPositions
from tapeshift.migrate.engine.toolkit.walk import (instance_test, no_attribute_hook, nodes, transform_module,
                                    walk)
from tapeshift.migrate.engine.findings import REGISTRY, Change, CodeInfo, Finding, Severity, make_finding

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

#: False: qualified names always come from LibCST's scope analysis (for tests).
FAST_NAMES = True

_TF_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow.")
_TF_MODULES = ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2")


def api_name(qualified: str) -> Optional[str]:
    """``tensorflow.compat.v1.train.Saver`` -> ``train.Saver``; ``""`` for the
    module itself; None when the name is not TensorFlow."""
    if qualified in _TF_MODULES:
        return ""
    for prefix in _TF_PREFIXES:
        if qualified.startswith(prefix):
            return qualified[len(prefix):]
    return None


def findings_of(context: CodemodContext) -> List[Finding]:
    return list(context.scratch.get(SCRATCH_FINDINGS, []))


def changes_of(context: CodemodContext) -> List[Change]:
    return list(context.scratch.get(SCRATCH_CHANGES, []))


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


class _QualifiedNames(Mapping):
    """``QualifiedNameProvider``'s metadata, each node's names computed when read.

    LibCST's provider walks the whole tree once more after the scope analysis,
    to store for every node a lazy ``scope.get_qualified_names_for(node)`` (an
    empty set where the scope analysis gave the node no scope): a pass that
    costs about as much as the scope analysis itself. This mapping makes that
    same call for the nodes a rule asks about, and only for them. Nodes it does
    not know (not in the tree) read as an empty set, as
    ``get_metadata(QualifiedNameProvider, node, set())`` gives them.
    """

    def __init__(self, scopes: Mapping) -> None:
        self._scopes = scopes
        self._names: dict = {}

    def __getitem__(self, node):
        try:
            return self._names[node]
        except KeyError:
            scope = self._scopes.get(node)
            names = self._names[node] = scope.get_qualified_names_for(node) if scope else set()
            return names

    def get(self, node, default=None):
        return self[node]

    def __contains__(self, node) -> bool:
        return True

    def __iter__(self):
        return iter(self._scopes)

    def __len__(self) -> int:
        return len(self._scopes)


@functools.lru_cache(maxsize=8)  # by identity: the few trees of the file being migrated
def qualified_names(wrapper: MetadataWrapper) -> Mapping:
    """The qualified names of the nodes of ``wrapper.module``: what
    ``wrapper.resolve(QualifiedNameProvider)`` gives (one mapping per wrapper,
    shared by its readers; ``clear_tree_caches()`` lets the trees go).

    Where the file's TensorFlow aliases can only mean their imports, from
    those imports alone (:mod:`tapeshift.migrate.engine.toolkit.names`: the TensorFlow and
    tf-slim names, all the rules read); else computed per node on demand from
    LibCST's scope analysis."""
    if FAST_NAMES:
        names = import_qualified_names(wrapper.module, start_positions(wrapper))
        if names is not None:
            return names
    return _QualifiedNames(wrapper.resolve(ScopeProvider))


#: id(wrapper) -> (wrapper, its start positions), for the trees of the file being migrated
_STARTS: dict = {}


def start_positions(wrapper: MetadataWrapper) -> StartPositions:
    """Where the nodes of ``wrapper.module`` start (what ``PositionProvider``'s
    ``.start`` gives), printed once per wrapper, shared by its readers."""
    known = _STARTS.get(id(wrapper))
    if known is None or known[0] is not wrapper:
        if len(_STARTS) >= 8:  # callers that never clear keep only the last few trees
            del _STARTS[next(iter(_STARTS))]
        known = _STARTS[id(wrapper)] = (wrapper, StartPositions(wrapper.module))
    return known[1]


def printed_start_positions(wrapper: MetadataWrapper) -> Optional[StartPositions]:
    """:func:`start_positions` of ``wrapper`` if some reader already asked for
    them, else None (without printing the tree for them)."""
    known = _STARTS.get(id(wrapper))
    return known[1] if known is not None and known[0] is wrapper else None


def clear_tree_caches() -> None:
    """Let the trees of the file just migrated go (the per-wrapper caches)."""
    qualified_names.cache_clear()
    _STARTS.clear()


class _OnDemand(Mapping):
    """Metadata of a wrapper, each provider resolved the first time it is read.

    Most rules read positions only when they report something, and some read no
    qualified name at all in a file without the names they look for; resolving
    every declared provider up front (what ``MetadataDependent.resolve`` does)
    costs a scope analysis and a position pass per rule even then.
    """

    def __init__(self, wrapper: MetadataWrapper, providers: Collection) -> None:
        self.wrapper = wrapper
        self._providers = frozenset(providers)

    def __getitem__(self, provider):
        if provider not in self._providers:
            raise KeyError(provider)
        if provider is QualifiedNameProvider:
            return qualified_names(self.wrapper)
        return self.wrapper.resolve(provider)  # cached by the wrapper

    def __contains__(self, provider) -> bool:
        return provider in self._providers

    def __iter__(self):
        return iter(self._providers)

    def __len__(self) -> int:
        return len(self._providers)


_ATTRIBUTE_HOOK = re.compile(r"^(visit|leave)_[A-Z][A-Za-z]*_[a-z_]+$")


@functools.lru_cache(maxsize=None)
def _has_attribute_hooks(cls: type) -> bool:
    """``cls`` has a ``visit_<Node>_<field>`` / ``leave_<Node>_<field>`` method of
    its own (LibCST's visitor classes declare them all, doing nothing)."""
    return any(_ATTRIBUTE_HOOK.match(name)
               for klass in cls.__mro__ if not klass.__module__.startswith("libcst")
               for name in vars(klass))


#: what holds statements: the nodes a ``STATEMENTS_ONLY`` rule visits the parts of
_statement_level = instance_test((cst.Module, cst.BaseStatement, cst.BaseSuite, cst.Else,
                                  cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
                                  cst.MatchCase))
_small_statement = instance_test(cst.BaseSmallStatement)

#: codemod class -> whether a method has a matcher decorator (``@m.visit``,
#: ``@m.leave``, ``@m.call_if_inside``, ``@m.call_if_not_inside``)
_DECORATED: dict = {}


class TapeshiftCodemod(VisitorBasedCodemodCommand):
    """Base class: TF name resolution and finding / change records.

    Metadata is resolved on first use (:class:`_OnDemand`), on the wrapper the
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
    #: True when no method has a matcher decorator (``@m.visit``, ``@m.call_if_inside``
    #: ...): LibCST's matcher bookkeeping on every node then changes nothing, and the
    #: visit is dispatched as a plain ``CSTTransformer`` does it, hooks looked up once.
    _plain = False
    #: False: always dispatch through LibCST's matcher machinery (for tests).
    PLAIN_DISPATCH = True
    #: True: the rule changes and reports statements only, so the visit does not
    #: go below them (expressions are most of a tree's nodes): a small statement
    #: (an import, an assignment) is visited, its parts are not.
    STATEMENTS_ONLY = False
    #: True: the transform keeps the nodes under which nothing changed
    #: (:func:`tapeshift.migrate.engine.toolkit.walk.transform`); False: LibCST's own visit,
    #: which builds every visited node again (the reference, for tests).
    KEEP_UNCHANGED = True
    #: True: the imports a rule asked for (``AddImportsVisitor.add_needed_import``)
    #: are added by LibCST's ``AddImportsVisitor`` run on the head of the module
    #: only, the statements it reads and changes (:func:`add_imports_at_head`);
    #: False: on the whole module, as LibCST runs it (the reference, for tests).
    HEAD_IMPORTS = True

    def __init__(self, context: CodemodContext) -> None:
        decorated = _DECORATED.get(type(self))
        if decorated is False and self.PLAIN_DISPATCH:
            # what LibCST's MatcherDecoratableTransformer.__init__ leaves on an instance
            # of a class without matcher decorators, without its look at every
            # attribute (dir()) for them: over 10 ms per rule and file
            Codemod.__init__(self, context)
            self._matchers = {}
            self._extra_visit_funcs = {}
            self._extra_leave_funcs = {}
        else:
            super().__init__(context)
            if decorated is None:  # decorators are on the class: the same for every instance
                decorated = _DECORATED[type(self)] = bool(
                    self._matchers or self._extra_visit_funcs or self._extra_leave_funcs)
        self._plain = self.PLAIN_DISPATCH and not decorated
        if self._plain and not _has_attribute_hooks(type(self)):
            # LibCST calls these around every child of every node: most rules have no use
            self.on_visit_attribute = self.on_leave_attribute = no_attribute_hook
        self._hooks: dict = {}
        self._visits: dict = {}  # node class -> visit_<Node> method or None
        self._leaves: dict = {}  # node class -> leave_<Node> method or None
        self._rewrote = False  # a leave method returned another node than it was given

    def _hook(self, key, name: str):
        try:
            return self._hooks[key]
        except KeyError:
            hook = self._hooks[key] = getattr(self, name, None)
            return hook

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
            hook = self._visits[kind] = getattr(self, f"visit_{kind.__name__}", None)
        return hook is None or hook(node) is not False

    def on_leave(self, original_node, updated_node):
        if not self._plain:
            result = super().on_leave(original_node, updated_node)
        else:
            kind = type(original_node)
            try:
                hook = self._leaves[kind]
            except KeyError:
                hook = self._leaves[kind] = getattr(self, f"leave_{kind.__name__}", None)
            result = updated_node if hook is None else hook(original_node, updated_node)
        if result is not updated_node:
            self._rewrote = True
        return result

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        if not self.KEEP_UNCHANGED:
            return super().transform_module_impl(tree)
        return transform_module(tree, self)

    def _instantiate_and_run(self, transform, tree: cst.Module) -> cst.Module:
        # LibCST's ContextAwareTransformer.transform_module runs the scheduled
        # AddImportsVisitor / RemoveImportsVisitor through this
        if transform is AddImportsVisitor and self.HEAD_IMPORTS:
            return add_imports_at_head(self.context, tree)
        return super()._instantiate_and_run(transform, tree)

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
        self.metadata = _OnDemand(wrapper, self.get_inherited_dependencies())
        try:
            yield
        finally:
            self.metadata = {}

    @contextmanager
    def _handle_metadata_reference(self, module: cst.Module) -> Iterator[cst.Module]:
        # LibCST's Codemod.transform_module gets the tree it transforms from here
        # (by default: a deep copy of ``module`` in a new MetadataWrapper)
        wrapper = self.context.wrapper
        if wrapper is None or wrapper.module is not module:
            with super()._handle_metadata_reference(module) as tree:
                yield tree
            return
        with self.resolve(wrapper):
            yield module

    # -- TensorFlow names -------------------------------------------------
    def tf_api_names(self, node: cst.CSTNode) -> Set[str]:
        try:
            qnames = self.get_metadata(QualifiedNameProvider, node, set())
        except KeyError:
            return set()
        out = set()
        for q in qnames:
            name = api_name(q.name)
            if name is not None:
                out.add(name)
        return out

    def tf_api_name(self, node: cst.CSTNode) -> Optional[str]:
        names = self.tf_api_names(node)
        return min(names) if names else None

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
        if isinstance(self.metadata, _OnDemand):  # shared metadata: the cheaper print
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


def _single_import(statement: cst.CSTNode) -> bool:
    """``m.SimpleStatementLine(body=[m.ImportFrom() | m.Import()])``, what
    LibCST's AddImportsVisitor takes as a line of the module's import block."""
    return (type(statement) is cst.SimpleStatementLine and len(statement.body) == 1
            and type(statement.body[0]) in (cst.Import, cst.ImportFrom))


#: LibCST's import visitors that each AddImportsVisitor run builds: classes
#: without matcher decorators, whose matcher visitor ``__init__`` still looks
#: at every attribute (``dir()``) for them, about 20 ms per instance
_NO_MATCHER_SCAN = (AddImportsVisitor, _GatherTopImportsBeforeStatements)
_SCANNED: dict = {}  # (exact class, kind) -> what the scan found the first time


def _scan_once(kind: str, scan: Callable):
    def gather(obj):
        cls = type(obj)
        if cls not in _NO_MATCHER_SCAN:
            return scan(obj)
        found = _SCANNED.get((cls, kind))
        if found is None:
            found = _SCANNED[(cls, kind)] = scan(obj)
        if found:  # decorated after all: bound to this instance, scan it
            return scan(obj)
        return {}
    gather.__wrapped__ = scan
    return gather


if hasattr(_matcher_visitors, "_gather_constructed_visit_funcs") and \
        hasattr(_matcher_visitors, "_gather_constructed_leave_funcs"):
    _matcher_visitors._gather_constructed_visit_funcs = _scan_once(
        "visit", _matcher_visitors._gather_constructed_visit_funcs)
    _matcher_visitors._gather_constructed_leave_funcs = _scan_once(
        "leave", _matcher_visitors._gather_constructed_leave_funcs)


def add_imports_at_head(context: CodemodContext, module: cst.Module) -> cst.Module:
    """What LibCST's ``AddImportsVisitor`` (scheduled in ``context``) makes of
    ``module``, run on its head only.

    That visitor reads and changes nothing but the top of the module: a first
    docstring or ``__strict__`` line (``_skip_first``), the block of one-import
    lines after it (the only imports it merges names into: its gatherer and its
    ``leave_ImportFrom`` take ``original_node in all_imports`` of that block),
    the place after that block where it inserts, and the first statement after
    it (which may get an empty line before it). Its pass over the rest of the
    tree, on a deep copy, rebuilds every node without changing one. So it runs
    on a module of those head statements (the module's own header, newline and
    indent: the parse config of the statements it adds) and the rest of the
    body follows unchanged, the same nodes as before: the same code, printed
    from the input's where unchanged (``_starts.StartPositions.code_of``).
    """
    body = module.body
    # _skip_first matches the first statement (then any): the same on a one-statement module
    start = 1 if _skip_first(module.with_changes(body=body[:1])) else 0
    end = start
    while end < len(body) and _single_import(body[end]):
        end += 1
    head = min(end + 1, len(body))  # and the statement after the block
    if head == len(body):
        return AddImportsVisitor(context).transform_module(module)
    top = AddImportsVisitor(context).transform_module(module.with_changes(body=body[:head]))
    return module.with_changes(body=(*top.body, *body[head:]))


def tf_module_alias(module: cst.Module) -> Optional[str]:
    """The name a module-level ``import tensorflow[.compat.v1] as X`` binds."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                dotted = code_of(alias.name)
                if alias.asname is not None and dotted in _TF_MODULES:
                    return code_of(alias.asname.name)
                if alias.asname is None and dotted == "tensorflow":
                    return "tensorflow"
    return None


def all_names(module: cst.Module) -> Set[str]:
    """Every identifier spelled in the module (to pick fresh names)."""
    return {node.value for node in nodes(module) if isinstance(node, cst.Name)}


def fresh_name(base: str, taken: Iterable[str]) -> str:
    taken = set(taken)
    if base not in taken:
        return base
    i = 1
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                              whitespace_after=cst.SimpleWhitespace("")),
    )


def positional_arg(value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value)


def clean_args(args: List[cst.Arg]) -> List[cst.Arg]:
    """Arguments with default commas (the last one without a trailing comma)."""
    out = []
    for i, arg in enumerate(args):
        comma = cst.MaybeSentinel.DEFAULT if i < len(args) - 1 else cst.MaybeSentinel.DEFAULT
        out.append(arg.with_changes(comma=comma))
    return out


# --------------------------------------------------------------------------
# What a name holds: "variable", "tensor", "list", "tuple" or "unknown".
# --------------------------------------------------------------------------
VARIABLE_MAKERS = frozenset({"Variable", "get_variable", "VariableV1"})
LIST_MAKERS = frozenset({
    "gradients", "hessians", "trainable_variables", "global_variables",
    "local_variables", "model_variables", "all_variables", "get_collection",
    "unstack", "split", "meshgrid", "tuple", "dynamic_partition",
})
#: TF names whose value is not a tensor (no ``.numpy()``).
NON_TENSOR = frozenset({
    "Session", "InteractiveSession", "Graph", "GradientTape", "global_variables_initializer",
    "initialize_all_variables", "local_variables_initializer", "variables_initializer",
    "initialize_variables", "float32", "float64", "int32", "int64", "bool", "TensorShape",
    "shape",
})


class KindMixin:
    """Infer, per name, what kind of value a module-level or local name holds."""

    def expr_kind(self, expr: cst.BaseExpression, kinds: dict) -> str:
        if isinstance(expr, cst.Call):
            name = self.tf_api_name(expr.func)
            if name is None:
                return "unknown"
            if name in VARIABLE_MAKERS:
                # a tape watches trainable variables only: anything else is a
                # plain tensor to it (and gets tape.watch)
                for arg in expr.args:
                    if arg.keyword is not None and arg.keyword.value == "trainable" \
                            and not (isinstance(arg.value, cst.Name) and arg.value.value == "True"):
                        return "tensor"
                if len(expr.args) > 1 and all(a.keyword is None for a in expr.args[:2]):
                    return "tensor"  # tf.Variable(value, trainable_flag, ...) positional
                return "variable"
            if name in LIST_MAKERS:
                return "list"
            if name in NON_TENSOR or "." in name and name.split(".")[0] in ("train", "summary"):
                return "unknown"
            return "tensor"
        if isinstance(expr, cst.Subscript):
            base = self.expr_kind(expr.value, kinds)
            return "tensor" if base in ("tensor", "variable", "list") else "unknown"
        if isinstance(expr, cst.BinaryOperation):
            kl = self.expr_kind(expr.left, kinds)
            kr = self.expr_kind(expr.right, kinds)
            if "list" in (kl, kr) or "tuple" in (kl, kr):
                return "unknown"
            return "tensor" if {kl, kr} & {"tensor", "variable"} else "unknown"
        if isinstance(expr, cst.UnaryOperation):
            k = self.expr_kind(expr.expression, kinds)
            return "tensor" if k in ("tensor", "variable") else "unknown"
        if isinstance(expr, cst.Name):
            return kinds.get(expr.value, "unknown")
        if isinstance(expr, cst.List):
            return "list"
        if isinstance(expr, cst.Tuple):
            return "tuple"
        return "unknown"

    def infer_kinds(self, module: cst.Module):
        """(kinds, list_elements) for every name assigned in the module."""
        kinds: dict = {}
        elements: dict = {}
        for node, _ in walk(module):  # assignments in the order they are written
            if type(node) is not cst.Assign or len(node.targets) != 1:
                continue
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                kind = self.expr_kind(node.value, kinds)
                name = target.value
                if name in kinds and kinds[name] != kind:
                    kind = "unknown"
                kinds[name] = kind
                if isinstance(node.value, cst.List) and all(
                        isinstance(e.value, cst.Name) for e in node.value.elements):
                    elements[name] = [e.value.value for e in node.value.elements]
                else:
                    elements.pop(name, None)
            elif isinstance(target, (cst.Tuple, cst.List)):
                # g1, g2 = tf.gradients(l, [a, b]) -> elements are tensors
                vk = self.expr_kind(node.value, kinds)
                for el in target.elements:
                    if isinstance(el.value, cst.Name):
                        kinds[el.value.value] = "tensor" if vk == "list" else "unknown"
        return kinds, elements
