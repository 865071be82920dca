"""The feeds rule's graph code written after the session is opened.

Tutorials often build their evaluation ops after training::

    sess = tf.Session()
    ...                                   # the training loop
    is_correct = tf.equal(tf.argmax(model, 1), tf.argmax(Y, 1))
    accuracy = tf.reduce_mean(tf.cast(is_correct, tf.float32))
    print(sess.run(accuracy * 100, feed_dict={X: x_data, Y: y_data}))

TF1 adds those ops to the graph where the line runs and computes them only when a
later ``sess.run`` fetches them, from the fed values and the variables of that
moment. Such a statement is graph code like the statements before the session: it
moves into the step functions of the runs that fetch it. Only a plain assignment at
the session's own level qualifies, that computes from graph values and values fixed
before the session (so the step function reads what TF1 read), makes no variable,
random op or update, and binds names bound nowhere else in the block.
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.tf1_api import DENSE_PLACEHOLDERS
from tapeshift.migrate.engine.toolkit.dataflow import Stmt
from tapeshift.migrate.engine.toolkit.kinds import VARIABLE_MAKERS
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.feeds_graph import (ASSIGNS, GRAPH_ONLY, LAYER_PREFIXES,
                                                 RANDOM_PREFIXES, TRAIN_METHODS)


class GraphAfterSession:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: graph code
    after the statement that opens the session (state on the rule)."""

    def _graph_after(self, body: List[cst.CSTNode], start: int) -> None:
        """Record the statements after ``start`` that are graph code (added to
        ``self._graph`` and ``self._after``) and the placeholders made there (added
        to ``self._placeholders`` and ``self._after``)."""
        self._after: Set[int] = set()
        self._rebound: Set[str] = set()
        self._unfollowed: Dict[str, int] = {}
        if self.BASE is not None:  # (a class's methods: the class rule reads them)
            return
        bindings: Dict[str, List[int]] = {}
        for i, st in enumerate(self._stmts):
            for name in st.writes:
                bindings.setdefault(name, []).append(i)
        excluded: Set[str] = set()
        while True:  # (a name bound again by code that is not graph code: not moved)
            graph_code, placeholders = self._after_candidates(body, start, bindings, excluded)
            moved = graph_code | set(placeholders)
            wrong = {name for i in graph_code for name in self._stmts[i].writes
                     if any(j not in moved and j not in self._graph for j in bindings[name])}
            if not wrong:
                break
            excluded |= wrong
        # graph names bound again after the session by other code (a loop, a condition,
        # `+=`): from where a run may read that binding, which the codemod does not follow
        graph = self._names_of_graph() | set(self._placeholders) | excluded
        self._unfollowed: Dict[str, int] = {}
        for name in graph:
            other = [j for j in bindings.get(name, ()) if j >= start and j not in moved
                     and (name in excluded or _rebuilds(body[j], name))]
            if other:
                self._unfollowed[name] = min(other)
        for i in sorted(graph_code):
            self._graph_statement(i, body[i])
            self._after.add(i)
            self._rebound |= {name for name in self._stmts[i].writes if len(bindings[name]) > 1}
        for i, (name, call) in placeholders.items():
            self._placeholders[name] = call
            self._after.add(i)

    def _after_candidates(self, body: List[cst.CSTNode], start: int,
                          bindings: Dict[str, List[int]], excluded: Set[str]):
        """(graph code, {index: (name, call)} of placeholders) after ``start``: plain
        assignments at the session's level, not binding an ``excluded`` name."""
        graph = self._names_of_graph() | set(self._placeholders) | self._var_names
        later: Set[str] = set()  # names (re)bound from the session on
        for st in self._stmts[start:]:
            later |= st.writes
        graph_code: Set[int] = set()
        placeholders: Dict[int, Tuple[str, cst.Call]] = {}
        for i in range(start + 1, len(body)):
            st = self._stmts[i]
            value, target = self._assignment(body[i])
            if value is None or not st.writes or st.writes & excluded:
                continue
            read_before = any(st.writes & s.reads for s in self._stmts[:i])
            if isinstance(value, cst.Call) and self.tf_api_name(value.func) in DENSE_PLACEHOLDERS:
                # fed in the runs after it (`noise_input` of a generator tried on a grid)
                if target is not None and len(bindings[target]) == 1 and not read_before \
                        and not st.reads & later:
                    placeholders[i] = (target, value)
                    graph.add(target)
                continue
            if not st.reads & graph or isinstance(value, (cst.Dict, cst.List, cst.Tuple, cst.Set)):
                continue  # (a feed dict or a list of fetches is no graph code)
            if any(len(bindings[name]) != 1 for name in st.writes):
                # bound again (`decoder` rebuilt on a fed code): each run reads the
                # binding before it (``_slice_limit``); graph code binds it each time
                if not all(j in self._graph or j > start for name in st.writes
                           for j in bindings[name]):
                    continue
            elif read_before:
                continue  # read before it is bound
            if st.reads & later - graph or not self._pure_graph(value):
                continue  # reads what changes after the session, or runs something
            graph_code.add(i)
            graph |= st.writes
        return graph_code, placeholders

    def _pure_graph(self, value: cst.BaseExpression) -> bool:
        """Only TensorFlow ops that compute: no variable, layer, random op, update,
        graph-only op, nor a call of anything but TensorFlow."""
        for n in nodes(value):
            if isinstance(n, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr)):
                return False
            if not isinstance(n, cst.Call):
                continue
            if isinstance(n.func, cst.Attribute) and n.func.attr.value in (
                    *ASSIGNS, *TRAIN_METHODS, "run", "eval"):
                return False
            name = self.tf_api_name(n.func)
            if name is None or name in VARIABLE_MAKERS or name in ASSIGNS \
                    or name.startswith((*LAYER_PREFIXES, *RANDOM_PREFIXES)) \
                    or name in GRAPH_ONLY or name.split(".")[0] in GRAPH_ONLY:
                return False
        return True

    def _graph_order(self, end: int) -> List[Stmt]:
        """The statements a step function may be sliced from: those before the
        session, then the graph code after it."""
        return [*self._stmts[:end], *(self._stmts[i] for i in sorted(self._after))]

    def _without_after(self, body: List[cst.CSTNode], start: int):
        """(index, statement) of the statements from ``start`` on, without the graph
        code after the session (it moved into the step functions); the blank lines and
        comments above it stay, on the next statement kept."""
        out = []
        carried: List[cst.EmptyLine] = []
        for i in range(start, len(body)):
            if i in self._after:
                carried += body[i].leading_lines
                continue
            stmt = body[i]
            if carried:  # (their blank lines stand for its own)
                stmt = stmt.with_changes(leading_lines=[
                    *carried, *(ln for ln in stmt.leading_lines if ln.comment is not None)])
                carried = []
            out.append((i, stmt))
        return out


def _rebuilds(stmt: cst.CSTNode, name: str) -> bool:
    """``stmt`` binds ``name`` to something computed (``out = tf.tanh(out)``,
    ``out += 10.0``), not to what a session run returns (``loss = sess.run(loss)``)."""
    for n in nodes(stmt):
        if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name) \
                and n.target.value == name:
            return True
        if isinstance(n, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets):
            value = n.value
            if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                    and value.func.attr.value in ("run", "eval")):
                return True
    return False
