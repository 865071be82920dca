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

from typing import List, Set

import libcst as cst

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
        ``self._graph`` and ``self._after``)."""
        self._after: Set[int] = set()
        if self.BASE is not None:  # (a class's methods: the class rule reads them)
            return
        graph = self._names_of_graph() | set(self._placeholders) | self._var_names
        written: dict = {}
        for st in self._stmts:
            for name in st.writes:
                written[name] = written.get(name, 0) + 1
        later: Set[str] = set()  # names (re)bound from the session on
        for st in self._stmts[start:]:
            later |= st.writes
        for i in range(start + 1, len(body)):
            st = self._stmts[i]
            value, target = self._assignment(body[i])
            if value is None or not st.writes or not st.reads & graph:
                continue
            if any(written[name] != 1 for name in st.writes) \
                    or any(st.writes & s.reads for s in self._stmts[:i]):
                continue  # bound elsewhere too, or read before it is bound
            if st.reads & later - graph or not self._pure_graph(value):
                continue  # reads what changes after the session, or runs something
            self._graph_statement(i, body[i])
            self._after.add(i)
            graph |= st.writes

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
            if carried:
                stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
                carried = []
            out.append((i, stmt))
        return out
