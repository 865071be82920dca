"""The feeds rule's fetches: what a ``sess.run`` asks for, and what it reads.

A fetch is a graph value by name (or a list or dict of them), an expression of
graph values built in the call itself (``sess.run(tf.reduce_mean(...), feed)``:
TF1 added its ops there and ran them at once), or, in a function that runs after
the session opens, a local computed from values (``sess.run(correct, feed)`` of a
``correct = tf.equal(...)`` of what earlier runs returned), which eager code has
computed already and which becomes its NumPy value.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.tf1_api import INITIALIZERS
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.feeds_graph import RANDOM_PREFIXES
from tapeshift.migrate.rules.feeds_steps import loaded_refs
from tapeshift.migrate.rules.session import TS107


def fetched(fetch: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The values a fetch list or tuple lists, or the fetch itself."""
    return [e.value for e in fetch.elements] if isinstance(fetch, (cst.List, cst.Tuple)) \
        else [fetch]


def local_bindings(fn: cst.FunctionDef) -> Dict[str, List[Optional[cst.BaseExpression]]]:
    """Each local of ``fn`` -> what each of its bindings binds: the value of ``name =
    value``, None for any other binding (a tuple target, a loop, ``+=``, ``with ...
    as``); each parameter -> []."""
    out: Dict[str, List[Optional[cst.BaseExpression]]] = {
        p.name.value: [] for p in (*fn.params.params, *fn.params.posonly_params,
                                   *fn.params.kwonly_params)}
    for n in nodes(fn.body):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    out.setdefault(t.target.value, []).append(n.value)
    everything = names_of(fn.body)[1]
    for name in everything:
        simple = len(out.get(name, ()))
        others = _bindings_of(fn.body, name) - simple
        out.setdefault(name, []).extend([None] * max(others, 0))
    return out


def _bindings_of(body: cst.CSTNode, name: str) -> int:
    """How many places in ``body`` bind ``name``."""
    count = 0
    for n in nodes(body):
        target = getattr(n, "target", None) if isinstance(
            n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)) \
            else getattr(n, "name", None) if isinstance(n, cst.AsName) else None
        if target is not None:
            count += sum(1 for m in nodes(target) if isinstance(m, cst.Name) and m.value == name
                         and not _attr_part(target, m))
    return count


def _attr_part(target: cst.CSTNode, name: cst.Name) -> bool:
    """``name`` is read in ``target`` (``a.x``, ``a[i]``), not bound by it."""
    return any(isinstance(n, (cst.Attribute, cst.Subscript)) and any(m is name for m in nodes(n))
               for n in nodes(target))


