"""Every use of LibCST's internals, in one place, and the switch that turns them off.

The engine is fast because it does less than LibCST does on its own, and some
of that needs LibCST's private names (anything spelled with a leading
underscore, and the codegen state's internals):

* a node's fields, in the order LibCST visits them, and a node rebuilt from
  children already visited (``CSTNode._visit_and_replace_children``), for the
  walks and the transform that keeps unchanged nodes
  (:mod:`tapeshift.migrate.engine.toolkit.walk`);
* the module printed once with a codegen state that records where each node
  starts (``CodegenState``, ``Module._codegen``), for positions and for
  printing a rule's output from its input's text
  (:mod:`tapeshift.migrate.engine.toolkit.starts`);
* ``AddImportsVisitor`` run on the head of the module only (its
  ``_skip_first`` and ``_GatherTopImportsBeforeStatements``), and LibCST's
  scan of a visitor for matcher decorators made once per class (the
  ``_matchers`` / ``_extra_*_funcs`` it leaves, its ``_gather_constructed_*``);
* the two ``Codemod`` methods the base class overrides
  (``_handle_metadata_reference``: metadata shared between rules;
  ``_instantiate_and_run``: the head-only imports).

None of it is LibCST's public API, so a LibCST release may change any of it.
:func:`active` is the one switch every shortcut reads: False in reference mode
(:mod:`tapeshift.migrate.engine.settings`) and on a LibCST version outside
:data:`TESTED` (the range the corpus was compared on, byte for byte, with
reference mode), where the engine runs as plain LibCST: correct, slower.
"""

from __future__ import annotations

import importlib.metadata
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine import settings

#: LibCST minor versions (major, minor) the shortcuts were tested with: the
#: test suite and the corpus byte-compared with reference mode (keep in step
#: with ``install_requires`` in setup.cfg)
TESTED = ((1, 8), (1, 9))


