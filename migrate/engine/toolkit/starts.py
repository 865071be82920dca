"""Where each node starts: ``PositionProvider``'s ``.start``, for a fifth of its cost.

(The same print also gives the module's code, its label names and where each
of its top-level parts is in that code, below.)

Findings and changes name the line and column a node starts at, nothing else.
LibCST's ``PositionProvider`` prints the module once with a codegen state that
builds a ``CodeRange`` of two ``CodePosition`` dataclasses for every node and
splits every token on newlines to keep a running line and column. Here the same
print keeps only a character offset per node (the same rules decide which
offset: the node's syntactic start where its codegen records one, or the
``start_node`` it names, else where its whitespace starts), and line and column
are worked out from the printed text for the nodes a rule asks about.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition

from libcst.metadata.position_provider import NEWLINE_RE


@dataclass(frozen=False)
class _StartsState(CodegenState):
    """A codegen state that records the token each node starts at (its index:
    character offsets are summed once at the end, not kept token by token)."""

    starts: Dict[cst.CSTNode, int] = field(default_factory=dict)
    labels: List[cst.Name] = field(default_factory=list)
    #: the module's own parts (header lines, statements, footer lines) -> (start, end)
    spans: Dict[cst.CSTNode, Tuple[int, int]] = field(default_factory=dict)
    _stack: List[int] = field(default_factory=list)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append(len(self.tokens))
        kind = type(node)
        if kind is cst.Attribute:
            self.labels.append(node.attr)
        elif kind is cst.Arg and node.keyword is not None:
            self.labels.append(node.keyword)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        if node not in self.starts:  # a syntactic start, when recorded, wins
            self.starts[node] = start
        if len(self._stack) == 1:  # printed by the module itself: one of its parts
            self.spans[node] = (start, len(self.tokens))

    def record_syntactic_position(self, node: cst.CSTNode, *,
                                  start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node)


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
        starts[self.node] = starts[self.start_node] if self.start_node is not None else self.start
        return False


class StartPositions:
    """Start positions of the nodes of one module, printed once on creation."""

    def __init__(self, module: cst.Module) -> None:
        state = _StartsState(default_indent=module.default_indent,
                             default_newline=module.default_newline)
        module._codegen(state)
        self._starts = state.starts
        #: the module's code (printed here anyway)
        self.code = "".join(state.tokens)
        #: ids of the Name nodes that label rather than refer (``x.attr``,
        #: ``f(keyword=...)``), which LibCST's scope analysis never visits: seen
        #: on the way, so that ``_names`` need not walk the tree for them
        self.labels = frozenset(id(name) for name in state.labels)
        self._lines = [0] + [m.end() for m in NEWLINE_RE.finditer(self.code)]
        #: token index -> character offset
        self._offsets = [0, *itertools.accumulate(map(len, state.tokens))]
        self._module = module
        # a module without a final newline drops its last part's (spans say where it was)
        self._spans = state.spans if module.has_trailing_newline else {}

    def __contains__(self, node: cst.CSTNode) -> bool:
        return node in self._starts

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._starts)

    def __len__(self) -> int:
        return len(self._starts)

    def line_column(self, node: cst.CSTNode) -> Tuple[int, int]:
        """(line, column) as ``PositionProvider`` gives them: line from 1, column from 0.
        KeyError for a node not in the module."""
        offset = self._offsets[self._starts[node]]
        line = bisect.bisect_right(self._lines, offset)
        return line, offset - self._lines[line - 1]

    def start(self, node: cst.CSTNode) -> CodePosition:
        return CodePosition(*self.line_column(node))

    def code_of(self, module: cst.Module) -> str:
        """``module.code`` for a module made from this one (a rule's output), its
        unchanged parts copied from this code instead of printed again: a rule
        that keeps the nodes it does not change (``_walk.transform``) changes a
        few statements of a file, and printing it all is most of what is left
        of a pass."""
        old = self._module
        parts = (*module.header, *module.body, *module.footer)
        if not (parts and module.has_trailing_newline and self._spans
                and module.default_indent == old.default_indent
                and module.default_newline == old.default_newline):
            return module.code
        out = []
        for part in parts:
            span = self._spans.get(part)
            if span is None:
                out.append(module.code_for_node(part))  # as Module prints its parts
            else:
                out.append(self.code[self._offsets[span[0]]:self._offsets[span[1]]])
        return "".join(out)
