"""Metadata of the trees of the file being migrated, computed once and shared.

The qualified names and start positions of a tree are asked for by every rule
that reads it; here they are computed once per wrapper (and dropped with
:func:`clear_tree_caches` when the file is done), and the other providers are
resolved only when a rule first reads them (:class:`OnDemand`).
"""

from __future__ import annotations

import functools
from typing import Collection, Mapping, Optional, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider, ScopeProvider

from tapeshift.migrate.engine.libcst_speedups import active
from tapeshift.migrate.engine.toolkit.names import clear_analyses, import_qualified_names
from tapeshift.migrate.engine.toolkit.starts import StartPositions


class QualifiedNames(Mapping):
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
        #: id(node) -> (node, its TensorFlow API names): TapeshiftCodemod.tf_api_names's
        #: answers, shared by the rules that read this tree
        self.api_names: dict = {}

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
    if active():  # else the reference: LibCST's scope analysis alone
        names = import_qualified_names(wrapper.module, start_positions(wrapper))
        if names is not None:
            return names
    return QualifiedNames(wrapper.resolve(ScopeProvider))


#: id(wrapper) -> (wrapper, its start positions), for the trees of the file being migrated
_STARTS: dict = {}
#: id(module) -> (module, the start positions of the module a rule made it from)
_DERIVED: dict = {}


def start_positions(wrapper: MetadataWrapper) -> StartPositions:
    """Where the nodes of ``wrapper.module`` start (what ``PositionProvider``'s
    ``.start`` gives), printed once per wrapper, shared by its readers (for a
    rule's output noted with :func:`note_derived`, composed from its input's)."""
    known = _STARTS.get(id(wrapper))
    if known is None or known[0] is not wrapper:
        if len(_STARTS) >= 8:  # callers that never clear keep only the last few trees
            del _STARTS[next(iter(_STARTS))]
        module = wrapper.module
        parent = _DERIVED.get(id(module))
        starts = None
        if parent is not None and parent[0] is module:
            starts = StartPositions.derived(parent[1], module)
        known = _STARTS[id(wrapper)] = (wrapper, starts or StartPositions(module))
    return known[1]


def node_start(wrapper: MetadataWrapper, node: cst.CSTNode) -> Tuple[int, int]:
    """(line, column) where ``node`` starts, as ``PositionProvider``'s ``.start``
    gives them (line from 1, column from 0): from :func:`start_positions`, the
    print the rules share, or in reference mode from LibCST's provider."""
    if active():
        return start_positions(wrapper).line_column(node)
    start = wrapper.resolve(PositionProvider)[node].start
    return start.line, start.column


def note_derived(module, parent: StartPositions) -> None:
    """``module`` (each node object in one place) is a rule's output from the
    module of ``parent``, keeping some of its parts: its start positions, when
    asked for, are composed from ``parent``'s (:meth:`StartPositions.derived`)."""
    if len(_DERIVED) >= 8:
        del _DERIVED[next(iter(_DERIVED))]
    _DERIVED[id(module)] = (module, parent)


def printed_start_positions(wrapper: MetadataWrapper) -> Optional[StartPositions]:
    """:func:`start_positions` of ``wrapper`` if some reader already asked for
    them, else None (without printing the tree for them)."""
    known = _STARTS.get(id(wrapper))
    return known[1] if known is not None and known[0] is wrapper else None


def clear_tree_caches() -> None:
    """Let the trees of the file just migrated go (the per-wrapper caches)."""
    qualified_names.cache_clear()
    clear_analyses()
    _STARTS.clear()
    _DERIVED.clear()


class OnDemand(Mapping):
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