class Fetches:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: reading the
    fetches of a sess.run (state on the rule)."""

    def _fetch_names(self, fetch: cst.BaseExpression, call: cst.Call) -> Optional[List[str]]:
        if self._ref(fetch) is not None:
            return [self._ref(fetch)]
        if isinstance(fetch, (cst.List, cst.Tuple)):
            out: List[str] = []
            for el in fetch.elements:
                sub = self._fetch_names(el.value, call) if not isinstance(
                    el, cst.StarredElement) else None
                if sub is None:
                    self._bail(TS107.code, call, f"the fetches `{code_of(fetch)}` are not names, "
                               "lists or dicts of names")
                out.extend(sub)
            return out
        if isinstance(fetch, cst.Dict):
            out = []
            for el in fetch.elements:
                if not isinstance(el, cst.DictElement):
                    self._bail(TS107.code, call, "`**` in a fetch dict")
                sub = self._fetch_names(el.value, call)
                if sub is None:
                    self._bail(TS107.code, call, f"the fetches `{code_of(fetch)}` are not names, "
                               "lists or dicts of names")
                out.extend(sub)
            return out
        if isinstance(fetch, cst.Call) and self.tf_api_name(fetch.func) in INITIALIZERS:
            return None
        computed = self._computed_fetch(fetch, call)
        if computed is not None:
            return computed
        self._bail(TS107.code, call, f"the fetches `{code_of(fetch)}` are not names, lists or "
                   "dicts of names")
        return None

    def _of_values_only(self, fetch: cst.BaseExpression) -> bool:
        """A fetch built in the run from no graph value (``tf.argmax(a, 1)`` of a NumPy
        ``a`` sess.run returned): eager code computes it where the line runs."""
        return isinstance(fetch, (cst.Call, cst.BinaryOperation, cst.UnaryOperation)) \
            and not self._graph_reads(fetch)

    def _eager_values(self, fetch: cst.BaseExpression,
                      feed: Optional[cst.BaseExpression]) -> bool:
        """``fetch`` is names (or lists of names) of no graph value: locals of the
        function the run is in, computed from values when it runs; ``feed`` is None or
        a dict literal of values that compute nothing (it goes)."""
        if feed is not None:
            if not isinstance(feed, cst.Dict) or not all(
                    isinstance(el, cst.DictElement) and not any(
                        isinstance(n, (cst.Call, cst.Lambda, cst.NamedExpr))
                        for n in nodes(el.value))
                    for el in feed.elements):
                return False
        values = fetched(fetch)
        return all(isinstance(v, cst.Name) and self._computed_from_values(v.value, True, set())
                   for v in values)

    def _computed_from_values(self, name: str, tensor: bool, seen: Set[str]) -> bool:
        """The local ``name`` is bound once, to TF ops (``tensor``: the value itself is a
        TF call) of parameters, NumPy values a sess.run returned, module names that are
        no graph value (no variable: its value would be the one of that line), and
        other such locals."""
        if name in seen:
            return False
        seen.add(name)
        bound = self._locals_here.get(name)
        if bound is None:
            return False
        if not bound:
            return not tensor  # a parameter: a value the caller passed
        if len(bound) != 1 or bound[0] is None:
            return False
        value = bound[0]
        if tensor and not (isinstance(value, cst.Call) and self.tf_api_name(value.func)):
            return False
        runs = {id(n) for c in nodes(value) if isinstance(c, cst.Call) and self._is_run(c)
                for n in nodes(c)}
        graph = self._names_of_graph() | set(self._placeholders) | self._var_names
        for node, ref in loaded_refs(value, self.BASE):
            if id(node) in runs or ref.startswith(f"{self._alias}."):
                continue  # what a sess.run returned is NumPy; a TF function
            if ref in self._locals_here:
                if not self._computed_from_values(ref, False, seen):
                    return False
            elif ref in graph:
                return False
        return True

    def _is_run(self, call: cst.Call) -> bool:
        return isinstance(call.func, cst.Attribute) and call.func.attr.value == "run" \
            and self._ref(call.func.value) is not None \
            and self._ref(call.func.value) not in self._locals_here

    def _graph_reads(self, fetch: cst.BaseExpression) -> List[str]:
        """The graph values (placeholders, variables, graph code) ``fetch`` reads, in order."""
        graph = self._names_of_graph() | set(self._placeholders) | self._var_names
        return list(dict.fromkeys(ref for _, ref in loaded_refs(fetch, self.BASE)
                                  if ref in graph))

    def _computed_fetch(self, fetch: cst.BaseExpression, call: cst.Call) -> Optional[List[str]]:
        """``sess.run(tf.reduce_sum(tf.pow(pred - Y, 2)) / n, feed)``: an expression of
        graph values built in the fetch itself. TF1 added its ops to the graph there and
        ran them at once; the step function computes it from the same values (the Python
        names it reads are read when the function runs, where the sess.run was). The
        graph values it reads, in order; None when it reads none."""
        if not isinstance(fetch, (cst.Call, cst.BinaryOperation, cst.UnaryOperation,
                                  cst.Subscript, cst.Attribute)):
            return None
        read = self._graph_reads(fetch)
        if not read:
            return None
        random = any(isinstance(n, cst.Call)
                     and (self.tf_api_name(n.func) or "").startswith(RANDOM_PREFIXES)
                     for n in nodes(fetch))
        if random or self._changes_state(fetch) or self._makes_variable(fetch):
            self._bail(TS107.code, call, f"the fetch `{code_of(fetch)}` builds a "
                       "variable, a random op or an update: not converted")
        return read