def supported(version: str) -> bool:
    """``version`` (LibCST's ``__version__``) is one of :data:`TESTED`."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return match is not None and (int(match[1]), int(match[2])) in TESTED


def _installed_version() -> str:
    try:
        return importlib.metadata.version("libcst")
    except importlib.metadata.PackageNotFoundError:  # not installed as a distribution
        return ""


#: the LibCST installed, as its distribution says (the package has no __version__)
LIBCST_VERSION = _installed_version()
#: the installed LibCST is one the shortcuts were tested with
SUPPORTED = supported(LIBCST_VERSION)

if SUPPORTED:
    # imported only where they are known to exist
    from libcst._nodes.internal import CodegenState
    from libcst.codemod.visitors._add_imports import _GatherTopImportsBeforeStatements, _skip_first
    from libcst.matchers import _visitors as _matcher_visitors
else:  # pragma: no cover - an untested LibCST: reference mode, nothing of this is used
    CodegenState = object
    _GatherTopImportsBeforeStatements = _skip_first = _matcher_visitors = None


def active() -> bool:
    """The shortcuts are in use: a tested LibCST, and reference mode is off."""
    return SUPPORTED and not settings.reference()


# -- parsing ------------------------------------------------------------------------
def _not_validated(node: cst.CSTNode) -> None:
    return None


def parse_module(source: str) -> cst.Module:
    """``cst.parse_module(source)``. With the shortcuts on, the nodes the parser
    makes are not validated one by one (``CSTNode.__post_init__`` runs
    ``_validate``: a fifth of the parse; LibCST's own comment there says so):
    they come from its grammar, and the pipeline has Python's parser read the
    same text before anything relies on the tree. Nodes the rules make are
    validated as always."""
    if not active():
        return cst.parse_module(source)
    base = cst.CSTNode
    validating = base.__dict__["__post_init__"]
    base.__post_init__ = _not_validated
    try:
        return cst.parse_module(source)
    finally:
        base.__post_init__ = validating


# -- a node's fields -----------------------------------------------------------
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


def visited_fields(node: cst.CSTNode) -> List[str]:
    """The fields of ``node`` LibCST visits, in its order."""
    recorder = _FieldRecorder()
    node._visit_and_replace_children(recorder)
    return recorder.fields


class _Replay(cst.CSTTransformer):
    """Hands LibCST a node's children as already visited, so that LibCST builds
    the new node from them with its own rules for each field."""

    def __init__(self, results: Sequence[object]) -> None:
        self._results = iter(results)

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_leave(self, original_node, updated_node):
        return next(self._results)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


def rebuild(node: cst.CSTNode, results: Sequence[object]) -> cst.CSTNode:
    """``node`` built again by LibCST from ``results``: its visited children
    (nodes, removals, flattenings), in the order of :func:`visited_fields`."""
    return node._visit_and_replace_children(_Replay(results))


# -- where each node starts ---------------------------------------------------------
@dataclass(frozen=False)
class _StartsState(CodegenState):
    """A codegen state that records the token each node starts at (its index:
    character offsets are summed once at the end, not kept token by token).
    Keyed by ``id(node)``: a node's hash is a Python method, called twice per
    node and print otherwise (the nodes are kept alive in ``nodes``)."""

    starts: Dict[int, int] = field(default_factory=dict)
    #: the nodes, in the order they got their start
    nodes: List[cst.CSTNode] = field(default_factory=list)
    labels: List[cst.Name] = field(default_factory=list)
    #: the module's own parts (header lines, statements, footer lines) -> (start token,
    #: end token, first node, end node, first label, end label): indexes into
    #: ``tokens``, ``nodes`` and ``labels``, whose entries for one part are consecutive
    spans: Dict[cst.CSTNode, Tuple[int, int, int, int, int, int]] = field(default_factory=dict)
    #: every statement printed, in the order its print ended: :data:`Statement`
    statements: List["Statement"] = field(default_factory=list)
    #: id(statement) -> its index in ``statements``
    statement_index: Dict[int, int] = field(default_factory=dict)
    #: a print of the same statements to copy from (:meth:`copy_statement`)
    reuse: Optional["Printed"] = None
    _stack: List[int] = field(default_factory=list)
    #: id(statement) -> (nodes, labels, indent, statements) when its print began
    _open: Dict[int, Tuple[int, int, Tuple[str, ...], int]] = field(default_factory=dict)
    #: (nodes, labels) recorded when the last part ended
    _part_end: Tuple[int, int] = (0, 0)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append(len(self.tokens))
        kind = type(node)
        if kind is cst.Attribute:
            self.labels.append(node.attr)
        elif kind is cst.Arg and node.keyword is not None:
            self.labels.append(node.keyword)
        elif kind in _STATEMENT_CLASSES:
            self._open[id(node)] = (len(self.nodes), len(self.labels), tuple(self.indent_tokens),
                                    len(self.statements))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        key = id(node)
        if key not in self.starts:  # a syntactic start, when recorded, wins
            self.starts[key] = start
            self.nodes.append(node)
        opened = self._open.pop(key, None) if type(node) in _STATEMENT_CLASSES else None
        if opened is not None:
            first_node, first_label, indent, first_statement = opened
            self.statement_index[key] = len(self.statements)
            self.statements.append((node, start, len(self.tokens), first_node, len(self.nodes),
                                    first_label, len(self.labels), indent, first_statement))
        if len(self._stack) == 1:  # printed by the module itself: one of its parts
            nodes, labels = len(self.nodes), len(self.labels)
            first_node, first_label = self._part_end
            self.spans[node] = (start, len(self.tokens), first_node, nodes, first_label, labels)
            self._part_end = (nodes, labels)

    def copy_statement(self, node: cst.CSTNode) -> bool:
        """Print ``node``, a statement inside a part, as :attr:`reuse` printed it,
        copying what that print recorded of it instead of printing it again;
        False (nothing done) where that would not be what printing it here
        gives: not printed there, printed at another indent, or a node of it
        already printed here."""
        source = self.reuse
        if source is None or len(self._stack) < 2:
            return False
        index = source.statement_index.get(id(node))
        if index is None:
            return False
        entry = source.statements[index]
        if entry[0] is not node or entry[7] != tuple(self.indent_tokens):
            return False
        _, t0, t1, n0, n1, l0, l1, _, _ = entry
        part_nodes = source.nodes[n0:n1]
        starts = self.starts
        if not starts.keys().isdisjoint(map(id, part_nodes)):
            return False
        shift = len(self.tokens) - t0
        old_starts = source.starts
        for inner in part_nodes:
            key = id(inner)
            starts[key] = old_starts[key] + shift
        copy_statements(self.statements, self.statement_index, source, index, shift,
                        len(self.nodes) - n0, len(self.labels) - l0)
        self.tokens.extend(source.tokens[t0:t1])
        self.nodes.extend(part_nodes)
        self.labels.extend(source.labels[l0:l1])
        return True

    def record_syntactic_position(self, node: cst.CSTNode, *,
                                  start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node)


#: what a print records of a statement: (the statement, first token, end token, first
#: node, end node, first label, end label, the indent it was printed at, the index of
#: the first statement inside it in the print's list)
Statement = Tuple[cst.CSTNode, int, int, int, int, int, int, Tuple[str, ...], int]

#: LibCST's statement classes: the nodes a print records (another class's nodes,
#: a subclass made elsewhere, are printed each time)
_STATEMENT_CLASSES = frozenset(c for c in vars(cst).values()
                               if isinstance(c, type) and issubclass(c, cst.BaseStatement))


def copy_statements(statements: List[Statement], index_of: Dict[int, int], source: "Printed",
                    index: int, token_shift: int, node_shift: int, label_shift: int) -> None:
    """Append to ``statements`` (and ``index_of``) what ``source`` recorded of its
    statement number ``index`` and of the statements inside it, moved by the shifts."""
    base = len(statements)
    first = source.statements[index][8]
    for k in range(first, index + 1):
        node, t0, t1, n0, n1, l0, l1, indent, inner = source.statements[k]
        index_of[id(node)] = len(statements)
        statements.append((node, t0 + token_shift, t1 + token_shift, n0 + node_shift,
                           n1 + node_shift, l0 + label_shift, l1 + label_shift, indent,
                           inner - first + base))


class _Syntactic:
    """``with state.record_syntactic_position(node)``: where ``node``'s own text
    starts (a plain class: a generator-based context manager costs more, and
    LibCST asks for one for most nodes)."""

    __slots__ = ("state", "node", "start_node", "start")

    def __init__(self, state: _StartsState, node: cst.CSTNode,
                 start_node: Optional[cst.CSTNode]) -> None:
        self.state, self.node, self.start_node = state, node, start_node

    def __enter__(self) -> None:
        self.start = len(self.state.tokens)

    def __exit__(self, *exc) -> bool:
        starts = self.state.starts
        key = id(self.node)
        if key not in starts:
            self.state.nodes.append(self.node)
        starts[key] = starts[id(self.start_node)] if self.start_node is not None else self.start
        return False


@dataclass
class Printed:
    """What :func:`print_with_starts` records while it prints a module."""

    tokens: List[str]
    #: id(node) -> index of the token it starts at
    starts: Dict[int, int]
    #: the nodes of ``starts``, in the order they got their start
    nodes: List[cst.CSTNode]
    #: the Name nodes that label (``x.attr``, ``f(keyword=...)``), in print order
    labels: List[cst.Name]
    #: the module's own parts -> (first token, end token, first node, end node, first
    #: label, end label)
    spans: Dict[cst.CSTNode, Tuple[int, int, int, int, int, int]]
    #: every statement printed (:data:`Statement`), in the order its print ended
    statements: List[Statement] = field(default_factory=list)
    #: id(statement) -> its index in ``statements``
    statement_index: Dict[int, int] = field(default_factory=dict)


def print_with_starts(module: cst.Module) -> Printed:
    """Print ``module`` once, recording where each node starts (the rules of
    LibCST's ``PositionProvider``: a node's syntactic start where its codegen
    records one, or the ``start_node`` it names, else where its whitespace
    starts)."""
    state = _StartsState(default_indent=module.default_indent,
                         default_newline=module.default_newline)
    module._codegen(state)
    return _printed(state)


def _printed(state: _StartsState) -> Printed:
    return Printed(state.tokens, state.starts, state.nodes, state.labels, state.spans,
                   state.statements, state.statement_index)


def print_parts_with_starts(parts: Sequence[cst.CSTNode], module: cst.Module,
                            reuse: Optional[Printed] = None) -> Printed:
    """Print some of ``module``'s own parts (header lines, statements, footer
    lines) as the module prints them, recording what :func:`print_with_starts`
    records of them (the module's own start and its end of file excepted).

    ``reuse``: the print of a module whose statements the parts may hold
    (a rule's input, whose unchanged statements its output keeps): a statement
    inside a part that it printed at the same indent is copied from it, what
    it recorded of that statement with it, instead of printed again."""
    state = _StartsState(default_indent=module.default_indent,
                         default_newline=module.default_newline, reuse=reuse)
    state._stack.append(0)  # in the module, as its parts are printed
    if reuse is None or not reuse.statement_index:
        for part in parts:
            part._codegen(state)
        return _printed(state)
    base = cst.CSTNode
    printing = base.__dict__["_codegen"]
    base._codegen = _codegen_copying
    try:
        for part in parts:
            part._codegen(state)
    finally:
        base._codegen = printing
    return _printed(state)


def _codegen_copying(self: cst.CSTNode, state: CodegenState, **kwargs) -> None:
    """``CSTNode._codegen``, a statement copied from an earlier print where it can be."""
    if kwargs or type(self) not in _STATEMENT_CLASSES or type(state) is not _StartsState \
            or not state.copy_statement(self):
        state.before_codegen(self)
        self._codegen_impl(state, **kwargs)
        state.after_codegen(self)


# -- imports added on the head of the module -----------------------------------------
def _single_import(statement: cst.CSTNode) -> bool:
    """``m.SimpleStatementLine(body=[m.ImportFrom() | m.Import()])``, what
    LibCST's AddImportsVisitor takes as a line of the module's import block."""
    return (type(statement) is cst.SimpleStatementLine and len(statement.body) == 1
            and type(statement.body[0]) in (cst.Import, cst.ImportFrom))


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
    from the input's where unchanged (``StartPositions.code_of``).
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
    # of the statement after the block the visitor reads that it is not an import
    # line and may give it an empty line before: a one-line stand-in with its leading
    # lines (a class of a thousand lines there would be walked and rebuilt)
    after = body[head - 1]  # head == end + 1: the statement after the block
    stand_in = cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=after.leading_lines)
    top = AddImportsVisitor(context).transform_module(
        module.with_changes(body=(*body[:head - 1], stand_in)))
    new_head = list(top.body)
    last = new_head[-1]
    # the visitor works on a copy (LibCST's MetadataWrapper): the stand-in is known by its
    # shape, a lone `pass` line; were the statement itself such a line, it is the same
    if not (type(last) is cst.SimpleStatementLine and len(last.body) == 1
            and type(last.body[0]) is cst.Pass and last.body[0].semicolon is cst.MaybeSentinel.DEFAULT):
        # not where it was expected: the visitor on the real statement
        top = AddImportsVisitor(context).transform_module(module.with_changes(body=body[:head]))
        return module.with_changes(body=(*top.body, *body[head:]))
    same = len(last.leading_lines) == len(after.leading_lines) and all(
        a.deep_equals(b) for a, b in zip(last.leading_lines, after.leading_lines))
    new_head[-1] = after if same else after.with_changes(leading_lines=last.leading_lines)
    return module.with_changes(body=(*new_head, *body[head:]))


# -- matcher decorators ---------------------------------------------------------------
def init_without_matcher_scan(codemod, context: CodemodContext) -> None:
    """What LibCST's ``MatcherDecoratableTransformer.__init__`` leaves on an
    instance of a class without matcher decorators, without its look at every
    attribute (``dir()``) for them: over 10 ms per rule and file."""
    from libcst.codemod import Codemod

    Codemod.__init__(codemod, context)
    codemod._matchers = {}
    codemod._extra_visit_funcs = {}
    codemod._extra_leave_funcs = {}


def has_matcher_decorators(visitor) -> bool:
    """A visitor LibCST's ``__init__`` scanned has a matcher decorator
    (``@m.visit``, ``@m.leave``, ``@m.call_if_inside`` ...)."""
    return bool(visitor._matchers or visitor._extra_visit_funcs or visitor._extra_leave_funcs)


#: (exact class, kind) -> what the scan found the first time
_SCANNED: dict = {}


def _scan_once(kind: str, scan: Callable, classes: tuple):
    """LibCST's scan for decorated methods, for ``classes`` (without matcher
    decorators; the scan costs about 20 ms per instance) done once per class."""
    def gather(obj):
        cls = type(obj)
        if cls not in classes or not active():
            return scan(obj)
        found = _SCANNED.get((cls, kind))
        if found is None:
            found = _SCANNED[(cls, kind)] = scan(obj)
        if found:  # decorated after all: bound to this instance, scan it
            return scan(obj)
        return type(found)()  # an empty dict or set, as the scan gives
    gather.__wrapped__ = scan
    return gather


if SUPPORTED and hasattr(_matcher_visitors, "_gather_constructed_visit_funcs") and \
        hasattr(_matcher_visitors, "_gather_constructed_leave_funcs"):
    # LibCST's import visitors, which each AddImportsVisitor run builds
    _NO_MATCHER_SCAN = (AddImportsVisitor, _GatherTopImportsBeforeStatements)
    _matcher_visitors._gather_constructed_visit_funcs = _scan_once(
        "visit", _matcher_visitors._gather_constructed_visit_funcs, _NO_MATCHER_SCAN)
    _matcher_visitors._gather_constructed_leave_funcs = _scan_once(
        "leave", _matcher_visitors._gather_constructed_leave_funcs, _NO_MATCHER_SCAN)
    if hasattr(_matcher_visitors, "_gather_matchers"):
        # and the matchers of their call_if_inside decorators, gathered at the first
        # node each visits (a look at every attribute again, a quarter of their cost)
        _matcher_visitors._gather_matchers = _scan_once(
            "matchers", _matcher_visitors._gather_matchers, _NO_MATCHER_SCAN)


# -- the Codemod methods the base class overrides --------------------------------------
class CodemodOverrides:
    """The private ``Codemod`` methods :class:`tapeshift.migrate.engine.rule.TapeshiftCodemod`
    overrides (listed before LibCST's class among its bases). Each does what
    LibCST does unless :func:`active`."""

    def _instantiate_and_run(self, transform, tree: cst.Module) -> cst.Module:
        # LibCST's ContextAwareTransformer.transform_module runs the scheduled
        # AddImportsVisitor / RemoveImportsVisitor through this
        if transform is AddImportsVisitor and active():
            return add_imports_at_head(self.context, tree)
        return super()._instantiate_and_run(transform, tree)

    @contextmanager
    def _handle_metadata_reference(self, module: cst.Module) -> Iterator[cst.Module]:
        # LibCST's Codemod.transform_module gets the tree it transforms from here
        # (by default: a deep copy of ``module`` in a new MetadataWrapper); the
        # caller's wrapper of that very tree is used instead (its metadata shared)
        wrapper = self.context.wrapper
        if wrapper is None or wrapper.module is not module or not active():
            with super()._handle_metadata_reference(module) as tree:
                yield tree
            return
        with self.resolve(wrapper):
            yield module
