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
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodePosition, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import NEWLINE_RE

from tapeshift.migrate.engine.libcst_speedups import (Printed, Statement, active, copy_statements,
                                                      print_parts_with_starts, print_with_starts)


class StartPositions:
    """Start positions of the nodes of one module, printed once on creation."""

    def __init__(self, module: cst.Module, printed: Optional[Printed] = None) -> None:
        """``printed``: what printing ``module`` recorded (:meth:`derived` composes
        it); by default ``module`` is printed here."""
        if not active():
            self._from_libcst(module)
            return
        state = print_with_starts(module) if printed is None else printed
        #: id(node) -> its start's token index (the nodes are alive: ids are theirs)
        self._starts = state.starts
        self._nodes = state.nodes
        #: what the print recorded (rule outputs' positions are composed from it)
        self._printed: Optional[Printed] = state
        #: the module's code (printed here anyway)
        self.code = "".join(state.tokens)
        #: ids of the Name nodes that label rather than refer (``x.attr``,
        #: ``f(keyword=...)``), which LibCST's scope analysis never visits: seen
        #: on the way, so that ``_names`` need not walk the tree for them
        self.labels = frozenset(map(id, state.labels))
        self._lines = [0] + [m.end() for m in NEWLINE_RE.finditer(self.code)]
        #: token index -> character offset
        self._offsets = [0, *itertools.accumulate(map(len, state.tokens))]
        self._module = module
        # a module without a final newline drops its last part's (spans say where it was)
        self._spans = state.spans if module.has_trailing_newline else {}
        #: id(part) -> (part, its print) for the parts of rule outputs code_of printed
        self._part_prints: Dict[int, Tuple[cst.CSTNode, Printed]] = {}
        #: for positions :meth:`derived` composed: the module the kept parts come from,
        #: and the statements of the body that are not that module's (printed anew)
        self.kept_from: Optional[cst.Module] = None
        self.changed: Tuple[cst.CSTNode, ...] = ()

    @classmethod
    def derived(cls, old: "StartPositions", module: cst.Module) -> Optional["StartPositions"]:
        """The start positions of ``module``, a rule's output from ``old``'s module
        whose node objects each appear once, without printing it all: the parts
        of ``old``'s module it kept (the same statement objects, which a rule that
        keeps what it does not change hands on) have the tokens, starts and labels
        ``old``'s print gave them, shifted; the other parts are printed. What a
        print of ``module`` gives, node for node (``test_start_positions.py``).
        None where that does not hold by construction (no final newline, another
        indent or newline, no parts)."""
        if old._printed is None or not old._spans:
            return None
        parts = (*module.header, *module.body, *module.footer)
        if not (parts and module.has_trailing_newline
                and module.default_indent == old._module.default_indent
                and module.default_newline == old._module.default_newline):
            return None
        tokens: List[str] = []
        starts: Dict[int, int] = {}
        nodes: List[cst.CSTNode] = []
        labels: List[cst.Name] = []
        spans: Dict[cst.CSTNode, Tuple[int, int, int, int, int, int]] = {}
        statements: List[Statement] = []
        statement_index: Dict[int, int] = {}
        changed: List[cst.CSTNode] = []
        for part in parts:
            span = old._spans.get(part)
            if span is not None and part not in spans:
                source: Printed = old._printed  # kept: as the input's print has it
            else:  # changed (or there twice): printed, by code_of already where it could
                changed.append(part)
                known = old._part_prints.get(id(part))
                source = known[1] if known is not None and known[0] is part and part not in spans \
                    else print_parts_with_starts((part,), module, old._printed)
                span = source.spans[part]
            t0, t1, n0, n1, l0, l1 = span
            shift = len(tokens) - t0
            spans[part] = (t0 + shift, t1 + shift, len(nodes), len(nodes) + n1 - n0,
                           len(labels), len(labels) + l1 - l0)
            index = source.statement_index.get(id(part))
            if index is not None and source.statements[index][0] is part:
                copy_statements(statements, statement_index, source, index, shift,
                                len(nodes) - n0, len(labels) - l0)
            tokens.extend(source.tokens[t0:t1])
            part_nodes = source.nodes[n0:n1]
            starts.update((key, source.starts[key] + shift) for key in map(id, part_nodes))
            nodes.extend(part_nodes)
            labels.extend(source.labels[l0:l1])
        starts[id(module)] = 0  # the module starts where its code does, and comes last
        nodes.append(module)
        out = cls(module, Printed(tokens, starts, nodes, labels, spans, statements, statement_index))
        out.kept_from = old._module
        body = set(map(id, module.body))
        out.changed = tuple(part for part in changed if id(part) in body)
        return out

    def part_nodes(self, part: cst.CSTNode) -> Sequence[cst.CSTNode]:
        """The nodes of one of the module's own parts (empty: not one of them)."""
        span = self._spans.get(part)
        return self._nodes[span[2]:span[3]] if span is not None else ()

    def _from_libcst(self, module: cst.Module) -> None:
        """The same answers from LibCST's ``PositionProvider`` (the reference)."""
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        self.code = module.code
        self.labels = frozenset(
            id(label) for node in positions
            for label in ((node.attr,) if type(node) is cst.Attribute else
                          (node.keyword,) if type(node) is cst.Arg and node.keyword is not None
                          else ()))
        self._lines = [0] + [m.end() for m in NEWLINE_RE.finditer(self.code)]
        # offsets of each node's start, so that line_column answers as above
        self._offsets = [self._lines[p.start.line - 1] + p.start.column
                         for p in positions.values()]
        self._nodes = list(positions)
        self._starts = {id(node): i for i, node in enumerate(self._nodes)}
        self._printed = None  # nothing to derive another module's positions from
        self._part_prints = {}
        self.kept_from = None
        self.changed = ()
        self._module = module
        self._spans = {}  # code_of prints the whole module

    def __contains__(self, node: cst.CSTNode) -> bool:
        return id(node) in self._starts

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._starts)

    def line_column(self, node: cst.CSTNode) -> Tuple[int, int]:
        """(line, column) as ``PositionProvider`` gives them: line from 1, column from 0.
        KeyError for a node not in the module."""
        offset = self._offsets[self._starts[id(node)]]
        line = bisect.bisect_right(self._lines, offset)
        return line, offset - self._lines[line - 1]

    def start(self, node: cst.CSTNode) -> CodePosition:
        return CodePosition(*self.line_column(node))

    def part_end(self, part: cst.CSTNode) -> Optional[int]:
        """Where one of the module's own parts ends in :attr:`code` (None: not known)."""
        span = self._spans.get(part)
        return self._offsets[span[1]] if span is not None else None

    def part_code(self, part: cst.CSTNode) -> str:
        """The code of one of the module's own parts (a statement of its body,
        a header or footer line), as the module prints it."""
        span = self._spans.get(part)
        if span is None:
            return self._module.code_for_node(part)
        return self.code[self._offsets[span[0]]:self._offsets[span[1]]]

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
                # printed as Module prints its parts, where each node starts noted on
                # the way: the positions of the output, if read, need this print too
                printed = print_parts_with_starts((part,), module, self._printed)
                self._part_prints[id(part)] = (part, printed)
                out.append("".join(printed.tokens))
            else:
                out.append(self.code[self._offsets[span[0]]:self._offsets[span[1]]])
        return "".join(out)
